/**
 * A small Bitcoin Core JSON-RPC stub over real HTTP (node:http on 127.0.0.1, ephemeral port) for the unit
 * tests of the Bitcoin-family client and adapter. It speaks Core's wire format: JSON-RPC 1.0 answers
 * `{"result":..,"error":null,"id":..}`, RPC errors with HTTP 500 (404 for -32601 "Method not found") and the
 * error in the body, batches (a JSON array) answered with HTTP 200 and an array, HTTP Basic authentication
 * refused with a bare 401. What each method answers is the test's `handle` (usually recorded fixtures).
 *
 * The full fake node that follows a chain is test/support/fake-utxo-node.ts; this one only answers.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the stub answers to one call. */
export type StubReply =
  /** Sent as JSON. */
  | { result: unknown }
  /** The result's JSON text as is (a recorded file keeps the node's exact number spelling). */
  | { resultText: string }
  | { error: { code: number; message: string } }
  /** A raw HTTP answer (a gateway error page, garbage); for a batch, the whole batch gets it. */
  | { status: number; body: string }
  /** Never answers (the client's timeout fires). */
  | { hang: true }
  /** Closes the connection without an answer. */
  | { drop: true };

export interface StubCall {
  method: string;
  params: unknown[];
  authorization?: string;
  /** Part of a batch request. */
  batched: boolean;
  /** The request's `jsonrpc` member. */
  jsonrpc: unknown;
}

export interface UtxoRpcStub {
  /** `http://127.0.0.1:<port>/`. */
  url: string;
  calls: StubCall[];
  count(method: string): number;
  /** The answering function; replace it to make the node recover or start failing. */
  handle: (method: string, params: unknown[]) => StubReply | Promise<StubReply>;
  /** Basic credentials the stub accepts (`user:password`); undefined accepts anything. */
  credentials: string | undefined;
  close(): Promise<void>;
}

interface JsonRpcRequest {
  jsonrpc?: unknown;
  id?: unknown;
  method?: unknown;
  params?: unknown;
}

/** `{"result":..,"error":null,"id":..}` or `{"result":null,"error":{..},"id":..}` as Core prints them. */
function envelope(id: unknown, reply: StubReply): string {
  if ('resultText' in reply) return `{"result":${reply.resultText},"error":null,"id":${JSON.stringify(id ?? null)}}`;
  if ('error' in reply) return JSON.stringify({ result: null, error: reply.error, id: id ?? null });
  return JSON.stringify({ result: 'result' in reply ? reply.result : null, error: null, id: id ?? null });
}

export async function startUtxoRpcStub(handle: UtxoRpcStub['handle'], credentials?: string): Promise<UtxoRpcStub> {
  const stub: UtxoRpcStub = {
    url: '',
    calls: [],
    count: (method) => stub.calls.filter((c) => c.method === method).length,
    handle,
    credentials,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };

  const answer = async (req: IncomingMessage, res: ServerResponse, body: string): Promise<void> => {
    let parsed: JsonRpcRequest | JsonRpcRequest[];
    try {
      parsed = JSON.parse(body) as JsonRpcRequest | JsonRpcRequest[];
    } catch {
      res.writeHead(500, { 'content-type': 'application/json' }).end(envelope(null, { error: { code: -32700, message: 'Parse error' } }));
      return;
    }
    const batched = Array.isArray(parsed);
    const requests: JsonRpcRequest[] = Array.isArray(parsed) ? parsed : [parsed];
    const calls = requests.map((r) => ({
      method: String(r.method),
      params: Array.isArray(r.params) ? (r.params as unknown[]) : [],
      authorization: req.headers.authorization,
      batched,
      jsonrpc: r.jsonrpc,
    }));
    // Recorded before the credentials are checked, so a test sees the refused attempts too.
    stub.calls.push(...calls);
    if (stub.credentials !== undefined && req.headers.authorization !== `Basic ${Buffer.from(stub.credentials).toString('base64')}`) {
      res.writeHead(401, { 'www-authenticate': 'Basic realm="jsonrpc"' }).end();
      return;
    }
    const replies: StubReply[] = [];
    for (const c of calls) replies.push(await stub.handle(c.method, c.params));
    const raw = replies.find((r): r is Extract<StubReply, { status: number }> => 'status' in r);
    if (replies.some((r) => 'hang' in r)) return; // answered never; closed with the server
    if (replies.some((r) => 'drop' in r)) {
      req.socket.destroy();
      return;
    }
    if (raw) {
      res.writeHead(raw.status, { 'content-type': 'text/html' }).end(raw.body);
      return;
    }
    if (batched) {
      const text = `[${requests.map((r, i) => envelope(r.id, replies[i] as StubReply)).join(',')}]`;
      res.writeHead(200, { 'content-type': 'application/json' }).end(text);
      return;
    }
    const reply = replies[0] as StubReply;
    const status = 'error' in reply ? (reply.error.code === -32601 ? 404 : 500) : 200;
    res.writeHead(status, { 'content-type': 'application/json' }).end(envelope(requests[0]?.id, reply));
  };

  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      body += chunk;
    });
    req.on('end', () => {
      answer(req, res, body).catch((error: unknown) => {
        res.writeHead(500, { 'content-type': 'text/plain' }).end(`stub failure: ${String(error)}`);
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  stub.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  return stub;
}
