/**
 * A real local EVM node for tests, the demo and benchmarks: an in-process EDR provider (the engine inside
 * Hardhat 3) behind an HTTP JSON-RPC server and a WebSocket server on the same loopback port.
 *
 * - HTTP: POST single or batch JSON-RPC requests. `eth_subscribe` is refused over HTTP (as geth does).
 * - WS: plain requests (single or batch), plus `eth_subscribe` (newHeads, logs, ...) and `eth_unsubscribe`;
 *   EDR's subscription events are routed to the connection that created the subscription as
 *   `{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"0x1","result":...}}`.
 *   For 'logs', EDR's one array per block (empty ones included) becomes one notification per log, as geth does.
 * - down(): HTTP answers 503, open WS connections are dropped and new ones refused, until up().
 *   request() (straight to the provider) keeps working, so a test can mine while the node is "down".
 *
 * EDR has no eth_getBlockReceipts, debug_traceBlockByNumber or trace_block (production nodes do);
 * debug_traceTransaction with { tracer: 'callTracer' } gives geth's nested call frames.
 * Only one EdrContext may exist per process: it is created lazily once (kept on globalThis, so it
 * survives module re-evaluation) and every node started in the process gets its own provider from it.
 */
import { pbkdf2Sync } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo, Socket } from 'node:net';
import type * as Edr from '@nomicfoundation/edr';
import { type Address, type Hex, hexToBytes, toHex } from 'viem';
import { HDKey, privateKeyToAddress } from 'viem/accounts';
import { WebSocket, WebSocketServer } from 'ws';

// EDR is a CommonJS native addon; require() keeps its named exports reliable under any loader.
const edr = createRequire(import.meta.url)('@nomicfoundation/edr') as typeof Edr;

/** Hardhat's well-known test mnemonic: account 0 is 0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266. */
export const TEST_MNEMONIC = 'test test test test test test test test test test test junk';
/** Default balance of each prefunded account: 10,000 ETH. */
export const DEFAULT_BALANCE = 10_000n * 10n ** 18n;
/** Coinbase of mined blocks (Hardhat's default), so `miner` is not the zero address. */
export const COINBASE: Address = '0xC014BA5EC014ba5ec014Ba5EC014ba5Ec014bA5E';

export interface EvmAccount {
  address: Address;
  privateKey: Hex;
}

export interface EvmNodeOptions {
  /** Default 5 (goerli-like). */
  chainId?: number;
  /** Mine a block for every transaction. Default true. */
  automine?: boolean;
  /** Number of prefunded accounts (from TEST_MNEMONIC). Default 10. */
  accounts?: number;
  /** Balance of each prefunded account in wei. Default 10,000 ETH. */
  balance?: bigint;
  /** Start "down" (as after down()). Default false. */
  failRequests?: boolean;
  /** EDR hardfork name, e.g. 'cancun', 'prague'. Default: EDR's latest. */
  hardfork?: string;
}

/** What tests and benchmarks drive on any real EVM test node: EDR (here) or Anvil (anvil-node.ts). */
export interface EvmRpcNode {
  /** http://127.0.0.1:PORT */
  url: string;
  /** ws://127.0.0.1:PORT (same port) */
  wsUrl: string;
  chainId: number;
  accounts: EvmAccount[];
  /** A JSON-RPC call straight to the provider (not through HTTP, works while down). Throws JsonRpcError. */
  request<T = unknown>(method: string, params?: unknown[]): Promise<T>;
  /** Mines `blocks` blocks with evm_mine (each takes pending transactions and emits newHeads); returns the new head number.
   * With `timestamp`, block i gets timestamp + i (useful to make a re-mined branch differ from the reverted one). */
  mine(blocks?: number, options?: { timestamp?: number }): Promise<number>;
  /** evm_snapshot: an id for revert(). */
  snapshot(): Promise<string>;
  /** evm_revert to a snapshot (which is consumed, as in Hardhat). Throws if the id is unknown. */
  revert(id: string): Promise<void>;
  setAutomine(on: boolean): Promise<void>;
  close(): Promise<void>;
}

/** The in-process EDR node: an EvmRpcNode that can also play dead. */
export interface EvmNode extends EvmRpcNode {
  /** Simulates the node being down: HTTP answers 503, WS connections are dropped and refused. */
  down(): void;
  up(): void;
  readonly isDown: boolean;
  /** Number of open WebSocket connections. */
  readonly wsConnections: number;
}

export class JsonRpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'JsonRpcError';
  }
}

let mnemonicKey: HDKey | undefined;
const derivedAccounts: EvmAccount[] = [];

/** The first `count` accounts of TEST_MNEMONIC (m/44'/60'/0'/0/i), the same keys Hardhat and Anvil use. */
export function testAccounts(count = 10): EvmAccount[] {
  if (!mnemonicKey) {
    // BIP-39 seed: PBKDF2-HMAC-SHA512(mnemonic, "mnemonic" + passphrase, 2048 rounds); node:crypto is fast.
    mnemonicKey = HDKey.fromMasterSeed(pbkdf2Sync(TEST_MNEMONIC, 'mnemonic', 2048, 64, 'sha512'));
  }
  for (let i = derivedAccounts.length; i < count; i++) {
    const key = mnemonicKey.derive(`m/44'/60'/0'/0/${i}`).privateKey;
    if (!key) throw new Error('HD derivation gave no private key');
    const privateKey = toHex(key);
    derivedAccounts.push({ address: privateKeyToAddress(privateKey), privateKey });
  }
  return derivedAccounts.slice(0, count);
}

interface ContextHolder {
  context?: Promise<Edr.EdrContext>;
}
const globals = globalThis as Record<symbol, ContextHolder | undefined>;
const holderKey = Symbol.for('herald.test.edrContext');
const holder: ContextHolder = globals[holderKey] ?? {};
globals[holderKey] = holder;

function edrContext(): Promise<Edr.EdrContext> {
  holder.context ??= (async () => {
    const context = new edr.EdrContext();
    await context.registerProviderFactory(edr.L1_CHAIN_TYPE, edr.l1ProviderFactory());
    return context;
  })();
  return holder.context;
}

type RpcId = string | number | null;
interface RpcRequest {
  jsonrpc?: string;
  id?: RpcId;
  method?: unknown;
  params?: unknown;
}

function errorResponse(id: RpcId, code: number, message: string): string {
  return JSON.stringify({ jsonrpc: '2.0', id, error: { code, message } });
}

export async function startEvmNode(options: EvmNodeOptions = {}): Promise<EvmNode> {
  const chainId = options.chainId ?? 5;
  const accounts = testAccounts(options.accounts ?? 10);
  const balance = options.balance ?? DEFAULT_BALANCE;
  const hardfork = options.hardfork ?? edr.l1HardforkToString(edr.l1HardforkLatest());

  // Subscription routing: EDR filter id -> the WS connection that subscribed.
  const subscribers = new Map<bigint, WebSocket>();
  // Events that arrive while an eth_subscribe is in flight, before its id is known; flushed or dropped after.
  let subscribesInFlight = 0;
  let earlyEvents: Edr.SubscriptionEvent[] = [];
  // 'logs' subscriptions: EDR emits one array per block (empty ones too); geth sends one notification per log.
  const logSubscriptions = new Set<bigint>();
  const deliver = (event: Edr.SubscriptionEvent): boolean => {
    const ws = subscribers.get(event.filterId);
    if (!ws) return false;
    if (ws.readyState !== WebSocket.OPEN) return true;
    const subscription = `0x${event.filterId.toString(16)}`;
    const results = logSubscriptions.has(event.filterId) && Array.isArray(event.result) ? event.result : [event.result];
    for (const result of results) ws.send(JSON.stringify({ jsonrpc: '2.0', method: 'eth_subscription', params: { subscription, result } }));
    return true;
  };

  const context = await edrContext();
  const genesisState: Edr.AccountOverride[] = [
    ...edr.l1GenesisState(edr.l1HardforkFromString(hardfork)),
    ...accounts.map((a) => ({ address: hexToBytes(a.address), balance })),
  ];
  const blockGasLimit = 60_000_000n;
  const provider = await context.createProvider(
    edr.L1_CHAIN_TYPE,
    {
      allowBlocksWithSameTimestamp: true,
      allowUnlimitedContractSize: false,
      bailOnCallFailure: true, // a reverting eth_call is a JSON-RPC error (code -32000, data.data = revert bytes), not a '0x' result
      bailOnTransactionFailure: false, // a reverting transaction is mined with status 0x0, as on a real node
      chainId: BigInt(chainId),
      coinbase: hexToBytes(COINBASE),
      defaultTransactionGasLimit: 16_000_000n, // under Osaka's EIP-7825 per-transaction cap (2^24)
      genesisState,
      hardfork,
      initialBaseFeePerGas: 1_000_000_000n,
      minGasPrice: 0n,
      mining: { autoMine: options.automine ?? true, blockGasLimit, memPool: { order: edr.MineOrdering.Priority } },
      network: { genesisBlockGasLimit: blockGasLimit },
      networkId: BigInt(chainId),
      observability: {},
      ownedAccounts: accounts.map((a) => a.privateKey),
      precompileOverrides: [],
    },
    { enable: false, decodeConsoleLogInputsCallback: () => [], printLineCallback: () => {} },
    {
      subscriptionCallback: (event) => {
        if (!deliver(event) && subscribesInFlight > 0) earlyEvents.push(event);
      },
    },
    new edr.ContractDecoder(),
  );

  /** EDR answers `{"result":...}` or `{"error":...}` (as a string or an object), without jsonrpc and id. */
  const callRaw = async (body: string): Promise<string> => {
    const response = await provider.handleRequest(body);
    const data: unknown = response.data;
    return typeof data === 'string' ? data : JSON.stringify(data);
  };

  const request = async <T = unknown>(method: string, params: unknown[] = []): Promise<T> => {
    const parsed = JSON.parse(await callRaw(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }))) as {
      result?: T;
      error?: { code: number; message: string; data?: unknown };
    };
    if (parsed.error) throw new JsonRpcError(parsed.error.code, parsed.error.message, parsed.error.data);
    return parsed.result as T;
  };

  /** One request object in, one serialized response out (undefined for a notification, i.e. no id). */
  const handleOne = async (req: unknown, ws: WebSocket | undefined): Promise<string | undefined> => {
    if (typeof req !== 'object' || req === null || Array.isArray(req)) return errorResponse(null, -32600, 'Invalid request');
    const { id = null, method, params = [] } = req as RpcRequest;
    const isNotification = !('id' in req);
    if (typeof method !== 'string') return errorResponse(id, -32600, 'Invalid request');
    if (!Array.isArray(params)) return errorResponse(id, -32602, 'Invalid params: expected an array');
    let data: string;
    if (method === 'eth_subscribe') {
      if (!ws) return errorResponse(id, -32601, 'notifications not supported over HTTP: use the WebSocket endpoint');
      subscribesInFlight++;
      try {
        data = await callRaw(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
        const result = (JSON.parse(data) as { result?: unknown }).result;
        if (typeof result === 'string') {
          const filterId = BigInt(result);
          if (ws.readyState === WebSocket.OPEN) {
            subscribers.set(filterId, ws);
            if (params[0] === 'logs') logSubscriptions.add(filterId);
          } else void request('eth_unsubscribe', [result]).catch(() => {});
        }
      } finally {
        subscribesInFlight--;
        const pending = earlyEvents;
        earlyEvents = [];
        for (const event of pending) if (!deliver(event) && subscribesInFlight > 0) earlyEvents.push(event);
      }
    } else {
      data = await callRaw(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
      if (method === 'eth_unsubscribe' && typeof params[0] === 'string' && /^0x[0-9a-f]+$/i.test(params[0])) {
        const filterId = BigInt(params[0]);
        if (subscribers.get(filterId) === ws) {
          subscribers.delete(filterId);
          logSubscriptions.delete(filterId);
        }
      }
    }
    if (isNotification) return undefined;
    // data is `{"result":...}` or `{"error":...}`: splice jsonrpc and id in without re-serialising the result.
    return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},${data.slice(1)}`;
  };

  /** A JSON-RPC message (single or batch) in, the response text out (undefined when nothing to answer). */
  const handleMessage = async (text: string, ws: WebSocket | undefined): Promise<string | undefined> => {
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      return errorResponse(null, -32700, 'Parse error');
    }
    if (!Array.isArray(message)) return handleOne(message, ws);
    if (message.length === 0) return errorResponse(null, -32600, 'Invalid request: empty batch');
    const answers: string[] = [];
    for (const req of message) {
      const answer = await handleOne(req, ws);
      if (answer !== undefined) answers.push(answer);
    }
    return answers.length > 0 ? `[${answers.join(',')}]` : undefined;
  };

  let isDown = options.failRequests ?? false;

  const onHttp = (req: IncomingMessage, res: ServerResponse): void => {
    if (isDown) {
      res.writeHead(503, { 'content-type': 'text/plain' }).end('node is down');
      req.resume();
      return;
    }
    if (req.method !== 'POST') {
      res.writeHead(405, { allow: 'POST', 'content-type': 'text/plain' }).end('JSON-RPC over POST only');
      req.resume();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      handleMessage(Buffer.concat(chunks).toString('utf8'), undefined).then(
        (answer) => {
          if (answer === undefined) res.writeHead(204).end();
          else res.writeHead(200, { 'content-type': 'application/json' }).end(answer);
        },
        (error: unknown) => {
          res.writeHead(500, { 'content-type': 'text/plain' }).end(String(error));
        },
      );
    });
  };

  const server: Server = createServer({ keepAliveTimeout: 60_000 }, onHttp);
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    if (isDown) {
      socket.end('HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
  });
  wss.on('connection', (ws: WebSocket) => {
    ws.on('message', (raw, isBinary) => {
      if (isBinary) return;
      const text = raw.toString();
      handleMessage(text, ws).then(
        (answer) => {
          if (answer !== undefined && ws.readyState === WebSocket.OPEN) ws.send(answer);
        },
        () => ws.terminate(),
      );
    });
    ws.on('close', () => {
      for (const [filterId, owner] of subscribers) {
        if (owner !== ws) continue;
        subscribers.delete(filterId);
        logSubscriptions.delete(filterId);
        void request('eth_unsubscribe', [`0x${filterId.toString(16)}`]).catch(() => {});
      }
    });
    ws.on('error', () => {});
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;

  const dropWebSockets = (): void => {
    for (const ws of wss.clients) ws.terminate();
  };

  return {
    url: `http://127.0.0.1:${port}`,
    wsUrl: `ws://127.0.0.1:${port}`,
    chainId,
    accounts,
    request,
    async mine(blocks = 1, mineOptions = {}) {
      for (let i = 0; i < blocks; i++) {
        await request('evm_mine', mineOptions.timestamp === undefined ? [] : [mineOptions.timestamp + i]);
      }
      return Number(await request<Hex>('eth_blockNumber'));
    },
    snapshot: () => request<string>('evm_snapshot'),
    async revert(id) {
      if (!(await request<boolean>('evm_revert', [id]))) throw new Error(`evm_revert: unknown snapshot ${id}`);
    },
    async setAutomine(on) {
      await request('evm_setAutomine', [on]);
    },
    down() {
      isDown = true;
      dropWebSockets();
    },
    up() {
      isDown = false;
    },
    get isDown() {
      return isDown;
    },
    get wsConnections() {
      return wss.clients.size;
    },
    async close() {
      dropWebSockets();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      subscribers.clear();
    },
  };
}
