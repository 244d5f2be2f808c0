/**
 * JSON-RPC client for one rippled (or Clio) server over HTTP. Like the EVM client it does little on
 * purpose: one request, a timeout, at most one quick retry when the connection itself failed (every call
 * here is a read), and errors that say which method failed at which node and what the node answered.
 * Retrying with backoff is the caller's job (the follower).
 *
 * rippled's HTTP dialect: POST `{"method": "ledger", "params": [{...}]}`; the answer is `{"result": {...,
 * "status": "success"}}`, and an error is an HTTP 200 too, `{"result": {"error": "lgrNotFound",
 * "error_code": 21, "error_message": ..., "request": {...}, "status": "error"}}`. Faults outside a command
 * (overload, a request it cannot parse, a forbidden method) are plain-text 503 / 400 / 403 answers.
 * The envelope is read by the normaliser's unwrapRippledResult, so the two agree on every shape.
 */
import { clientFailure, createNodeHttp, nodeEndpoint, rateLimited } from '../node-http.ts';
import { NodeRpcError } from '../rpc-error.ts';
import { RippledError, unwrapRippledResult, XrpNormalizeError } from './normalize.ts';

export const DEFAULT_TIMEOUT_MS = 10_000;
/** A busy mainnet ledger with expanded transactions and metadata is a few MiB; the timeout bounds a runaway body. */
const MAX_RESPONSE_BYTES = 256 * 1024 * 1024;

/**
 * - rippled: the server answered a command with an error (`code` is its token: lgrNotFound, txnNotFound,
 *   actNotFound, noNetwork, tooBusy, unknownCmd, ...).
 * - http: a non-2xx answer that is not a rippled error, or a body that is not a rippled answer.
 * - timeout / network: no answer in time / no connection.
 */
export type XrpRpcErrorKind = 'rippled' | 'http' | 'timeout' | 'network';

type JsonObject = Record<string, unknown>;

export class XrpRpcError extends NodeRpcError<XrpRpcErrorKind> {
  override name = 'XrpRpcError';
  /** rippled's error token (kind 'rippled'). */
  declare readonly code?: string;

  constructor(
    method: string,
    url: string,
    kind: XrpRpcErrorKind,
    nodeMessage: string,
    code?: string,
    status?: number,
    /** kind 'rippled': the error answer's result object (it may say `validated`, `ledger_index`, ...). */
    readonly answer?: JsonObject,
  ) {
    super(method, url, kind, nodeMessage, code, status);
  }
}

/** Whether `error` is rippled's answer `code` to a command (e.g. `lgrNotFound`). */
export function isRippledError(error: unknown, code: string): error is XrpRpcError {
  return error instanceof XrpRpcError && error.kind === 'rippled' && error.code === code;
}

const isObject = (value: unknown): value is JsonObject => value !== null && typeof value === 'object' && !Array.isArray(value);

export interface RippledClientOptions {
  url: string;
  /** Per request; default 10 s. */
  timeoutMs?: number;
}

export interface RippledClient {
  /** The node URL without credentials (for logs and errors). */
  readonly url: string;
  /** One command; its `result` object as the node sent it (`status: "success"` included). */
  request<T extends object = JsonObject>(method: string, params?: JsonObject): Promise<T>;
  /** Closes the idle connections; requests in flight finish. */
  close(): Promise<void>;
}

export function createRippledClient(options: RippledClientOptions): RippledClient {
  // Credentials in the URL (a gateway in front of the node) go as Basic authentication, never in the request line.
  const { endpoint, redactedUrl: url, authorization } = nodeEndpoint(options.url);
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const http = createNodeHttp({ maxResponseBytes: MAX_RESPONSE_BYTES });
  let nextId = 0;

  /** One command. One quick retry when the connection failed (a reset keep-alive socket, a node restarting). */
  async function run(method: string, params: JsonObject): Promise<JsonObject> {
    // rippled ignores `id` and `jsonrpc` at this level; hosted gateways in front of it want them.
    const body = JSON.stringify({ method, params: [params], id: ++nextId, jsonrpc: '2.0' });
    const response = await http.post(endpoint, body, { timeoutMs, authorization, retryDroppedConnection: true }).catch((error: unknown) => {
      throw clientFailure(error, (kind, message) => new XrpRpcError(method, url, kind, message));
    });
    const { status, text } = response;
    if (status === 429) throw rateLimited(new XrpRpcError(method, url, 'http', text.trim().slice(0, 300) || 'HTTP 429', undefined, status), response);
    const ok = status >= 200 && status < 300;
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (error) {
      // rippled's own faults outside a command (503 overloaded, 400 unparsable, 403 forbidden) are plain text.
      if (!ok) throw new XrpRpcError(method, url, 'http', text.trim().slice(0, 300) || `HTTP ${status}`, undefined, status);
      throw new XrpRpcError(method, url, 'http', `invalid JSON in the response: ${(error as Error).message}`);
    }
    try {
      const result = unwrapRippledResult<JsonObject>(json);
      if (!ok) throw new XrpRpcError(method, url, 'http', text.slice(0, 300), undefined, status);
      // A bare object without `result` is taken as is by the normaliser (WebSocket-style files); over HTTP
      // rippled always wraps, so an object without it is not an answer.
      if (!isObject(json) || !('result' in json)) throw new XrpRpcError(method, url, 'http', `not a rippled answer (no result): ${text.slice(0, 200)}`);
      return result;
    } catch (error) {
      if (error instanceof RippledError) {
        const answer = isObject(json) && isObject(json.result) ? json.result : isObject(json) ? json : undefined;
        throw new XrpRpcError(method, url, 'rippled', error.message, error.code, ok ? undefined : status, answer);
      }
      if (error instanceof XrpNormalizeError) throw new XrpRpcError(method, url, 'http', error.message, undefined, ok ? undefined : status);
      throw error;
    }
  }

  return {
    url,
    request: async <T extends object>(method: string, params: JsonObject = {}) => (await run(method, params)) as T,
    close: () => http.close(),
  };
}
