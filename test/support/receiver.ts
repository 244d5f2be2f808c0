/**
 * A customer's webhook endpoint for tests: a real HTTPS server on loopback with a certificate from a
 * test CA (tls.ts), whose answer to each request is scripted. It records every request with its exact
 * raw body bytes. HTTP/1.1 keep-alive is on, and the plain 200 path does almost nothing per request,
 * so the same receiver serves throughput benchmarks.
 *
 * Which behaviour a request gets, decided once its body has been read (so `received[i]` got the i-th
 * behaviour): the byPath() one for its path (exact URL first, then the URL without its query string),
 * else the next queued by script(), else the setDefault() one (initially a 200 with an empty body).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { Socket } from 'node:net';
import { createTestCa, type TestCa } from './tls.ts';

export type Behaviour =
  | { kind: 'status'; status: number; headers?: Record<string, string>; body?: string } // e.g. 200, 500, 410, 429 with Retry-After, 301 with Location
  | { kind: 'timeout' } // accept the request, never answer (until the client gives up)
  | { kind: 'slow-body'; status: number; chunkDelayMs: number; chunks: number } // headers at once, body dribbled
  | { kind: 'reset' }; // destroy the socket after reading the request (connection reset)

export interface ReceivedRequest {
  method: string;
  /** The request target as sent, query string included (e.g. '/hooks/a?x=1'). */
  path: string;
  /** Node's parsed headers: lower-case names; repeated headers joined, except set-cookie. */
  headers: Record<string, string | string[] | undefined>;
  rawBody: Buffer;
  /** Date.now() when the request's headers arrived. */
  receivedAt: number;
}

export interface Receiver {
  /** https://localhost:PORT (no trailing slash); the certificate names localhost unless options.hostnames leaves it out. */
  url: string;
  port: number;
  caPem: string;
  /** Every request, in arrival order (of the complete request), with the exact raw body bytes. */
  received: ReceivedRequest[];
  /** Queues behaviours for the next requests, in order. */
  script(...behaviours: Behaviour[]): void;
  /** The behaviour when the queue is empty (initially a 200 with an empty body). */
  setDefault(b: Behaviour): void;
  /** The behaviour for every request to this path; wins over the queue (which it leaves untouched). */
  byPath(path: string, b: Behaviour): void;
  /** Resolves with `received` once it holds at least `count` requests; rejects after timeoutMs (default 5000). */
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedRequest[]>;
  /** Stops listening and destroys every connection, hanging ones included. */
  close(): Promise<void>;
}

export interface ReceiverOptions {
  /** DNS names in the server certificate; default ['localhost', 'hooks.test']. IPs 127.0.0.1 and ::1 are always in it. */
  hostnames?: string[];
  /** The CA to issue the certificate from (share one between receivers and clients); default a new one. */
  ca?: Awaited<ReturnType<typeof createTestCa>>;
  /** Also listen on [::1] at the same port; default true, skipped where the host has no IPv6 loopback. */
  ipv6?: boolean;
}

const OK: Behaviour = { kind: 'status', status: 200 };

export async function startReceiver(options: ReceiverOptions = {}): Promise<Receiver> {
  const ca: TestCa = options.ca ?? (await createTestCa());
  const { certPem, keyPem } = ca.issue(options.hostnames ?? ['localhost', 'hooks.test'], ['127.0.0.1', '::1']);

  const received: ReceivedRequest[] = [];
  const queue: Behaviour[] = [];
  const paths = new Map<string, Behaviour>();
  let fallback: Behaviour = OK;
  const waiters = new Set<{ count: number; resolve: (r: ReceivedRequest[]) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }>();
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let closed = false;

  const choose = (path: string): Behaviour => {
    if (paths.size > 0) {
      const b = paths.get(path) ?? paths.get(path.split('?', 1)[0] ?? path);
      if (b) return b;
    }
    return queue.shift() ?? fallback;
  };

  const respond = (b: Behaviour, req: IncomingMessage, res: ServerResponse) => {
    switch (b.kind) {
      case 'status':
        if (b.headers) res.writeHead(b.status, b.headers);
        else res.statusCode = b.status;
        res.end(b.body);
        return;
      case 'timeout':
        return; // the socket stays open until the client gives up or close() destroys it
      case 'slow-body': {
        res.writeHead(b.status, { 'content-type': 'text/plain; charset=utf-8' });
        res.flushHeaders();
        let sent = 0;
        const next = () => {
          timers.delete(timer);
          if (res.destroyed) return;
          if (sent >= b.chunks) {
            res.end();
            return;
          }
          res.write(`chunk ${sent++}\n`);
          timer = setTimeout(next, b.chunkDelayMs);
          timers.add(timer);
        };
        let timer = setTimeout(next, b.chunkDelayMs);
        timers.add(timer);
        res.once('close', () => {
          clearTimeout(timer);
          timers.delete(timer);
        });
        return;
      }
      case 'reset':
        resetSocket(req.socket);
        return;
    }
  };

  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    const receivedAt = Date.now();
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = req.url ?? '';
      received.push({
        method: req.method ?? '',
        path,
        headers: req.headers,
        rawBody: chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks),
        receivedAt,
      });
      if (waiters.size > 0) {
        for (const w of waiters) {
          if (received.length >= w.count) {
            waiters.delete(w);
            clearTimeout(w.timer);
            w.resolve(received);
          }
        }
      }
      respond(choose(path), req, res);
    });
  };

  const makeServer = (): Server => {
    const server = createServer({ key: keyPem, cert: certPem, keepAlive: true, noDelay: true, requestTimeout: 0 }, onRequest);
    server.keepAliveTimeout = 60_000;
    server.headersTimeout = 61_000;
    server.on('connection', (socket: Socket) => {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
    });
    server.on('secureConnection', (socket: Socket) => {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
    });
    // A client that hangs up mid-handshake or sends garbage is the client's business, not a test failure.
    server.on('tlsClientError', () => {});
    server.on('clientError', (_error, socket) => socket.destroy());
    return server;
  };

  const servers: Server[] = [];
  let port = 0;
  for (let attempt = 0; ; attempt++) {
    const v4 = makeServer();
    port = await listen(v4, '127.0.0.1', 0);
    if (options.ipv6 === false) {
      servers.push(v4);
      break;
    }
    const v6 = makeServer();
    try {
      await listen(v6, '::1', port);
      servers.push(v4, v6);
      break;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EADDRINUSE' && attempt < 10) {
        await new Promise<void>((done) => v4.close(() => done()));
        continue;
      }
      if (code === 'EADDRINUSE') throw error;
      servers.push(v4); // no IPv6 loopback here
      break;
    }
  }

  return {
    url: `https://localhost:${port}`,
    port,
    caPem: ca.caPem,
    received,
    script(...behaviours) {
      queue.push(...behaviours);
    },
    setDefault(b) {
      fallback = b;
    },
    byPath(path, b) {
      paths.set(path, b);
    },
    waitFor(count, timeoutMs = 5000) {
      if (received.length >= count) return Promise.resolve(received);
      return new Promise((resolve, reject) => {
        const waiter = {
          count,
          resolve,
          reject,
          timer: setTimeout(() => {
            waiters.delete(waiter);
            reject(new Error(`receiver: waited ${timeoutMs} ms for ${count} request(s), got ${received.length}`));
          }, timeoutMs),
        };
        waiters.add(waiter);
      });
    },
    async close() {
      if (closed) return;
      closed = true;
      for (const t of timers) clearTimeout(t);
      timers.clear();
      for (const w of waiters) {
        clearTimeout(w.timer);
        w.reject(new Error(`receiver closed while waiting for ${w.count} request(s), got ${received.length}`));
      }
      waiters.clear();
      const done = servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve())));
      for (const s of servers) s.closeAllConnections();
      for (const socket of sockets) socket.destroy();
      sockets.clear();
      await Promise.all(done);
    },
  };
}

function listen(server: Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error) => reject(error);
    server.once('error', onError);
    server.listen({ host, port, ipv6Only: host.includes(':') }, () => {
      server.off('error', onError);
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : port);
    });
  });
}

/**
 * Ends the connection with a TCP RST, so the client sees ECONNRESET rather than a clean close. The
 * TLS socket shares the TCP handle of the raw socket it wraps (`_parent`), which can send the RST.
 */
function resetSocket(socket: Socket): void {
  const raw = (socket as Socket & { _parent?: Socket })._parent;
  try {
    if (raw && typeof raw.resetAndDestroy === 'function') {
      raw.resetAndDestroy();
      socket.destroy();
      return;
    }
  } catch {
    // fall through to a plain destroy
  }
  socket.destroy();
}
