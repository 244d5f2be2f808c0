/**
 * A fault-injecting JSON-RPC proxy in front of an EVM node (test/support/evm-node.ts), standing in for a
 * second node of the chain: herald is given [proxy, node] as rpcUrls, and the proxy is told to misbehave
 * the ways real nodes and gateways do, in their real formats:
 *
 * - lag(n): a node n blocks behind: eth_blockNumber and "latest" answer the head minus n, and a block above
 *   that is not there yet (null, as geth answers a future block);
 * - fail('500'): a gateway in trouble (HTTP 500 with a JSON-RPC error body), fail('reset'): the connection
 *   reset without an answer;
 * - rateLimit(seconds): HTTP 429 with Retry-After, as hosted providers answer when over quota;
 * - syncing(): eth_syncing answers geth's progress object instead of false (blocks still served);
 * - heal(): a faithful proxy again.
 *
 * Every request (single or batch) is forwarded as is when no fault applies; `requests` counts them.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export type Fault =
  | { kind: 'lag'; blocks: number }
  | { kind: 'fail'; how: '500' | 'reset' }
  | { kind: 'rate-limit'; retryAfterSeconds: number }
  | { kind: 'syncing' };

export interface FaultProxy {
  /** http://127.0.0.1:PORT/ */
  url: string;
  readonly fault: Fault | undefined;
  /** Requests received (a batch counts once), by JSON-RPC method (a batch: each of its methods). */
  readonly requests: Map<string, number>;
  lag(blocks: number): void;
  fail(how: '500' | 'reset'): void;
  rateLimit(retryAfterSeconds: number): void;
  syncing(): void;
  heal(): void;
  close(): Promise<void>;
}

interface RpcRequest {
  jsonrpc?: string;
  id?: unknown;
  method?: string;
  params?: unknown[];
}

export async function startFaultProxy(target: string): Promise<FaultProxy> {
  let fault: Fault | undefined;
  const requests = new Map<string, number>();
  const sockets = new Set<Socket>();

  async function forward(body: unknown): Promise<unknown> {
    const response = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return await response.json();
  }

  const hex = (n: number) => `0x${n.toString(16)}`;

  /** One call under a lag of `blocks`: heads moved back, blocks above the lagging head not there yet. */
  async function lagged(call: RpcRequest, blocks: number): Promise<unknown> {
    const reply = (result: unknown) => ({ jsonrpc: '2.0', id: call.id, result });
    const realHead = Number.parseInt(((await forward({ jsonrpc: '2.0', id: 0, method: 'eth_blockNumber' })) as { result: string }).result, 16);
    const head = Math.max(0, realHead - blocks);
    if (call.method === 'eth_blockNumber') return reply(hex(head));
    if (call.method === 'eth_getBlockByNumber' || call.method === 'eth_getBlockReceipts' || call.method === 'debug_traceBlockByNumber') {
      const tag = call.params?.[0];
      const height = tag === 'latest' || tag === 'safe' || tag === 'finalized' ? head : typeof tag === 'string' ? Number.parseInt(tag, 16) : Number.NaN;
      if (!Number.isNaN(height) && height > head) return reply(null);
      return await forward({ ...call, params: [hex(height), ...(call.params ?? []).slice(1)] });
    }
    return await forward(call);
  }

  async function answer(call: RpcRequest): Promise<unknown> {
    requests.set(call.method ?? '?', (requests.get(call.method ?? '?') ?? 0) + 1);
    if (fault?.kind === 'syncing' && call.method === 'eth_syncing') {
      const head = Number.parseInt(((await forward({ jsonrpc: '2.0', id: 0, method: 'eth_blockNumber' })) as { result: string }).result, 16);
      // geth's SyncingResult: hex quantities; a node that has headers far beyond its blocks.
      return { jsonrpc: '2.0', id: call.id, result: { startingBlock: '0x0', currentBlock: hex(head), highestBlock: hex(head + 1000) } };
    }
    if (fault?.kind === 'lag') return await lagged(call, fault.blocks);
    return await forward(call);
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const current = fault;
    if (current?.kind === 'fail' && current.how === 'reset') {
      req.socket.destroy();
      return;
    }
    const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(body));
    };
    if (current?.kind === 'fail') return send(500, { jsonrpc: '2.0', id: null, error: { code: -32603, message: 'internal error: upstream unavailable' } });
    if (current?.kind === 'rate-limit') {
      // What hosted providers send: 429, Retry-After in seconds, a JSON-RPC error body.
      return send(
        429,
        { jsonrpc: '2.0', id: null, error: { code: -32005, message: 'daily request count exceeded, request rate limited' } },
        { 'retry-after': String(current.retryAfterSeconds) },
      );
    }
    let parsed: RpcRequest | RpcRequest[];
    try {
      parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      return send(400, { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'parse error' } });
    }
    try {
      send(200, Array.isArray(parsed) ? await Promise.all(parsed.map(answer)) : await answer(parsed));
    } catch (error) {
      send(502, { jsonrpc: '2.0', id: null, error: { code: -32603, message: `proxy: ${(error as Error).message}` } });
    }
  }

  const server: Server = createServer((req, res) => void handle(req, res));
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    get fault() {
      return fault;
    },
    requests,
    lag: (blocks) => {
      fault = { kind: 'lag', blocks };
    },
    fail: (how) => {
      fault = { kind: 'fail', how };
    },
    rateLimit: (retryAfterSeconds) => {
      fault = { kind: 'rate-limit', retryAfterSeconds };
    },
    syncing: () => {
      fault = { kind: 'syncing' };
    },
    heal: () => {
      fault = undefined;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
