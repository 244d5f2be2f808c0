/**
 * The one error of a node request, in every family: which method (or path) failed at which node, of
 * what kind, and what the node or the connection said. Each family's client throws its own subclass
 * (EvmRpcError, UtxoRpcError, TronRpcError, XrpRpcError) with the kinds its protocol has; code that
 * only needs to know whether to ask again reads `retryable`, whatever the family.
 */
export class NodeRpcError<Kind extends string = string> extends Error {
  override name = 'NodeRpcError';
  /** A 429's Retry-After, when the node sent one (node-http.ts rateLimited; the node pool honours it). */
  retryAfterMs?: number;

  constructor(
    /** The JSON-RPC method, or the HTTP path (Tron), or a batch's label. */
    readonly method: string,
    /** The node URL without credentials. */
    readonly url: string,
    readonly kind: Kind,
    /** What the node (or the connection) said. */
    readonly nodeMessage: string,
    /** The node's error code: a JSON-RPC number, or rippled's token. */
    readonly code?: number | string,
    readonly status?: number,
  ) {
    super(`${method} failed at ${url}: ${kind}${code === undefined ? '' : ` ${code}`}${status === undefined ? '' : ` (HTTP ${status})`}: ${nodeMessage}`);
  }

  /** No answer at all: the request timed out or the connection failed. */
  get unanswered(): boolean {
    return this.kind === 'timeout' || this.kind === 'network';
  }

  /**
   * Asking again may succeed: no answer, a node or gateway in trouble (HTTP 5xx) or rate limiting (429).
   * Anything else is the node's answer to this request (method not served, a revert, an RPC error, a
   * refused login, a body that is not the protocol's) and will be the same next time.
   */
  get retryable(): boolean {
    return this.unanswered || (this.status ?? 0) >= 500 || this.status === 429;
  }
}
