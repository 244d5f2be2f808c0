/**
 * JSON-RPC client for one EVM node over HTTP. It does little on purpose: one request (or one batch), a timeout, at most
 * one quick retry when the connection itself failed, and errors that say which method failed at which
 * node and what the node answered. Retrying with backoff is the caller's job (the follower), so a node
 * that is down surfaces at once instead of hanging inside this module.
 *
 * Requests go through the shared node transport (../node-http.ts: undici's request() on a keep-alive pool
 * of this client's own), not through viem's HTTP transport: catching up, the adapter makes thousands of
 * requests per second (a block's receipts and traces one by one on nodes without the block-level
 * methods), and viem's transport (WHATWG fetch, web streams, an AbortSignal and a Headers object per
 * request) cost about four times the CPU per request (bench/evm-ingest.ts). Every answer is the node's
 * JSON as it is: the normaliser wants it raw.
 */
import { clientFailure, createNodeHttp, nodeEndpoint, rateLimited } from '../node-http.ts';
import { NodeRpcError } from '../rpc-error.ts';

/** Hex data as JSON-RPC prints it. */
export type Hex = `0x${string}`;

export const DEFAULT_TIMEOUT_MS = 10_000;
/** callTracer output of a busy mainnet block is tens of MiB; the timeout bounds a runaway body. */
const MAX_RESPONSE_BYTES = 512 * 1024 * 1024;

/**
 * - unsupported: the node does not serve the method (-32601, -32004, "method ... not found/not supported").
 * - reverted: eth_call ran and failed (revert, invalid opcode, out of gas): an answer, not a node fault.
 * - rpc: any other JSON-RPC error the node answered with.
 * - http: a non-2xx response without a JSON-RPC error, or a body that is not JSON-RPC.
 * - timeout / network: no answer in time / no connection.
 */
export type EvmRpcErrorKind = 'unsupported' | 'reverted' | 'rpc' | 'http' | 'timeout' | 'network';

export class EvmRpcError extends NodeRpcError<EvmRpcErrorKind> {
  override name = 'EvmRpcError';
  declare readonly code?: number;
}

/** Codes of "this node does not serve the method": JSON-RPC method not found, EIP-1474 method not supported. */
const UNSUPPORTED_CODES = new Set([-32601, -32004]);
/**
 * Messages of nodes that answer an unserved method with another code. Only with a word about the method:
 * geth's "historical state ... is not available" (pruned state) must not disable tracing for good.
 */
const UNSUPPORTED_MESSAGE =
  /method not found|unsupported method|(method|namespace|api)\b.*\b(not found|not supported|does not exist|is not available|not enabled|not allowed)/i;
/**
 * eth_call failures that are the contract's doing, as geth, erigon, nethermind, besu and EDR word them (code 3:
 * revert with data). "execution aborted" is geth's RPC EVM timeout: a contract that burns it always will.
 */
const REVERT_MESSAGE = /revert|invalid opcode|opcode 0x|out of gas|stack underflow|stack overflow|invalid jump|bad instruction|VM Exception|execution aborted/i;

/** A JSON-RPC error object as nodes send it. */
interface RpcErrorObject {
  code: number;
  message: string;
}

const isRpcErrorObject = (value: unknown): value is RpcErrorObject =>
  typeof (value as RpcErrorObject | null)?.code === 'number' && typeof (value as RpcErrorObject | null)?.message === 'string';

/**
 * The node answered `error` (status: the HTTP status when not 2xx). A 5xx is a gateway or node in trouble
 * whatever its body says: thrown as such, never taken as "unsupported" or "reverted".
 */
export function classifyRpcError(method: string, url: string, error: RpcErrorObject, status?: number): EvmRpcError {
  const message = error.message.slice(0, 500);
  const serverFault = status !== undefined && status >= 500;
  let kind: EvmRpcErrorKind = 'rpc';
  // Reverts first: a revert reason is the contract's text and may say anything, "method not found" included.
  if (!serverFault && method === 'eth_call' && (error.code === 3 || REVERT_MESSAGE.test(message))) kind = 'reverted';
  else if (!serverFault && (UNSUPPORTED_CODES.has(error.code) || UNSUPPORTED_MESSAGE.test(message))) kind = 'unsupported';
  return new EvmRpcError(method, url, kind, message, error.code, status);
}

export interface EvmRpcClientOptions {
  url: string;
  /** Per request; default 10 s. */
  timeoutMs?: number;
}

export interface RpcCall {
  method: string;
  params: readonly unknown[];
}

/** One entry of a batch answer: the result, or the error the node answered for that call. */
export type BatchAnswer<T = unknown> = { ok: true; result: T } | { ok: false; error: EvmRpcError };

export interface EvmRpcClient {
  /** The node URL without credentials (for logs and errors). */
  readonly url: string;
  /** Any method, raw JSON result. */
  request<T>(method: string, params: readonly unknown[]): Promise<T>;
  /**
   * Several calls in one HTTP request (a JSON-RPC batch), answers in the order of `calls`. A call the node
   * answered with an error is `{ ok: false }`; a failure of the request itself (timeout, a node or gateway
   * that refuses batches, garbage) is thrown.
   */
  batch<T>(calls: readonly RpcCall[]): Promise<BatchAnswer<T>[]>;
  blockNumber(): Promise<number>;
  /** eth_getBalance at `height`. */
  balance(address: string, height: number): Promise<bigint>;
  /**
   * eth_call at `height` (latest when absent) with at most `gas`; '0x' when the call returned nothing; throws
   * kind 'reverted' when the call failed.
   */
  call(request: { to: string; data: Hex; height?: number; gas?: bigint }): Promise<Hex>;
  /** Closes the idle connections; requests in flight finish. */
  close(): Promise<void>;
}

export function createEvmRpcClient(options: EvmRpcClientOptions): EvmRpcClient {
  const { endpoint, redactedUrl: url, authorization } = nodeEndpoint(options.url);
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const http = createNodeHttp({ maxResponseBytes: MAX_RESPONSE_BYTES });
  let nextId = 0;

  /**
   * One POST; the node's JSON-RPC result, or an EvmRpcError. One quick retry when the connection failed (a
   * reset keep-alive socket, a node restarting): every call made here is a read.
   */
  async function run(method: string, params?: readonly unknown[]): Promise<unknown> {
    const body = JSON.stringify(params === undefined ? { jsonrpc: '2.0', id: ++nextId, method } : { jsonrpc: '2.0', id: ++nextId, method, params });
    const response = await http.post(endpoint, body, { timeoutMs, authorization, retryDroppedConnection: true }).catch((error: unknown) => {
      throw clientFailure(error, (kind, message) => new EvmRpcError(method, url, kind, message));
    });
    const { status, text } = response;
    // Rate limited, whatever the body says (gateways answer 429 with a JSON-RPC error too).
    if (status === 429) throw rateLimited(new EvmRpcError(method, url, 'http', text.slice(0, 300) || 'HTTP 429', undefined, status), response);
    const ok = status >= 200 && status < 300;
    let data: { result?: unknown; error?: unknown } | undefined;
    try {
      data = JSON.parse(text || '{}') as typeof data;
    } catch (error) {
      if (ok) throw new EvmRpcError(method, url, 'http', `invalid JSON in the response: ${(error as Error).message}`);
    }
    if (isRpcErrorObject(data?.error)) throw classifyRpcError(method, url, data.error, ok ? undefined : status);
    if (!ok) throw new EvmRpcError(method, url, 'http', text.slice(0, 300) || `HTTP ${status}`, undefined, status);
    if (data === null || typeof data !== 'object' || Array.isArray(data)) throw new EvmRpcError(method, url, 'http', 'the response is not a JSON-RPC object');
    return data.result;
  }

  async function batch<T>(calls: readonly RpcCall[]): Promise<BatchAnswer<T>[]> {
    if (calls.length === 0) return [];
    const first = nextId + 1;
    nextId += calls.length;
    const label = `batch of ${calls.length} (${[...new Set(calls.map((c) => c.method))].join(', ')})`;
    const body = JSON.stringify(calls.map((c, i) => ({ jsonrpc: '2.0', id: first + i, method: c.method, params: c.params })));
    const response = await http.post(endpoint, body, { timeoutMs, authorization, retryDroppedConnection: true }).catch((error: unknown) => {
      throw clientFailure(error, (kind, message) => new EvmRpcError(label, url, kind, message));
    });
    const { status, text } = response;
    if (status === 429) throw rateLimited(new EvmRpcError(label, url, 'http', text.slice(0, 300) || 'HTTP 429', undefined, status), response);
    const ok = status >= 200 && status < 300;
    let data: unknown;
    try {
      data = JSON.parse(text || 'null');
    } catch (error) {
      throw new EvmRpcError(label, url, 'http', `invalid JSON in the response: ${(error as Error).message}`, undefined, ok ? undefined : status);
    }
    // The whole batch refused (batches not served, too many calls for the node or a gateway): one error object.
    if (!Array.isArray(data)) {
      const error = (data as { error?: unknown } | null)?.error;
      if (isRpcErrorObject(error)) throw classifyRpcError(label, url, error, ok ? undefined : status);
      throw new EvmRpcError(label, url, 'http', text.slice(0, 300) || `HTTP ${status}`, undefined, ok ? undefined : status);
    }
    if (!ok) throw new EvmRpcError(label, url, 'http', text.slice(0, 300) || `HTTP ${status}`, undefined, status);
    const byId = new Map<unknown, { result?: unknown; error?: unknown }>();
    for (const entry of data as { id?: unknown; result?: unknown; error?: unknown }[]) {
      if (entry !== null && typeof entry === 'object') byId.set(entry.id, entry);
    }
    return calls.map((call, i) => {
      const entry = byId.get(first + i);
      if (entry === undefined) throw new EvmRpcError(label, url, 'http', `the batch answer has no entry for request ${first + i} (${call.method})`);
      if (isRpcErrorObject(entry.error)) return { ok: false, error: classifyRpcError(call.method, url, entry.error) };
      if (!('result' in entry)) throw new EvmRpcError(call.method, url, 'http', 'a batch entry without result or error');
      return { ok: true, result: entry.result as T };
    });
  }

  const quantity = (method: string, value: unknown): bigint => {
    if (typeof value !== 'string' || !/^0x[0-9a-fA-F]+$/.test(value))
      throw new EvmRpcError(method, url, 'http', `not a hex quantity: ${String(value).slice(0, 100)}`);
    return BigInt(value);
  };
  const blockTag = (height: number | undefined) => (height === undefined ? 'latest' : `0x${height.toString(16)}`);

  return {
    url,
    request: async <T>(method: string, params: readonly unknown[]) => (await run(method, params)) as T,
    batch,
    blockNumber: async () => Number(quantity('eth_blockNumber', await run('eth_blockNumber'))),
    balance: async (address, height) => quantity('eth_getBalance', await run('eth_getBalance', [address, blockTag(height)])),
    async call({ to, data, height, gas }) {
      const result = await run('eth_call', [{ to, data, ...(gas === undefined ? {} : { gas: `0x${gas.toString(16)}` }) }, blockTag(height)]);
      if (typeof result !== 'string' || !/^0x[0-9a-fA-F]*$/.test(result))
        throw new EvmRpcError('eth_call', url, 'http', `not hex data: ${String(result).slice(0, 100)}`);
      return result as Hex;
    },
    close: () => http.close(),
  };
}
