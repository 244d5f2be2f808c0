/**
 * The guarded HTTPS client of callback delivery (and of domain verification): keep-alive connections
 * per destination, at most `perDestination` requests in flight to one destination (so one slow or dead
 * receiver cannot take the others' share), a hard timeout, no redirects, bounded response reads, and a
 * destination guard that runs at connect time, after DNS: the address actually connected to is the one
 * checked, so DNS rebinding cannot slip a private address through.
 */
import { lookup as systemLookup } from 'node:dns';
import { Resolver } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import { createSecureContext } from 'node:tls';
import { Agent, request } from 'undici';
import type { AttemptRecord, ErrorClass } from '../store/callbacks.ts';
import { checkDestination, NetworkList } from './destinations.ts';

export interface SenderOptions {
  timeoutMs: number;
  perDestination: number;
  /** Networks allowed although not public (operator's choice; tests allow loopback). */
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
}

/** Work (ms) a destination may have queued here beyond its requests in flight, and a cap in callbacks. */
const QUEUE_MS = 50;
const MAX_QUEUED = 200;

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

function classify(error: unknown): { errorClass: ErrorClass; message: string } {
  const e = error as { code?: string; name?: string; message?: string; cause?: { code?: string; message?: string } };
  const code = e.code ?? e.cause?.code ?? '';
  const message = e.message ?? String(error);
  if (code === 'EREFUSEDDESTINATION') return { errorClass: 'refused_destination', message };
  if (e.name === 'TimeoutError' || e.name === 'AbortError' || /TIMEOUT/.test(code)) return { errorClass: 'timeout', message };
  if (code === 'ECONNREFUSED') return { errorClass: 'connection_refused', message };
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'ENODATA' || code === 'ESERVFAIL') return { errorClass: 'dns', message };
  if (/CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS|HOSTNAME|ALTNAME/i.test(code) || /certificate|tls|ssl/i.test(message))
    return { errorClass: 'tls', message };
  return { errorClass: 'connection_reset', message: code ? `${code}: ${message}` : message };
}

export class CallbackSender {
  private readonly agent: Agent;
  private readonly allow: NetworkList;
  private readonly active = new Map<string, number>();
  private readonly waiting = new Map<string, (() => void)[]>();
  /** Moving mean of request durations (ms) per destination with requests in flight. */
  private readonly meanMs = new Map<string, number>();

  constructor(private readonly options: SenderOptions) {
    this.allow = new NetworkList(options.allowNetworks);
    this.agent = new Agent({
      // One TLS context for every connection: given only `ca`, tls.connect builds a new context per
      // connection, parsing every certificate of the list again (~19 ms of blocked event loop with
      // Node's ~140 root certificates, each time a connection to any destination is opened).
      connect: {
        secureContext: options.ca ? createSecureContext({ ca: options.ca }) : undefined,
        lookup: guardedLookup(this.allow, makeResolve(options.dnsServers)) as unknown as LookupFunction,
        timeout: options.timeoutMs,
      },
      connections: options.perDestination,
      keepAliveTimeout: 30_000,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
    });
  }

  /**
   * Destinations with `perDestination` requests in flight and their queue allowance waiting: the worker
   * claims nothing more for them. The allowance is about QUEUE_MS of the destination's own work (from
   * the mean duration of its recent requests): a fast destination keeps a queue deep enough that its
   * connections are still busy when the next claim arrives; one that hangs holds a single queued
   * callback, so it neither takes the in-flight budget the others need nor keeps callbacks queued
   * here for longer than their lease.
   */
  saturated(): string[] {
    const out: string[] = [];
    for (const [destination, n] of this.active) {
      if (n >= this.options.perDestination && (this.waiting.get(destination)?.length ?? 0) >= this.queueAllowance(destination)) out.push(destination);
    }
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

  private async acquire(destination: string): Promise<void> {
    const n = this.active.get(destination) ?? 0;
    if (n < this.options.perDestination) {
      this.active.set(destination, n + 1);
      return;
    }
    await new Promise<void>((resume) => {
      const queue = this.waiting.get(destination) ?? [];
      queue.push(resume);
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

  /** One request through the guard; never throws: failures come back classified. */
  async send(method: 'POST' | 'GET', url: string, destination: string, body: Buffer | undefined, headers: Record<string, string>): Promise<SendResult> {
    await this.acquire(destination);
    const startedAt = new Date();
    const started = performance.now();
    const done = (r: Omit<SendResult, 'startedAt' | 'durationMs'>): SendResult => ({ startedAt, durationMs: performance.now() - started, ...r });
    // A deadline cleared when the request ends (AbortSignal.timeout's timer and signal would stay alive
    // for the whole timeout after every request: tens of thousands of them at a few thousand POSTs/s).
    const deadline = new AbortController();
    const timer = setTimeout(
      () => deadline.abort(new DOMException(`no complete answer within ${this.options.timeoutMs} ms`, 'TimeoutError')),
      this.options.timeoutMs,
    );
    try {
      const { hostname, protocol } = new URL(url);
      if (protocol !== 'https:') throw new RefusedDestination(`only https callback URLs are sent, not ${protocol}`);
      const literal = hostname.replace(/^\[|\]$/g, '');
      if (isIP(literal)) {
        const verdict = checkDestination(literal, this.allow);
        if (!verdict.allowed) throw new RefusedDestination(`${literal} is a ${verdict.reason} address; callbacks may not reach it`);
      }
      const response = await request(url, {
        method,
        body,
        headers: { 'user-agent': this.options.userAgent, ...headers },
        dispatcher: this.agent,
        signal: deadline.signal,
      });
      const responseBody = await readBounded(response.body, this.options.responseBodyLimit);
      const ok = response.statusCode >= 200 && response.statusCode < 300;
      return done({
        httpStatus: response.statusCode,
        errorClass: ok ? null : 'bad_status',
        errorMessage: ok ? null : `the receiver answered ${response.statusCode}`,
        responseBody,
        headers: response.headers,
      });
    } catch (error) {
      const { errorClass, message } = classify(error);
      return done({ httpStatus: null, errorClass, errorMessage: message.slice(0, 500), responseBody: null, headers: {} });
    } finally {
      clearTimeout(timer);
      const ms = performance.now() - started;
      const mean = this.meanMs.get(destination);
      this.meanMs.set(destination, mean === undefined ? ms : mean + 0.2 * (ms - mean));
      this.release(destination);
    }
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}

/** Reads at most `limit` bytes of a body as text; the rest is dropped (with the connection if need be). */
async function readBounded(body: AsyncIterable<Buffer> & { destroy(): void }, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.length;
    if (size >= limit) {
      body.destroy();
      break;
    }
  }
  return Buffer.concat(chunks).subarray(0, limit).toString('utf8');
}
