/**
 * The web console's files as herald serves them at /console (src/api/console-assets.ts): content types,
 * cache headers, gzip, revalidation, deep links answered with the program, missing assets a 404 in the
 * envelope, nothing referenced from another origin, and the first load within its 200 KB gzipped budget.
 */
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './harness.ts';
import { ensureConsoleBuilt } from './support/console-build.ts';

let t: TestApp;

beforeAll(async () => {
  await ensureConsoleBuilt();
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

/** A raw GET (no automatic decompression): status, headers and the bytes on the wire. */
function get(path: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${t.url}${path}`, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** The files the page loads first: index.html and the scripts and stylesheets it names. */
function referencedAssets(html: string): string[] {
  return [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1] as string).filter((u) => !u.startsWith('data:'));
}

describe('the console at /console', () => {
  it('answers /console with a redirect to /console/, and the program with no-cache, the CSP and an ETag', async () => {
    const bare = await get('/console');
    expect(bare.status).toBe(301);
    expect(bare.headers.location).toBe('/console/');

    const page = await get('/console/');
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['cache-control']).toBe('no-cache');
    expect(page.headers['content-security-policy']).toContain("default-src 'none'");
    expect(page.headers['content-security-policy']).toContain("connect-src 'self'");
    expect(page.headers['x-content-type-options']).toBe('nosniff');
    const html = page.body.toString('utf8');
    expect(html).toContain('<div id="app">');
    expect(html).toContain('<html lang="en">');

    const again = await get('/console/', { 'if-none-match': page.headers.etag as string });
    expect(again.status).toBe(304);
    expect(again.body.length).toBe(0);
  });

  it('serves hashed assets gzipped, cached for a year as immutable, with their content types; all from this origin', async () => {
    const html = (await get('/console/')).body.toString('utf8');
    const assets = referencedAssets(html);
    expect(assets.length).toBeGreaterThanOrEqual(2);
    for (const url of assets) expect(url).toMatch(/^\/console\/assets\/[\w.-]+\.(js|css)$/);
    for (const url of assets) {
      const r = await get(url, { 'accept-encoding': 'gzip, br' });
      expect(r.status, url).toBe(200);
      expect(r.headers['content-type']).toBe(url.endsWith('.js') ? 'text/javascript; charset=utf-8' : 'text/css; charset=utf-8');
      expect(r.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      expect(r.headers['content-encoding']).toBe('gzip');
      expect(r.headers.vary).toBe('accept-encoding');
      const plain = await get(url);
      expect(plain.headers['content-encoding']).toBeUndefined();
      expect(plain.body.length).toBeGreaterThan(r.body.length);
      // Nothing is loaded from another origin at run time: no absolute URL to fetch in the program.
      expect(plain.body.toString('utf8')).not.toMatch(/(?:import|fetch)\(\s*["'`]https?:/);
    }
  });

  it('keeps the first load within 200 KB gzipped in total', async () => {
    const page = await get('/console/', { 'accept-encoding': 'gzip' });
    let total = page.body.length;
    for (const url of referencedAssets(page.body.toString('utf8'))) total += (await get(url, { 'accept-encoding': 'gzip' })).body.length;
    expect(total).toBeLessThanOrEqual(200 * 1024);
  });

  it('answers a deep link (a reload on any console page) with the program, and a missing asset with uri_not_found in the envelope', async () => {
    for (const path of ['/console/subscriptions', '/console/subscriptions/9b2f0a52-0000-4000-8000-000000000000', '/console/operator/chains?x=1']) {
      const r = await get(path);
      expect(r.status, path).toBe(200);
      expect(r.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(r.body.toString('utf8')).toContain('<div id="app">');
    }
    const missing = await t.request('GET', '/console/assets/index-missing.js');
    expect(missing.status).toBe(400);
    expect(missing.headers.get('content-type')).toMatch(/^application\/json/);
    expect(missing.body.error.code).toBe('uri_not_found');
  });

  it('is not an API endpoint: absent from the OpenAPI document, and needs no API key', async () => {
    const doc = await t.request('GET', '/openapi.json');
    expect(Object.keys(doc.body.paths).filter((p) => p.startsWith('/console'))).toEqual([]);
    expect((await get('/console/domains')).status).toBe(200);
  });
});
