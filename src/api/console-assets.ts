/**
 * The web console's static files (built by `npm run build` from console/ into dist/console), served at
 * /console by the API role. They are few and small, so they are read once at start, gzipped once, and
 * answered from memory:
 * - files under assets/ have content hashes in their names: cached for a year, immutable;
 * - index.html is revalidated on every load (ETag), so a new build is picked up at once;
 * - any other path under /console is a page of the console (a deep link or a reload): index.html,
 *   except under assets/, where a missing file is a 404 and not a page;
 * - nothing is fetched from elsewhere, and a Content-Security-Policy says so to the browser.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, truncate } from '../domain/errors.ts';
import { sendError } from './envelope.ts';

export const CONSOLE_PATH = '/console';

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
  '.map': 'application/json; charset=utf-8',
};
const COMPRESSIBLE = new Set(['.html', '.js', '.css', '.svg', '.json', '.txt', '.map']);

const SECURITY_HEADERS = {
  // Scripts, styles and API calls from this origin only: the console loads nothing from elsewhere.
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

interface Asset {
  body: Buffer;
  gzipped: Buffer | undefined;
  type: string;
  etag: string;
  immutable: boolean;
}

/**
 * Where the build is: dist/console at the package root, whether this module runs from src/api (tsx) or
 * from dist/src/api (compiled).
 */
export function defaultConsoleDirectory(): string {
  const candidates = [new URL('../../dist/console/', import.meta.url), new URL('../../console/', import.meta.url)].map((u) => fileURLToPath(u));
  return candidates.find((dir) => existsSync(join(dir, 'index.html'))) ?? (candidates[0] as string);
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? filesUnder(path) : entry.isFile() ? [path] : [];
  });
}

/** Every file of the build by its URL path under /console ('/index.html', '/assets/index-abc.js'); empty when not built. */
export function loadConsoleAssets(dir: string): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  if (!existsSync(join(dir, 'index.html')) || !statSync(dir).isDirectory()) return assets;
  for (const path of filesUnder(dir)) {
    const urlPath = `/${relative(dir, path).split(sep).join('/')}`;
    const body = readFileSync(path);
    const ext = extname(path).toLowerCase();
    const gzipped = COMPRESSIBLE.has(ext) && body.length > 256 ? gzipSync(body, { level: 9 }) : undefined;
    assets.set(urlPath, {
      body,
      gzipped: gzipped && gzipped.length < body.length ? gzipped : undefined,
      type: CONTENT_TYPES[ext] ?? 'application/octet-stream',
      etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
      immutable: urlPath.startsWith('/assets/'),
    });
  }
  return assets;
}

function acceptsGzip(request: FastifyRequest): boolean {
  const accept = request.headers['accept-encoding'];
  return typeof accept === 'string' && /\bgzip\b/.test(accept) && !/\bgzip;\s*q=0(\.0*)?\b/.test(accept);
}

function send(request: FastifyRequest, reply: FastifyReply, asset: Asset) {
  reply.headers(SECURITY_HEADERS);
  reply.header('content-type', asset.type);
  reply.header('etag', asset.etag);
  reply.header('cache-control', asset.immutable ? 'public, max-age=31536000, immutable' : 'no-cache');
  if (asset.gzipped) reply.header('vary', 'accept-encoding');
  if (request.headers['if-none-match'] === asset.etag) return reply.code(304).send();
  if (asset.gzipped && acceptsGzip(request)) {
    reply.header('content-encoding', 'gzip');
    return reply.code(200).send(asset.gzipped);
  }
  return reply.code(200).send(asset.body);
}

export function consoleRoutes(app: FastifyInstance, dir = defaultConsoleDirectory()): void {
  const assets = loadConsoleAssets(dir);
  const index = assets.get('/index.html');
  const options = { schema: { hide: true } };

  const serve = (request: FastifyRequest, reply: FastifyReply) => {
    if (!index) {
      return sendError(
        request,
        reply,
        new ApiError('uri_not_found', 'The web console is not built in this installation. Run npm run build (npm install runs it), then restart herald.'),
      );
    }
    const path = (request.params as { '*'?: string })['*'] ?? '';
    const asset = path ? assets.get(`/${path}`) : undefined;
    if (asset) return send(request, reply, asset);
    if (path.startsWith('assets/')) {
      return sendError(
        request,
        reply,
        new ApiError('uri_not_found', `The console has no file ${truncate(path, 120)}; reload the page to get the current build.`),
      );
    }
    return send(request, reply, index);
  };
  // The router ignores trailing slashes: '/console' and '/console/' reach the same route. The bare form
  // is redirected, so that the page's relative URLs resolve under /console/.
  app.get(CONSOLE_PATH, options, (request, reply) =>
    request.url.split('?')[0] === CONSOLE_PATH ? reply.redirect(`${CONSOLE_PATH}/`, 301) : serve(request, reply),
  );
  app.get(`${CONSOLE_PATH}/*`, options, serve);
  // The API's root is where a person lands first: the console (a redirect that may change, so not 301).
  app.get('/', options, (_request, reply) => reply.redirect(`${CONSOLE_PATH}/`, 302));
}
