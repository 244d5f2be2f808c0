/**
 * The guarded HTTPS client of callback delivery (and of domain verification): keep-alive connections
 * per destination, at most `perDestination` requests in flight to one destination (so one slow or dead
 * receiver cannot take the others' share), a hard timeout, no redirects, bounded response reads, and a
 * destination guard that runs at connect time, after DNS: the address actually connected to is the one
 * checked, so DNS rebinding cannot slip a private address through.
 *
 * What a failure tells the customer (the attempt log, test callbacks, domain verification) is one generic
 * sentence per error class; the details (addresses a name resolved to, certificate names, socket errors
 * with address and port) would map the operator's network for any customer, so they travel separately, as
 * `errorDetail`, for the caller to log with its request or callback id.
 */
import { lookup as systemLookup } from 'node:dns';
import { Resolver } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import { createSecureContext } from 'node:tls';
import { Agent, type Dispatcher } from 'undici';
import type { AttemptRecord, ErrorClass } from '../store/callbacks.ts';
import { checkDestination, NetworkList } from './destinations.ts';

export interface SenderOptions {
  timeoutMs: number;
  perDestination: number;
  /**
   * Networks every customer's callbacks may reach although not public (operator's choice, meant for
   * single-tenant installs; tests allow loopback). A customer's own list is added per request.
   */
  allowNetworks: string[];
  /** Extra trusted CA certificates (PEM), for private PKI and tests. */
  ca?: string[];
  /** DNS servers ('host:port') to resolve with instead of the system's; for tests and split horizons. */
  dnsServers?: string[];
  /** Bytes of a response body kept (and read: the rest is not waited for). */
  responseBodyLimit: number;
  userAgent: string;
}

export interface SendResult extends AttemptRecord {
  headers: Record<string, string | string[] | undefined>;
  /** For the operator's log only, never for the customer: what exactly went wrong (null on an answer). */
  errorDetail: string | null;
}

/** One request: who it is for decides which non-public networks it may reach. */
export interface SendOptions {
  /** The customer's own allow-list (customers.allow_networks), on top of the operator's. */
  allowNetworks?: readonly string[];
  /**
   * The timeout covers the wait for a free connection to the destination too (a test callback: the
   * customer waits for the answer, and a destination busy with its callbacks must not make that wait
   * twice the timeout or more). Queued callbacks of the worker leave it off: their wait is bounded by
   * the queue allowance, and a timeout is an attempt that counts against the receiver.
   */
  timeoutCoversWait?: boolean;
}

/**
 * Work (ms) a destination may have queued here beyond its requests in flight, and a cap in callbacks. At
 * 200 a fast receiver (about 12,000 answers/s on the development machine) ran dry while its next claim was
 * on its way; at 400 its connections stay busy (bench/delivery.ts, docs/concepts/delivery.md).
 */
const QUEUE_MS = 50;
const MAX_QUEUED = 400;
/** Connection pools kept for customers with allow-lists of their own; the least recently used goes first. */
const MAX_POOLS = 256;

class RefusedDestination extends Error {
  readonly code = 'EREFUSEDDESTINATION';
}

type LookupAddress = { address: string; family: number };

function makeResolve(dnsServers: string[] | undefined): (host: string) => Promise<LookupAddress[]> {
  if (!dnsServers || dnsServers.length === 0) {
    return (host) => new Promise((resolve, reject) => systemLookup(host, { all: true }, (error, addresses) => (error ? reject(error) : resolve(addresses))));
  }
  const resolver = new Resolver();
  resolver.setServers(dnsServers);
  return async (host) => {
    const [v4, v6] = await Promise.allSettled([resolver.resolve4(host), resolver.resolve6(host)]);
    const addresses = [
      ...(v4.status === 'fulfilled' ? v4.value.map((address) => ({ address, family: 4 })) : []),
      ...(v6.status === 'fulfilled' ? v6.value.map((address) => ({ address, family: 6 })) : []),
    ];
    if (addresses.length === 0) throw Object.assign(new Error(`DNS has no address for ${host}`), { code: 'ENOTFOUND' });
    return addresses;
  };
}

/** Resolves, then keeps only the addresses the guard allows; net.connect uses this as its `lookup`. */
function guardedLookup(allow: NetworkList, resolve: (host: string) => Promise<LookupAddress[]>) {
  return (hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    resolve(hostname).then(
      (addresses) => {
        const allowed = addresses.filter((a) => checkDestination(a.address, allow).allowed);
        if (allowed.length === 0) {
          const refused = addresses.map((a) => {
            const verdict = checkDestination(a.address, allow);
            return `${a.address} (${verdict.allowed ? 'allowed' : verdict.reason})`;
          });
          return callback(new RefusedDestination(`${hostname} resolves only to addresses callbacks may not reach: ${refused.join(', ')}`));
        }
        if (options.all) return callback(null, allowed);
        const first = allowed[0] as LookupAddress;
        return callback(null, first.address, first.family);
      },
      (error) => callback(error),
    );
  };
}

/**
 * What the customer is told of a failure: the class in words, nothing the failure itself said (it may name
 * a private address, a certificate's names, a socket's address and port).
 */
export function customerMessage(errorClass: Exclude<ErrorClass, 'bad_status'>, timeoutMs: number): string {
  switch (errorClass) {
    case 'refused_destination':
      return 'the host resolves to an address callbacks may not reach';
    case 'dns':
      return 'the host name could not be resolved';
    case 'timeout':
      return `no complete answer within ${timeoutMs} ms`;
    case 'connection_refused':
      return 'the connection was refused';
    case 'connection_reset':
      return 'the connection failed or was closed before a complete answer';
    case 'tls':
      return 'TLS handshake failed: the certificate must be valid for the host name and issued by a trusted CA';
  }
}

function classify(error: unknown): { errorClass: Exclude<ErrorClass, 'bad_status'>; detail: string } {
  const e = error as { code?: string; name?: string; message?: string; cause?: { code?: string; message?: string } };
  const code = e.code ?? e.cause?.code ?? '';
  const message = e.message ?? String(error);
  const detail = code && !message.includes(code) ? `${code}: ${message}` : message;
  if (code === 'EREFUSEDDESTINATION') return { errorClass: 'refused_destination', detail };
  if (e.name === 'TimeoutError' || e.name === 'AbortError' || /TIMEOUT/.test(code)) return { errorClass: 'timeout', detail };
  if (code === 'ECONNREFUSED') return { errorClass: 'connection_refused', detail };
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'ENODATA' || code === 'ESERVFAIL') return { errorClass: 'dns', detail };
  if (/CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS|HOSTNAME|ALTNAME/i.test(code) || /certificate|tls|ssl/i.test(message))
    return { errorClass: 'tls', detail };
  return { errorClass: 'connection_reset', detail };
}

/** A failed attempt as the caller gets it: the class in words for the customer, the detail for the operator. */
function failure(errorClass: Exclude<ErrorClass, 'bad_status'>, detail: string, timeoutMs: number): Omit<SendResult, 'startedAt' | 'durationMs'> {
  return {
    httpStatus: null,
    errorClass,
    errorMessage: customerMessage(errorClass, timeoutMs),
    errorDetail: detail.slice(0, 1000),
    responseBody: null,
    headers: {},
  };
}

function failed(error: unknown, timeoutMs: number): Omit<SendResult, 'startedAt' | 'durationMs'> {
  const { errorClass, detail } = classify(error);
  return failure(errorClass, detail, timeoutMs);
}

/** Ends a request whose answer's first `responseBodyLimit` bytes have arrived: the answer counts, the rest is dropped. */
class BodyLimitReached extends Error {}

/** What a request needs of its URL, parsed once per URL: a worker sends to the same few URLs over and over. */
interface Target {
  protocol: string;
  origin: string;
  path: string;
  /** The host when it is an IP address literal (brackets removed), checked by the guard before connecting. */
  literalIp: string | null;
}
const targets = new Map<string, Target>();
const MAX_TARGETS = 10_000;

function parseTarget(url: string): Target {
  let target = targets.get(url);
  if (target) return target;
  const { protocol, origin, pathname, search, hostname } = new URL(url);
  const literal = hostname.replace(/^\[|\]$/g, '');
  target = { protocol, origin, path: `${pathname}${search}`, literalIp: isIP(literal) ? literal : null };
  if (targets.size >= MAX_TARGETS) targets.clear();
  targets.set(url, target);
  return target;
}

/** A connection pool and the allow-list its connections were checked against. */
interface Pool {
  agent: Agent;
  allow: NetworkList;
}

export class CallbackSender {
  /** The pool of requests under the operator's allow-list alone (most customers have none of their own). */
  private readonly shared: Pool;
  /**
   * A pool per customer allow-list in use, keyed by the list: undici reuses a kept-alive connection to the
   * same origin, so a connection opened under one customer's list (to a private address it may reach)
   * must never serve another customer's request.
   */
  private readonly pools = new Map<string, Pool>();
  private readonly resolve: (host: string) => Promise<LookupAddress[]>;
  /** One TLS context for every connection (see makePool). */
  private readonly secureContext: ReturnType<typeof createSecureContext> | undefined;
  private readonly active = new Map<string, number>();
  private readonly waiting = new Map<string, (() => void)[]>();
  /** Moving mean of request durations (ms) per destination with requests in flight. */
  private readonly meanMs = new Map<string, number>();

  constructor(private readonly options: SenderOptions) {
    // One TLS context for every connection: given only `ca`, tls.connect builds a new context per
    // connection, parsing every certificate of the list again (~19 ms of blocked event loop with
    // Node's ~140 root certificates, each time a connection to any destination is opened).
    this.secureContext = options.ca ? createSecureContext({ ca: options.ca }) : undefined;
    this.resolve = makeResolve(options.dnsServers);
    this.shared = this.makePool(new NetworkList(options.allowNetworks));
  }

  private makePool(allow: NetworkList): Pool {
    const agent = new Agent({
      connect: {
        secureContext: this.secureContext,
        lookup: guardedLookup(allow, this.resolve) as unknown as LookupFunction,
        timeout: this.options.timeoutMs,
      },
      connections: this.options.perDestination,
      keepAliveTimeout: 30_000,
      headersTimeout: this.options.timeoutMs,
      bodyTimeout: this.options.timeoutMs,
    });
    return { agent, allow };
  }

  /** The pool for a customer's own allow-list (the shared one when it has none). Throws on a malformed entry. */
  private poolFor(customerNetworks: readonly string[] | undefined): Pool {
    if (!customerNetworks || customerNetworks.length === 0) return this.shared;
    const key = customerNetworks.join(',');
    // Taken out and put back: the map's order is then the order of last use.
    const pool = this.pools.get(key) ?? this.makePool(new NetworkList([...this.options.allowNetworks, ...customerNetworks]));
    this.pools.delete(key);
    this.pools.set(key, pool);
    if (this.pools.size > MAX_POOLS) {
      const [oldestKey, oldest] = this.pools.entries().next().value as [string, Pool];
      this.pools.delete(oldestKey);
      void oldest.agent.close(); // lets its requests in flight finish
    }
    return pool;
  }

  /**
   * Destinations with `perDestination` requests in flight and their queue allowance waiting: the worker
   * claims nothing more for them. The allowance is about QUEUE_MS of the destination's own work (from
   * the mean duration of its recent requests): a fast destination keeps a queue deep enough that its
   * connections are still busy when the next claim arrives; one that hangs holds a single queued
   * callback, so it neither takes the in-flight budget the others need nor keeps callbacks queued
   * here for longer than their lease.
   *
   * A destination stays saturated until half its queue allowance is free again: a fast destination is
   * then claimed for in batches of half its allowance, not one callback per claim each time one of its
   * requests ends (one claim statement per callback sent, measured: claims of 28 callbacks on average
   * at 2.2 ms of PostgreSQL each). One that hangs (an allowance of one) is claimed for when its queued
   * callback has left, as before.
   */
  saturated(): string[] {
    const out: string[] = [];
    for (const [destination, n] of this.active) {
      if (n >= this.options.perDestination && (this.waiting.get(destination)?.length ?? 0) > Math.floor(this.queueAllowance(destination) / 2)) {
        out.push(destination);
      }
    }
    return out;
  }

  /**
   * How many more callbacks of a destination a claim should take: its free slots plus its queue allowance
   * left (a destination not in use: its slots and the default allowance). A claim that took more would
   * hold them in this process's in-flight budget, waiting: a receiver that hangs would take the others'.
   */
  capacity(destination: string): number {
    const active = this.active.get(destination) ?? 0;
    const waiting = this.waiting.get(destination)?.length ?? 0;
    return Math.max(0, this.options.perDestination - active) + Math.max(0, this.queueAllowance(destination) - waiting);
  }

  /** The destinations in use (requests in flight), each with its capacity(). */
  capacities(): Map<string, number> {
    const out = new Map<string, number>();
    for (const destination of this.active.keys()) out.set(destination, this.capacity(destination));
    return out;
  }

  private queueAllowance(destination: string): number {
    const mean = this.meanMs.get(destination);
    if (mean === undefined) return this.options.perDestination;
    return Math.max(1, Math.min(MAX_QUEUED, Math.floor((QUEUE_MS * this.options.perDestination) / Math.max(mean, 0.1))));
  }

  inFlight(): number {
    let n = 0;
    for (const count of this.active.values()) n += count;
    return n;
  }

  /** Takes a slot of the destination, waiting for one if need be; false when `signal` aborted the wait (no slot taken). */
  private async acquire(destination: string, signal?: AbortSignal): Promise<boolean> {
    const n = this.active.get(destination) ?? 0;
    if (n < this.options.perDestination) {
      this.active.set(destination, n + 1);
      return true;
    }
    return await new Promise<boolean>((resume) => {
      const queue = this.waiting.get(destination) ?? [];
      const granted = () => {
        signal?.removeEventListener('abort', givenUp);
        resume(true);
      };
      const givenUp = () => {
        const waiting = this.waiting.get(destination);
        const at = waiting?.indexOf(granted) ?? -1;
        if (at >= 0) waiting?.splice(at, 1);
        resume(false);
      };
      signal?.addEventListener('abort', givenUp, { once: true });
      queue.push(granted);
      this.waiting.set(destination, queue);
    });
  }

  private release(destination: string): void {
    const next = this.waiting.get(destination)?.shift();
    if (next) {
      next(); // the slot passes straight to the next waiter
      return;
    }
    const n = (this.active.get(destination) ?? 1) - 1;
    if (n === 0) {
      this.active.delete(destination);
      this.waiting.delete(destination);
      this.meanMs.delete(destination);
    } else this.active.set(destination, n);
  }

  /**
   * One request through the guard; never throws: failures come back classified. `headers` may be a
   * function, called once the request has its connection slot, just before it goes (it must not throw):
   * the delivery worker signs there, so that a claim's few hundred callbacks are signed one by one as
   * connections free up, with the time they are sent, instead of in one burst that holds the event loop
   * (and every answer waiting on it) after each claim.
   */
  async send(
    method: 'POST' | 'GET',
    url: string,
    destination: string,
    body: Buffer | undefined,
    headers: Record<string, string> | (() => Record<string, string>),
    options: SendOptions = {},
  ): Promise<SendResult> {
    let startedAt = new Date();
    let started = performance.now();
    if (options.timeoutCoversWait) {
      // The wait for a slot counts against the deadline: the request gets what is left of it.
      const waited = new AbortController();
      const timer = setTimeout(() => waited.abort(), this.options.timeoutMs);
      const acquired = await this.acquire(destination, waited.signal);
      clearTimeout(timer);
      if (!acquired) {
        const detail = `no free connection to ${destination} within ${this.options.timeoutMs} ms: ${this.options.perDestination} requests in flight there`;
        return { startedAt, durationMs: performance.now() - started, ...failure('timeout', detail, this.options.timeoutMs) };
      }
    } else {
      await this.acquire(destination);
      startedAt = new Date();
      started = performance.now();
    }
    try {
      const ready = typeof headers === 'function' ? headers() : headers;
      const answer = await this.exchange(method, url, body, ready, options, Math.max(1, this.options.timeoutMs - (performance.now() - started)));
      return { startedAt, durationMs: performance.now() - started, ...answer };
    } finally {
      const ms = performance.now() - started;
      const mean = this.meanMs.get(destination);
      this.meanMs.set(destination, mean === undefined ? ms : mean + 0.2 * (ms - mean));
      this.release(destination);
    }
  }

  /**
   * The request itself, through undici's dispatcher API rather than `request()`: no response stream, no
   * AbortSignal, no URL parsed twice (measured with a bare loop on loopback HTTPS: 19 instead of 33 µs of
   * CPU per POST, most of a worker's own cost per callback; docs/concepts/delivery.md). The deadline
   * covers connecting, the answer and its body; only the first `responseBodyLimit` bytes are read.
   */
  private exchange(
    method: 'POST' | 'GET',
    url: string,
    body: Buffer | undefined,
    headers: Record<string, string>,
    options: SendOptions,
    timeoutMs: number,
  ): Promise<Omit<SendResult, 'startedAt' | 'durationMs'>> {
    // The timeout as configured, for the customer's message; `timeoutMs` is what is left of it for this request.
    const configuredTimeoutMs = this.options.timeoutMs;
    let parsed: Target;
    let pool: Pool;
    try {
      parsed = parseTarget(url); // throws on a malformed URL: classified below, as any failure
      if (parsed.protocol !== 'https:') {
        const message = `only https callback URLs are sent, not ${parsed.protocol}`;
        return Promise.resolve({
          httpStatus: null,
          errorClass: 'refused_destination',
          errorMessage: message,
          errorDetail: message,
          responseBody: null,
          headers: {},
        });
      }
      pool = this.poolFor(options.allowNetworks);
      if (parsed.literalIp) {
        const verdict = checkDestination(parsed.literalIp, pool.allow);
        if (!verdict.allowed) throw new RefusedDestination(`${parsed.literalIp} is a ${verdict.reason} address; callbacks may not reach it`);
      }
    } catch (error) {
      return Promise.resolve(failed(error, configuredTimeoutMs));
    }
    const limit = this.options.responseBodyLimit;
    return new Promise((resolve) => {
      let controller: { abort(reason: Error): void } | undefined;
      let stopped: Error | undefined; // why the request was ended early, before undici said why
      let status: number | null = null;
      let responseHeaders: SendResult['headers'] = {};
      const chunks: Buffer[] = [];
      let size = 0;
      let settled = false;
      const settle = (result: Omit<SendResult, 'startedAt' | 'durationMs'>) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(result);
      };
      const answered = () => {
        const ok = status !== null && status >= 200 && status < 300;
        settle({
          httpStatus: status,
          errorClass: ok ? null : 'bad_status',
          errorMessage: ok ? null : `the receiver answered ${status}`,
          errorDetail: null,
          // A NUL byte becomes U+FFFD: PostgreSQL text holds none, and one would fail the recording of the
          // attempt's whole batch, again at each try (test/delivery-leases.test.ts).
          responseBody: Buffer.concat(chunks).subarray(0, limit).toString('utf8').replaceAll('\u0000', '\ufffd'),
          headers: responseHeaders,
        });
      };
      // A request still waiting for its connection is ended as soon as undici hands it one (as request()
      // does with an aborted signal); until then the connect timeout bounds it.
      const stop = (reason: Error) => {
        stopped ??= reason;
        controller?.abort(reason);
      };
      const timer = setTimeout(() => stop(new DOMException(`no complete answer within ${configuredTimeoutMs} ms`, 'TimeoutError')), timeoutMs);
      const handler: Dispatcher.DispatchHandler = {
        onRequestStart(c) {
          controller = c;
          if (stopped) c.abort(stopped);
        },
        onResponseStart(_c, statusCode, headers) {
          if (statusCode < 200) return; // an informational answer: the real one follows
          status = statusCode;
          responseHeaders = headers;
        },
        onResponseData(_c, chunk) {
          if (size >= limit) return;
          chunks.push(chunk);
          size += chunk.length;
          // Enough of the body: the rest is not waited for (the connection goes with it).
          if (size >= limit) stop(new BodyLimitReached());
        },
        onResponseEnd: answered,
        onResponseError(_c, error) {
          // Ended by the body bound (stop() records it before aborting): the answer counts.
          if (status !== null && stopped instanceof BodyLimitReached) return answered();
          settle(failed(stopped ?? error, configuredTimeoutMs));
        },
      };
      try {
        pool.agent.dispatch({ origin: parsed.origin, path: parsed.path, method, body, headers: { 'user-agent': this.options.userAgent, ...headers } }, handler);
      } catch (error) {
        settle(failed(error, configuredTimeoutMs));
      }
    });
  }

  async close(): Promise<void> {
    const pools = [this.shared, ...this.pools.values()];
    this.pools.clear();
    await Promise.all(pools.map((pool) => pool.agent.close()));
  }
}
