/**
 * The HTTP transport the chain node clients share (EVM and Bitcoin Core JSON-RPC, java-tron's HTTP API,
 * rippled's JSON-RPC): credentials in the node URL sent as Basic authentication, one POST on a keep-alive
 * pool with a timeout for the whole request and a bound on the body, and the failures below HTTP told
 * apart. What a status or a body means is each client's dialect: they map NodeTransportError to their own
 * error class, whose kinds the adapters rely on.
 *
 * Requests go through undici's request() on a keep-alive pool per client, not fetch: catching up, a client
 * makes thousands of requests per second (src/chains/evm/rpc.ts says what fetch cost there).
 */
import { Agent, request as httpRequest } from 'undici';
import { redactUrl } from '../domain/node-urls.ts';
import { sleep } from '../lib/loop.ts';

const NETWORK_RETRY_DELAY_MS = 150;

export interface NodeEndpoint {
  /** The URL to POST to: the node URL without user and password. */
  endpoint: string;
  /** The node URL as it may be logged and shown in errors (redactUrl). */
  redactedUrl: string;
  /** `user:password` from the URL, percent-decoded; absent when the URL carries none. */
  credentials?: string;
  /** The Basic authorization header value for `credentials`. */
  authorization?: string;
}

/** Credentials in the URL go as Basic authentication (as viem and browsers do), never in the request line. */
export function nodeEndpoint(rawUrl: string): NodeEndpoint {
  const redactedUrl = redactUrl(rawUrl);
  const target = new URL(rawUrl);
  if (!target.username && !target.password) return { endpoint: target.toString(), redactedUrl };
  const credentials = `${decodeURIComponent(target.username)}:${decodeURIComponent(target.password)}`;
  target.username = '';
  target.password = '';
  return { endpoint: target.toString(), redactedUrl, credentials, authorization: basicAuthorization(credentials) };
}

export function basicAuthorization(credentials: string): string {
  return `Basic ${Buffer.from(credentials).toString('base64')}`;
}

/**
 * - timeout: no complete answer within the request's timeout.
 * - too-large: the body exceeded the client's bound (clients report it as an HTTP fault).
 * - network: a failure below HTTP (refused, reset, DNS).
 */
export type NodeTransportErrorKind = 'timeout' | 'too-large' | 'network';

/** Its message is what the connection said, ready to be a client error's nodeMessage. */
export class NodeTransportError extends Error {
  override name = 'NodeTransportError';

  constructor(
    readonly kind: NodeTransportErrorKind,
    message: string,
  ) {
    super(message);
  }
}

/**
 * `error` as a client's own error when it is a NodeTransportError, else `error` itself. `make` gets the kind
 * the clients share: a body too large is an HTTP fault, like any other answer a client cannot take.
 */
export function clientFailure(error: unknown, make: (kind: 'timeout' | 'network' | 'http', message: string) => Error): unknown {
  return error instanceof NodeTransportError ? make(error.kind === 'too-large' ? 'http' : error.kind, error.message) : error;
}

/** A failure below HTTP: the root cause's message, with its code when the message lacks it. */
function describeNetworkFailure(error: unknown): string {
  let root = error;
  for (let i = 0; i < 10 && root instanceof Error && root.cause !== undefined; i++) root = root.cause;
  const e = root as { message?: unknown; code?: unknown } | undefined;
  const text = typeof e?.message === 'string' && e.message !== '' ? e.message : String(e?.code ?? e);
  return typeof e?.code === 'string' && !text.includes(e.code) ? `${text} (${e.code})` : text;
}

/**
 * Runs `attempt` again once, after a short pause, when it failed for want of a connection (a reset keep-alive
 * socket, a node restarting). Only for reads: a write may have reached the node.
 */
export async function retryOnDroppedConnection<T>(attempt: () => Promise<T>): Promise<T> {
  try {
    return await attempt();
  } catch (error) {
    if (!(error instanceof NodeTransportError) || error.kind !== 'network') throw error;
    await sleep(NETWORK_RETRY_DELAY_MS);
    return await attempt();
  }
}

export interface NodeResponse {
  status: number;
  text: string;
  /** HTTP 429 (and 503) with a Retry-After header: how long the node asked to be left alone. */
  retryAfterMs?: number;
}

/** Retry-After in milliseconds: delta-seconds or an HTTP date (RFC 9110 10.2.3); undefined when absent or unreadable. */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined || text.trim() === '') return undefined;
  if (/^\s*\d+\s*$/.test(text)) return Number(text.trim()) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/**
 * A node's (or its gateway's) "too many requests": the clients throw their own error with status 429 and
 * this field set from Retry-After, so that a pool of nodes leaves the node alone for as long as it asked.
 */
export interface RateLimitedError extends Error {
  status: 429;
  retryAfterMs?: number;
}

/** Marks a client error built for a 429 answer with the answer's Retry-After; returns it. */
export function rateLimited<E extends Error & { status?: number }>(error: E, response: NodeResponse): E {
  if (response.status === 429) (error as E & { retryAfterMs?: number }).retryAfterMs = response.retryAfterMs;
  return error;
}

/** The 429 of a node client (see rateLimited), or undefined for any other failure. */
export function rateLimitOf(error: unknown): RateLimitedError | undefined {
  return error instanceof Error && (error as { status?: unknown }).status === 429 ? (error as RateLimitedError) : undefined;
}

export interface NodePostOptions {
  /** Bounds the request as a whole; undici's own (per phase) are left at their defaults. */
  timeoutMs: number;
  /** The authorization header value, if any. */
  authorization?: string;
  /** Try once more when the connection failed (retryOnDroppedConnection); reads only. */
  retryDroppedConnection?: boolean;
}

export interface NodeHttp {
  /** POSTs a JSON `body`; any HTTP status is an answer. Throws NodeTransportError. */
  post(endpoint: string, body: string, options: NodePostOptions): Promise<NodeResponse>;
  /** Closes the idle connections; requests in flight finish. */
  close(): Promise<void>;
}

export function createNodeHttp(options: { maxResponseBytes: number }): NodeHttp {
  const { maxResponseBytes } = options;
  const agent = new Agent({ keepAliveTimeout: 30_000 });

  async function postOnce(endpoint: string, body: string, { timeoutMs, authorization }: NodePostOptions): Promise<NodeResponse> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (authorization !== undefined) headers.authorization = authorization;
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), timeoutMs);
    try {
      const response = await httpRequest(endpoint, { method: 'POST', headers, body, signal: abort.signal, dispatcher: agent });
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of response.body as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > maxResponseBytes) {
          response.body.destroy();
          throw new NodeTransportError('too-large', `response larger than ${maxResponseBytes} bytes`);
        }
        chunks.push(chunk);
      }
      const text = (chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)).toString('utf8');
      const retryAfterMs = response.statusCode === 429 || response.statusCode === 503 ? parseRetryAfter(response.headers['retry-after']) : undefined;
      return retryAfterMs === undefined ? { status: response.statusCode, text } : { status: response.statusCode, text, retryAfterMs };
    } catch (error) {
      if (abort.signal.aborted) throw new NodeTransportError('timeout', `no answer within ${timeoutMs} ms`);
      if (error instanceof NodeTransportError) throw error;
      throw new NodeTransportError('network', describeNetworkFailure(error));
    } finally {
      clearTimeout(timer);
    }
  }

  return {
    post: (endpoint, body, postOptions) =>
      postOptions.retryDroppedConnection ? retryOnDroppedConnection(() => postOnce(endpoint, body, postOptions)) : postOnce(endpoint, body, postOptions),
    close: () => agent.close(),
  };
}
