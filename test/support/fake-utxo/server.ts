/**
 * The HTTP side of a fake Bitcoin-family node, as Bitcoin Core's httprpc.cpp behaves: POST only (405
 * otherwise), HTTP Basic auth (401 with `WWW-Authenticate: Basic realm="jsonrpc"` and an empty body; a
 * wrong password is answered after 250 ms, as Core deters brute force), JSON-RPC 1.0 envelopes
 * `{"result":..,"error":..,"id":..}` followed by a newline, single requests answered with HTTP 200, or with
 * the status Core's JSONErrorReply picks for an error (404 for -32601, 400 for -32600, 500 otherwise),
 * batches (arrays) always with 200. Bitcoin Core >= 28 answers a request marked "jsonrpc":"2.0" in
 * JSON-RPC 2.0 (HTTP 200 whatever the outcome, 204 for a notification); the older nodes do not.
 * down() closes the listening socket and every connection (connections are refused) until up().
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { toJsonText } from './json-text.ts';
import { RpcError, type RpcMethods } from './rpc.ts';

const RPC_INVALID_REQUEST = -32600;
const RPC_PARSE_ERROR = -32700;

interface Reply {
  status: number;
  body: string;
}

export interface RpcServerOptions {
  user: string;
  password: string;
  /** Bitcoin Core >= 28: honour "jsonrpc":"2.0". */
  jsonRpc2: boolean;
  /** Called with every method executed (for tests counting calls). */
  onCall?: (method: string) => void;
}

export class RpcHttpServer {
  private readonly server: Server;
  private port = 0;
  private down = false;

  constructor(
    private readonly methods: RpcMethods,
    private readonly options: RpcServerOptions,
  ) {
    this.server = createServer({ keepAliveTimeout: 60_000 }, (req, res) => this.onRequest(req, res));
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/`;
  }

  get isDown(): boolean {
    return this.down;
  }

  async listen(port = 0): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, '127.0.0.1', () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    this.port = (this.server.address() as AddressInfo).port;
  }

  /** Connections are refused until up(); open keep-alive connections are dropped. */
  async stop(): Promise<void> {
    if (!this.server.listening) return;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    await closed;
  }

  async setDown(down: boolean): Promise<void> {
    this.down = down;
    if (down) await this.stop();
    else if (!this.server.listening) await this.listen(this.port);
  }

  private authorised(header: string | undefined): boolean {
    if (!header?.startsWith('Basic ')) return false;
    const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
    return decoded === `${this.options.user}:${this.options.password}`;
  }

  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (path !== '/' && !path.startsWith('/wallet/')) {
      req.resume();
      res.writeHead(404).end();
      return;
    }
    if (req.method !== 'POST') {
      req.resume();
      res.writeHead(405, { 'content-type': 'text/html; charset=ISO-8859-1' }).end('JSONRPC server handles only POST requests');
      return;
    }
    const auth = req.headers.authorization;
    if (!this.authorised(auth)) {
      req.resume();
      const answer = () => res.writeHead(401, { 'www-authenticate': 'Basic realm="jsonrpc"', 'content-length': '0' }).end();
      if (auth === undefined) answer();
      else setTimeout(answer, 250);
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const reply = this.handle(Buffer.concat(chunks).toString('utf8'));
      if (reply.status === 204) res.writeHead(204).end();
      else res.writeHead(reply.status, { 'content-type': 'application/json' }).end(reply.body);
    });
  }

  /** One HTTP body in, Core's reply out. */
  handle(text: string): Reply {
    let request: unknown;
    try {
      request = JSON.parse(text);
    } catch {
      return errorReply(RPC_PARSE_ERROR, 'Parse error', null);
    }
    if (Array.isArray(request)) {
      return { status: 200, body: `[${request.map((r) => this.one(r).text).join(',')}]\n` };
    }
    if (request === null || typeof request !== 'object') return errorReply(RPC_PARSE_ERROR, 'Top-level object parse error', null);
    const { text: body, error, v2, notification } = this.one(request);
    if (v2) return notification ? { status: 204, body: '' } : { status: 200, body: `${body}\n` };
    return { status: error === undefined ? 200 : httpStatus(error), body: `${body}\n` };
  }

  /** One request object: its reply text, and its error code when it failed. */
  private one(request: unknown): { text: string; error?: number; v2: boolean; notification: boolean } {
    if (request === null || typeof request !== 'object' || Array.isArray(request)) {
      return { text: legacy(null, RPC_INVALID_REQUEST, 'Invalid Request object'), error: RPC_INVALID_REQUEST, v2: false, notification: false };
    }
    const r = request as Record<string, unknown>;
    const id = r.id ?? null;
    const v2 = this.options.jsonRpc2 && r.jsonrpc === '2.0';
    const notification = v2 && !('id' in r);
    const fail = (code: number, message: string) => ({
      text: v2 ? toJsonText({ jsonrpc: '2.0', error: { code, message }, id }) : legacy(id, code, message),
      error: code,
      v2,
      notification,
    });
    if (typeof r.method !== 'string') return fail(RPC_INVALID_REQUEST, 'Method must be a string');
    const params = r.params ?? [];
    if (params === null || typeof params !== 'object') return fail(RPC_INVALID_REQUEST, 'Params must be an array or object');
    try {
      const result = this.methods.call(r.method, params as unknown[] | Record<string, unknown>);
      this.options.onCall?.(r.method);
      const text = v2 ? toJsonText({ jsonrpc: '2.0', result, id }) : `{"result":${toJsonText(result)},"error":null,"id":${toJsonText(id)}}`;
      return { text, v2, notification };
    } catch (error) {
      if (error instanceof RpcError) return fail(error.code, error.message);
      return fail(-1, error instanceof Error ? error.message : String(error));
    }
  }
}

function legacy(id: unknown, code: number, message: string): string {
  return `{"result":null,"error":${toJsonText({ code, message })},"id":${toJsonText(id)}}`;
}

/** Core's JSONErrorReply. */
function httpStatus(code: number): number {
  if (code === RPC_INVALID_REQUEST) return 400;
  if (code === -32601) return 404;
  return 500;
}

function errorReply(code: number, message: string, id: unknown): Reply {
  return { status: httpStatus(code), body: `${legacy(id, code, message)}\n` };
}
