/**
 * Client for one java-tron full node's HTTP API (`POST {base}/wallet/<name>` with a JSON body). Like the
 * EVM client it does little on purpose: one request, a timeout, at most one quick retry when the
 * connection itself failed (every call made here is a read), and errors that say which path failed at
 * which node and what the node answered. Retrying with backoff is the caller's job (the follower).
 *
 * java-tron's dialect: plain JSON, no envelope. A call that fails inside a servlet is still HTTP 200,
 * with `{"Error": "<exception class> : <message>"}` (Util.printErrorMsg); "not found" is `{}`; a path the
 * node does not serve is Jetty's HTML 404.
 *
 * The node URL is the HTTP base (e.g. http://127.0.0.1:8090). Credentials in it go as Basic
 * authentication, never in the request line; a query string is kept on every request (for gateways that
 * take their key that way), and a gateway that takes its key in the path works as is (the key is masked
 * in logs, see redactUrl). TronGrid's TRON-PRO-API-KEY header is not sent: use a key-in-path gateway.
 *
 * int64 fields (amounts, balances, fees) are JSON numbers in java-tron's output and may exceed
 * Number.MAX_SAFE_INTEGER (a large exchange wallet holds more than 9 billion TRX = 9e15 sun): integer
 * literals of 16 digits or more are read as decimal strings, which the normaliser takes losslessly.
 */
import { clientFailure, createNodeHttp, nodeEndpoint, rateLimited } from '../node-http.ts';
import { NodeRpcError } from '../rpc-error.ts';

export const DEFAULT_TIMEOUT_MS = 10_000;
/** getblockbynum of a busy mainnet block is a few MiB; the timeout bounds a runaway body. */
const MAX_RESPONSE_BYTES = 256 * 1024 * 1024;

/**
 * - unsupported: the node does not serve the path (HTTP 404, 405 or 501: a servlet not registered, a
 *   gateway that does not forward it).
 * - node: the node answered `{"Error": ...}` (an exception inside the servlet).
 * - http: any other non-2xx answer, or a body that is not JSON.
 * - timeout / network: no answer in time / no connection.
 */
export type TronRpcErrorKind = 'unsupported' | 'node' | 'http' | 'timeout' | 'network';

/** `method` is the HTTP path (e.g. wallet/getblockbynum); Tron's errors have no code. */
export class TronRpcError extends NodeRpcError<TronRpcErrorKind> {
  override name = 'TronRpcError';
  declare readonly code?: undefined;

  constructor(path: string, url: string, kind: TronRpcErrorKind, nodeMessage: string, status?: number) {
    super(path, url, kind, nodeMessage, undefined, status);
  }
}

const UNSUPPORTED_STATUS = new Set([404, 405, 501]);

/**
 * JSON.parse that keeps integers beyond Number.MAX_SAFE_INTEGER exact: every integer literal of 16 or more
 * digits (in a value position, outside strings) becomes a decimal string. Smaller integers stay numbers.
 */
export function parseJsonLossless(text: string): unknown {
  if (!/\d{16}/.test(text)) return JSON.parse(text);
  const quoted = text.replace(/("(?:[^"\\]|\\.)*")|([:[,]\s*)(-?\d{16,})(?=\s*[,}\]])/g, (match, str: string | undefined, before: string, digits: string) =>
    str !== undefined ? match : `${before}"${digits}"`,
  );
  return JSON.parse(quoted);
}

export interface TronRpcClientOptions {
  url: string;
  /** Per request; default 10 s. */
  timeoutMs?: number;
}

export interface TronRpcClient {
  /** The node URL without credentials (for logs and errors). */
  readonly url: string;
  /**
   * POSTs `body` to `{base}/{path}` (e.g. `wallet/getnowblock`); the node's JSON as it is (integers of 16+
   * digits as strings). `{"Error": ...}` answers are thrown (kind 'node').
   */
  post<T = unknown>(path: string, body?: Record<string, unknown>): Promise<T>;
  /** Closes the idle connections; requests in flight finish. */
  close(): Promise<void>;
}

export function createTronRpcClient(options: TronRpcClientOptions): TronRpcClient {
  const { endpoint: baseUrl, redactedUrl: url, authorization } = nodeEndpoint(options.url);
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const base = new URL(baseUrl);
  base.hash = '';
  const basePath = base.pathname.replace(/\/+$/, '');
  const endpoint = (path: string): string => {
    const target = new URL(base.toString());
    target.pathname = `${basePath}/${path}`;
    return target.toString();
  };
  const http = createNodeHttp({ maxResponseBytes: MAX_RESPONSE_BYTES });

  async function post(path: string, body: Record<string, unknown>): Promise<unknown> {
    // One quick retry when the connection failed (a reset keep-alive socket, a node restarting).
    const response = await http
      .post(endpoint(path), JSON.stringify(body), { timeoutMs, authorization, retryDroppedConnection: true })
      .catch((error: unknown) => {
        throw clientFailure(error, (kind, message) => new TronRpcError(path, url, kind, message));
      });
    const { status, text } = response;
    const snippet = () => text.replace(/\s+/g, ' ').trim().slice(0, 300) || `HTTP ${status}`;
    if (UNSUPPORTED_STATUS.has(status)) throw new TronRpcError(path, url, 'unsupported', snippet(), status);
    if (status < 200 || status >= 300) throw rateLimited(new TronRpcError(path, url, 'http', snippet(), status), response);
    let data: unknown;
    try {
      data = parseJsonLossless(text);
    } catch (error) {
      throw new TronRpcError(path, url, 'http', `invalid JSON in the response: ${(error as Error).message}`);
    }
    if (data !== null && typeof data === 'object' && !Array.isArray(data) && 'Error' in data) {
      throw new TronRpcError(path, url, 'node', String((data as { Error: unknown }).Error).slice(0, 500));
    }
    return data;
  }

  return {
    url,
    post: async <T>(path: string, body: Record<string, unknown> = {}) => (await post(path, body)) as T,
    close: () => http.close(),
  };
}
