/**
 * JSON-RPC client for one EVM node, on viem's HTTP transport. It does little on purpose: one request,
 * a timeout, at most one quick retry when the connection itself failed, and errors that say which
 * method failed at which node and what the node answered. Retrying with backoff is the caller's job
 * (the follower), so a node that is down surfaces at once instead of hanging inside this module.
 *
 * Typed viem actions are used where they fit (block number, balance, eth_call); the block, receipts and
 * traces go through raw `request`, because the normaliser wants the node's JSON as it is.
 */
import { BaseError, createPublicClient, type Hex, HttpRequestError, http, RpcRequestError, TimeoutError } from 'viem';

export const DEFAULT_TIMEOUT_MS = 10_000;
/** viem's default cap is 10 MiB; callTracer output of a busy mainnet block is larger. The timeout bounds a runaway body. */
const MAX_RESPONSE_BYTES = 512 * 1024 * 1024;
const NETWORK_RETRY_DELAY_MS = 150;

/**
 * - unsupported: the node does not serve the method (-32601, -32004, "method ... not found/not supported").
 * - reverted: eth_call ran and failed (revert, invalid opcode, out of gas): an answer, not a node fault.
 * - rpc: any other JSON-RPC error the node answered with.
 * - http: a non-2xx response without a JSON-RPC error, or a body that is not JSON-RPC.
 * - timeout / network: no answer in time / no connection.
 */
export type EvmRpcErrorKind = 'unsupported' | 'reverted' | 'rpc' | 'http' | 'timeout' | 'network';

export class EvmRpcError extends Error {
  override name = 'EvmRpcError';

  constructor(
    readonly method: string,
    /** The node URL without credentials. */
    readonly url: string,
    readonly kind: EvmRpcErrorKind,
    /** What the node (or the connection) said. */
    readonly nodeMessage: string,
    readonly code?: number,
    readonly status?: number,
  ) {
    super(`${method} failed at ${url}: ${kind}${code === undefined ? '' : ` ${code}`}${status === undefined ? '' : ` (HTTP ${status})`}: ${nodeMessage}`);
  }
}

/**
 * Drops user, password, query and fragment, and masks path segments that look like API keys (Infura,
 * Alchemy and friends put the key in the path), so a URL can be logged and shown in errors.
 */
export function redactUrl(raw: string): string {
  try {
    const url = new URL(raw);
    url.username = '';
    url.password = '';
    url.search = '';
    url.hash = '';
    url.pathname = url.pathname
      .split('/')
      .map((segment) => (/^[A-Za-z0-9_-]{16,}$/.test(segment) ? '***' : segment))
      .join('/');
    return url.toString();
  } catch {
    return '<invalid node URL>';
  }
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

/**
 * Turns whatever viem threw into an EvmRpcError. viem's error is not kept as `cause`: its text carries the full
 * URL (API keys in the path) and the request body, and loggers print causes.
 */
export function toEvmRpcError(method: string, url: string, error: unknown, timeoutMs: number): EvmRpcError {
  if (error instanceof EvmRpcError) return error;
  const base = error instanceof BaseError ? error : undefined;
  if (base?.walk((e) => e instanceof TimeoutError)) {
    return new EvmRpcError(method, url, 'timeout', `no answer within ${timeoutMs} ms`);
  }
  const rpc = base?.walk((e) => e instanceof RpcRequestError) as RpcRequestError | null | undefined;
  if (rpc) {
    const message = (rpc.details || rpc.shortMessage).slice(0, 500);
    // A 5xx is a gateway or node in trouble whatever its body says: thrown as such, never taken as "unsupported".
    const serverFault = rpc.status !== undefined && rpc.status >= 500;
    let kind: EvmRpcErrorKind = 'rpc';
    // Reverts first: a revert reason is the contract's text and may say anything, "method not found" included.
    if (!serverFault && method === 'eth_call' && (rpc.code === 3 || REVERT_MESSAGE.test(message))) kind = 'reverted';
    else if (!serverFault && (UNSUPPORTED_CODES.has(rpc.code) || UNSUPPORTED_MESSAGE.test(message))) kind = 'unsupported';
    return new EvmRpcError(method, url, kind, message, rpc.code, rpc.status);
  }
  const httpError = base?.walk((e) => e instanceof HttpRequestError) as HttpRequestError | null | undefined;
  if (httpError?.status !== undefined) {
    return new EvmRpcError(method, url, 'http', (httpError.details || httpError.shortMessage).slice(0, 300), undefined, httpError.status);
  }
  // No HTTP status: fetch itself failed (refused, reset, DNS) or the body was not JSON.
  const root = rootCause(error) as { message?: unknown; code?: unknown } | undefined;
  if (root instanceof SyntaxError) return new EvmRpcError(method, url, 'http', `invalid JSON in the response: ${root.message}`);
  const text = typeof root?.message === 'string' && root.message !== '' ? root.message : String(root?.code ?? root);
  const message = typeof root?.code === 'string' && !text.includes(root.code) ? `${text} (${root.code})` : text;
  return new EvmRpcError(method, url, 'network', message);
}

function rootCause(error: unknown): unknown {
  let e = error;
  for (let i = 0; i < 10 && e instanceof Error && e.cause !== undefined; i++) e = e.cause;
  return e;
}

export interface EvmRpcClientOptions {
  url: string;
  /** Per request; default 10 s. */
  timeoutMs?: number;
}

export interface EvmRpcClient {
  /** The node URL without credentials (for logs and errors). */
  readonly url: string;
  /** Any method, raw JSON result. */
  request<T>(method: string, params: readonly unknown[]): Promise<T>;
  blockNumber(): Promise<number>;
  /** eth_getBalance at `height`. */
  balance(address: string, height: number): Promise<bigint>;
  /**
   * eth_call at `height` (latest when absent) with at most `gas`; '0x' when the call returned nothing; throws
   * kind 'reverted' when the call failed.
   */
  call(request: { to: string; data: Hex; height?: number; gas?: bigint }): Promise<Hex>;
}

export function createEvmRpcClient(options: EvmRpcClientOptions): EvmRpcClient {
  const url = redactUrl(options.url);
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const client = createPublicClient({
    // retryCount 0: viem would retry timeouts and 5xx three times with backoff; the follower does that.
    transport: http(options.url, { timeout: timeoutMs, retryCount: 0, maxResponseBodySize: MAX_RESPONSE_BYTES }),
    // No cached block number (the follower asks because it wants the current one), no CCIP-read
    // detours to URLs a token contract names.
    cacheTime: 0,
    ccipRead: false,
  });
  const rawRequest = client.request as unknown as (args: { method: string; params: readonly unknown[] }) => Promise<unknown>;

  /** One quick retry when the connection failed (a reset keep-alive socket, a node restarting); reads only. */
  async function run<T>(method: string, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      const first = toEvmRpcError(method, url, error, timeoutMs);
      if (first.kind !== 'network') throw first;
      await new Promise((r) => setTimeout(r, NETWORK_RETRY_DELAY_MS));
      try {
        return await work();
      } catch (error2) {
        throw toEvmRpcError(method, url, error2, timeoutMs);
      }
    }
  }

  return {
    url,
    request: <T>(method: string, params: readonly unknown[]) => run(method, () => rawRequest({ method, params }) as Promise<T>),
    blockNumber: () => run('eth_blockNumber', async () => Number(await client.getBlockNumber())),
    balance: (address, height) => run('eth_getBalance', () => client.getBalance({ address: address as Hex, blockNumber: BigInt(height) })),
    call: ({ to, data, height, gas }) =>
      run('eth_call', async () => {
        const result = await client.call({ to: to as Hex, data, gas, blockNumber: height === undefined ? undefined : BigInt(height) });
        return result.data ?? '0x';
      }),
  };
}
