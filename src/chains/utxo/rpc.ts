/**
 * JSON-RPC client for one Bitcoin-family node (Bitcoin Core and its forks: Bitcoin Cash Node, Litecoin,
 * Dogecoin, Dash, zcashd; Omni Core) over HTTP. Like the EVM client it does little on purpose: one request
 * (or one batch), a timeout, one quick retry when the connection itself failed, and errors that say which
 * method failed at which node and what the node answered. Retrying with backoff is the follower's job.
 *
 * The node's dialect:
 * - JSON-RPC 1.0 style requests (`{"jsonrpc":"1.0","id":..,"method":..,"params":[..]}`); a JSON array of them
 *   is a batch, answered with an array (HTTP 200) whose entries carry their own result or error.
 * - Core answers an RPC error with HTTP 500 (404 for "Method not found", 400 for an invalid request) and the
 *   JSON-RPC error in the body, so the body is read before the status is judged.
 * - Authentication is HTTP Basic: rpcuser/rpcpassword, credentials in the URL, or the node's cookie file
 *   (`__cookie__:<hex>`, rewritten at every node start: read on first use, read again once on a 401).
 *   A refused login is HTTP 401 (or 403 from rpcallowip) without a JSON body.
 *
 * Coin amounts are JSON numbers with up to 8 decimals; once parsed they are doubles, which cannot carry 8
 * decimals above 2^26 coins (dogecoin has such outputs). The client therefore turns the numbers of the amount
 * fields (`value`, `amount`, `fee`, ...) into their decimal text before parsing, so parseCoinAmount sees the
 * exact digits the node printed.
 */
import { readFile } from 'node:fs/promises';
import { basicAuthorization, clientFailure, createNodeHttp, type NodeResponse, nodeEndpoint, rateLimited, retryOnDroppedConnection } from '../node-http.ts';
import { NodeRpcError } from '../rpc-error.ts';

export const DEFAULT_TIMEOUT_MS = 10_000;
/** A verbosity-3 block of 4 MB is some tens of MB of JSON; the timeout bounds a runaway body. */
const MAX_RESPONSE_BYTES = 512 * 1024 * 1024;

/**
 * - unsupported: the node does not serve the method (-32601 "Method not found").
 * - rpc: any other JSON-RPC error the node answered with (e.g. -5 not found, -8 invalid parameter).
 * - auth: the node refused the credentials (HTTP 401/403), or the cookie file cannot be read.
 * - http: a non-2xx response without a JSON-RPC error, or a body that is not a JSON-RPC answer.
 * - timeout / network: no answer in time / no connection.
 */
export type UtxoRpcErrorKind = 'unsupported' | 'rpc' | 'auth' | 'http' | 'timeout' | 'network';

export class UtxoRpcError extends NodeRpcError<UtxoRpcErrorKind> {
  override name = 'UtxoRpcError';
  declare readonly code?: number;
}

export type UtxoRpcAuth = { user: string; password: string } | { cookieFile: string };

export interface UtxoRpcClientOptions {
  /** May carry credentials (`http://user:pass@host:port`); they are sent as Basic authentication. */
  url: string;
  /** Wins over credentials in the URL. */
  auth?: UtxoRpcAuth;
  /** Per request (a batch is one request); default 10 s. */
  timeoutMs?: number;
  /**
   * Read amounts as the node's decimal text (quoteAmounts) rather than as JSON numbers; default true. A
   * double holds every amount of a coin whose supply stays below 2^26 coins (~67 million) to the
   * satoshi, so chains like bitcoin can skip the rewrite (it costs about a third of reading a large
   * block); dogecoin (no cap) and litecoin (84 million) cannot.
   */
  exactAmounts?: boolean;
}

export interface RpcCall {
  method: string;
  params: readonly unknown[];
}

/** One entry of a batch answer: the result, or the error the node answered for that call. */
export type BatchAnswer<T = unknown> = { ok: true; result: T } | { ok: false; code: number; error: UtxoRpcError };

export interface UtxoRpcClient {
  /** The node URL without credentials (for logs and errors). */
  readonly url: string;
  /** Any method, raw JSON result (amount fields as decimal strings). `timeoutMs` overrides the client's. */
  request<T>(method: string, params: readonly unknown[], options?: { timeoutMs?: number }): Promise<T>;
  /**
   * Several calls in one HTTP request, answers in the order of `calls`. A call the node answered with an
   * error is `{ ok: false }`; a failure of the request itself (timeout, auth, garbage) is thrown.
   */
  batch<T>(calls: readonly RpcCall[]): Promise<BatchAnswer<T>[]>;
  /** Closes the idle connections; requests in flight finish. */
  close(): Promise<void>;
}

const METHOD_NOT_FOUND = -32601;
/** Statuses at which Core sends a JSON-RPC error body; anything else (502, 503 "Work queue depth exceeded", ...) is the HTTP layer's. */
const RPC_ERROR_STATUSES = new Set([200, 400, 404, 500]);

/** A JSON-RPC error object as nodes send it. */
interface RpcErrorObject {
  code: number;
  message: string;
}

const isRpcErrorObject = (value: unknown): value is RpcErrorObject =>
  typeof (value as RpcErrorObject | null)?.code === 'number' && typeof (value as RpcErrorObject | null)?.message === 'string';

/** The node answered `error` for `method`. */
export function classifyRpcError(method: string, url: string, error: RpcErrorObject, status?: number): UtxoRpcError {
  const message = error.message.slice(0, 500);
  const kind: UtxoRpcErrorKind = error.code === METHOD_NOT_FOUND || /^method not found/i.test(message) ? 'unsupported' : 'rpc';
  return new UtxoRpcError(method, url, kind, message, error.code, status === undefined || (status >= 200 && status < 300) ? undefined : status);
}

/**
 * The numbers of amount fields as decimal strings, so that JSON.parse does not round them: `"value": 0.1`
 * becomes `"value": "0.1"`. A match needs the key's closing quote unescaped followed by a colon, which only a
 * real key has (a quote inside a JSON string is always escaped), so string contents are never touched.
 */
const AMOUNT_FIELD = /"(value|amount|fee|total_amount|totalamount|balance|reserved|frozen)"(\s*:\s*)(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)(?=\s*[,}\]])/g;

export function quoteAmounts(text: string): string {
  return text.replace(AMOUNT_FIELD, '"$1"$2"$3"');
}

/** Why the node refused the credentials, in words an operator acts on. */
function authMessage(status: number): string {
  return status === 403
    ? 'the node refused the request (HTTP 403): check rpcUser/rpcPassword or rpcCookieFile, and that the node allows this host (rpcallowip)'
    : 'the node refused the credentials (HTTP 401): check rpcUser/rpcPassword or rpcCookieFile';
}

export function createUtxoRpcClient(options: UtxoRpcClientOptions): UtxoRpcClient {
  const { endpoint, redactedUrl: url, credentials: urlCredentials } = nodeEndpoint(options.url);
  const defaultTimeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const exactAmounts = options.exactAmounts ?? true;
  const auth = options.auth;
  const fixedCredentials = auth && 'user' in auth ? `${auth.user}:${auth.password}` : urlCredentials;
  const cookieFile = auth && 'cookieFile' in auth ? auth.cookieFile : undefined;
  const http = createNodeHttp({ maxResponseBytes: MAX_RESPONSE_BYTES });
  let nextId = 0;
  /** The cookie as last read; shared by concurrent requests, dropped when the node refuses it. */
  let cookie: Promise<string> | undefined;

  function readCookie(method: string): Promise<string> {
    if (cookie === undefined) {
      const path = cookieFile as string;
      const reading = readFile(path, 'utf8').then(
        (text) => {
          const value = text.trim();
          if (!/^[^:\s]+:\S+$/.test(value)) throw new UtxoRpcError(method, url, 'auth', `the cookie file ${path} does not hold user:password`);
          return value;
        },
        (error: NodeJS.ErrnoException) => {
          throw new UtxoRpcError(method, url, 'auth', `cannot read the cookie file ${path} (rpcCookieFile): ${error.code ?? error.message}`);
        },
      );
      cookie = reading;
      // A failed read is forgotten, so the next request tries the file again (the node may be starting).
      reading.catch(() => {
        if (cookie === reading) cookie = undefined;
      });
    }
    return cookie;
  }

  /**
   * POSTs `body` with the credentials; a 401 with a cookie file reads the file again (the node restarted and
   * wrote a new cookie) and tries once more. One quick retry when the connection failed (a reset keep-alive
   * socket, a node restarting): every call made here is a read.
   */
  async function send(label: string, body: string, timeoutMs: number): Promise<NodeResponse> {
    const post = (credentials: string | undefined) =>
      http.post(endpoint, body, { timeoutMs, authorization: credentials === undefined ? undefined : basicAuthorization(credentials) });
    const attempt = async () => {
      const used = cookieFile === undefined ? undefined : readCookie(label);
      const a = await post(used === undefined ? fixedCredentials : await used);
      if (a.status !== 401 || used === undefined) return a;
      if (cookie === used) cookie = undefined;
      return await post(await readCookie(label));
    };
    const answer = await retryOnDroppedConnection(attempt).catch((error: unknown) => {
      throw clientFailure(error, (kind, message) => new UtxoRpcError(label, url, kind, message));
    });
    if (answer.status === 401 || answer.status === 403) throw new UtxoRpcError(label, url, 'auth', authMessage(answer.status), undefined, answer.status);
    // A gateway in front of the node rate limiting us (Core itself never answers 429).
    if (answer.status === 429) throw rateLimited(new UtxoRpcError(label, url, 'http', answer.text.slice(0, 300) || 'HTTP 429', undefined, 429), answer);
    return answer;
  }

  /** The parsed body, or undefined when it is not JSON. */
  function parse(text: string): unknown {
    try {
      return JSON.parse(exactAmounts ? quoteAmounts(text || 'null') : text || 'null');
    } catch {
      return undefined;
    }
  }

  async function request<T>(method: string, params: readonly unknown[], opts?: { timeoutMs?: number }): Promise<T> {
    const id = ++nextId;
    const { status, text } = await send(method, JSON.stringify({ jsonrpc: '1.0', id, method, params }), opts?.timeoutMs ?? defaultTimeoutMs);
    const ok = status >= 200 && status < 300;
    const data = parse(text) as { result?: unknown; error?: unknown; id?: unknown } | undefined;
    if (RPC_ERROR_STATUSES.has(status) && isRpcErrorObject(data?.error)) throw classifyRpcError(method, url, data.error, status);
    if (!ok) throw new UtxoRpcError(method, url, 'http', text.slice(0, 300) || `HTTP ${status}`, undefined, status);
    if (data === null || typeof data !== 'object' || Array.isArray(data) || !('result' in data))
      throw new UtxoRpcError(method, url, 'http', `not a JSON-RPC answer: ${text.slice(0, 200)}`);
    if (data.id !== id) throw new UtxoRpcError(method, url, 'http', `the answer is for request ${JSON.stringify(data.id)}, not ${id}`);
    return data.result as T;
  }

  async function batch<T>(calls: readonly RpcCall[]): Promise<BatchAnswer<T>[]> {
    if (calls.length === 0) return [];
    const first = nextId + 1;
    nextId += calls.length;
    const label = `batch of ${calls.length} (${[...new Set(calls.map((c) => c.method))].join(', ')})`;
    const body = JSON.stringify(calls.map((c, i) => ({ jsonrpc: '1.0', id: first + i, method: c.method, params: c.params })));
    const { status, text } = await send(label, body, defaultTimeoutMs);
    const data = parse(text);
    // The whole batch refused (a parse error, a request too large for the node): one error object.
    if (!Array.isArray(data)) {
      const error = (data as { error?: unknown } | undefined)?.error;
      if (RPC_ERROR_STATUSES.has(status) && isRpcErrorObject(error)) throw classifyRpcError(label, url, error, status);
      throw new UtxoRpcError(label, url, 'http', text.slice(0, 300) || `HTTP ${status}`, undefined, status >= 200 && status < 300 ? undefined : status);
    }
    const byId = new Map<unknown, { result?: unknown; error?: unknown }>();
    for (const entry of data as { id?: unknown; result?: unknown; error?: unknown }[]) {
      if (entry !== null && typeof entry === 'object') byId.set(entry.id, entry);
    }
    return calls.map((call, i) => {
      const entry = byId.get(first + i);
      if (entry === undefined) throw new UtxoRpcError(label, url, 'http', `the batch answer has no entry for request ${first + i} (${call.method})`);
      if (isRpcErrorObject(entry.error)) {
        const answered = entry.error;
        let error: UtxoRpcError | undefined;
        // The error object is built when read: a batch of lookups may answer thousands of "not found" (-5)
        // that the caller reads by code and never throws (50,000 errors built were 8 % of a catch-up's main thread).
        return {
          ok: false,
          code: answered.code,
          get error() {
            error ??= classifyRpcError(call.method, url, answered);
            return error;
          },
        };
      }
      if (!('result' in entry)) throw new UtxoRpcError(call.method, url, 'http', 'a batch entry without result or error');
      return { ok: true, result: entry.result as T };
    });
  }

  return { url, request, batch, close: () => http.close() };
}
