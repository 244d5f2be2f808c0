/**
 * Proves the test infrastructure itself: the test CA (tls.ts), the scriptable HTTPS receiver
 * (receiver.ts) and the test DNS server (dns.ts). Needs no database.
 */

import { createPrivateKey, X509Certificate } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { Resolver } from 'node:dns/promises';
import { readFileSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { Agent, request } from 'node:https';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestDns, type TestDns } from './dns.ts';
import { type Receiver, startReceiver } from './receiver.ts';
import { createTestCa, type TestCa, writeCaFile } from './tls.ts';

interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** performance.now() when the status line and headers arrived, and when the body ended. */
  headersAt: number;
  endAt: number;
  reusedSocket: boolean;
}

interface SendOptions {
  method?: string;
  body?: string | Buffer;
  headers?: Record<string, string>;
  ca?: string | null;
  servername?: string;
  signal?: AbortSignal;
  agent?: Agent;
}

/** One HTTPS request with node:https, trusting `ca` (default: none given → must be passed). */
function send(url: string, options: SendOptions = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: options.method ?? 'POST',
        headers: options.headers,
        ...(options.ca ? { ca: options.ca } : {}),
        ...(options.servername ? { servername: options.servername } : {}),
        signal: options.signal,
        agent: options.agent ?? false,
      },
      (res) => {
        const headersAt = performance.now();
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks),
            headersAt,
            endAt: performance.now(),
            reusedSocket: req.reusedSocket,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/** The error a promise rejects with (fails the test when it resolves). */
async function failure(promise: Promise<unknown>): Promise<NodeJS.ErrnoException> {
  try {
    await promise;
  } catch (error) {
    return error as NodeJS.ErrnoException;
  }
  throw new Error('expected the request to fail');
}

let ca: TestCa;
beforeAll(async () => {
  ca = await createTestCa();
});

describe('test CA (tls.ts)', () => {
  it('issues server certificates signed by the CA, with DNS and IP SANs, valid from yesterday for a year', () => {
    const caCert = new X509Certificate(ca.caPem);
    expect(caCert.ca).toBe(true);
    const { certPem, keyPem } = ca.issue(['localhost', 'hooks.test'], ['127.0.0.1', '::1']);
    const cert = new X509Certificate(certPem);
    expect(cert.ca).toBe(false);
    expect(cert.checkIssued(caCert)).toBe(true);
    expect(cert.verify(caCert.publicKey)).toBe(true);
    expect(cert.checkPrivateKey(createPrivateKey(keyPem))).toBe(true);
    expect(cert.subjectAltName).toBe('DNS:localhost, DNS:hooks.test, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1');
    expect(cert.checkHost('hooks.test')).toBe('hooks.test');
    expect(cert.checkHost('other.test')).toBeUndefined();
    expect(cert.checkIP('::1')).toBe('::1');
    const day = 24 * 3600 * 1000;
    const from = Date.parse(cert.validFrom);
    const to = Date.parse(cert.validTo);
    expect(Date.now() - from).toBeGreaterThan(day - 60_000);
    expect(Date.now() - from).toBeLessThan(day + 60_000);
    expect(to - Date.now()).toBeGreaterThan(364 * day);
    expect(to - Date.now()).toBeLessThan(366 * day);
  });

  it('writes the CA to a temporary file', () => {
    const path = writeCaFile(ca.caPem);
    expect(readFileSync(path, 'utf8')).toBe(ca.caPem);
    expect(writeCaFile(ca.caPem)).toBe(path);
  });
});

describe('receiver (receiver.ts)', () => {
  let receiver: Receiver;
  beforeEach(async () => {
    receiver = await startReceiver({ ca });
  });
  afterEach(async () => {
    await receiver.close();
  });
  const post = (path: string, options: SendOptions = {}) => send(`${receiver.url}${path}`, { ca: receiver.caPem, ...options });

  it('answers 200 by default and records method, path, headers and the exact raw body bytes', async () => {
    expect(receiver.url).toBe(`https://localhost:${receiver.port}`);
    const text = '{"event":"transfer","memo":"naïve café ✓ 🚀 日本語"}';
    const binary = Buffer.from([0xff, 0x00, 0xc3, 0x28, 0x0a, 0x0d, 0xe2, 0x82]); // not valid UTF-8
    const a = await post('/hooks/a?x=1', { body: text, headers: { 'content-type': 'application/json', 'x-herald-signature': 'sig' } });
    const b = await post('/hooks/b', { body: binary, method: 'PUT' });
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    const [first, second] = receiver.received;
    expect(receiver.received).toHaveLength(2);
    expect(first?.method).toBe('POST');
    expect(first?.path).toBe('/hooks/a?x=1');
    expect(first?.headers['content-type']).toBe('application/json');
    expect(first?.headers['x-herald-signature']).toBe('sig');
    expect(first?.rawBody.equals(Buffer.from(text, 'utf8'))).toBe(true);
    expect(first?.rawBody.toString('utf8')).toBe(text);
    expect(second?.method).toBe('PUT');
    expect(second?.rawBody.equals(binary)).toBe(true);
    expect(second?.receivedAt).toBeGreaterThanOrEqual(first?.receivedAt ?? Number.POSITIVE_INFINITY);
  });

  it('answers scripted statuses in order, with their headers and bodies, then the default', async () => {
    const other = `https://hooks.test:${receiver.port}/moved`;
    receiver.script(
      { kind: 'status', status: 500, body: 'boom' },
      { kind: 'status', status: 429, headers: { 'retry-after': '7' } },
      { kind: 'status', status: 410, body: 'gone' },
      { kind: 'status', status: 301, headers: { location: other } },
    );
    const r500 = await post('/1');
    const r429 = await post('/2');
    const r410 = await post('/3');
    const r301 = await post('/4');
    const r200 = await post('/5');
    expect([r500.status, r429.status, r410.status, r301.status, r200.status]).toEqual([500, 429, 410, 301, 200]);
    expect(r500.body.toString()).toBe('boom');
    expect(r429.headers['retry-after']).toBe('7');
    expect(r410.body.toString()).toBe('gone');
    expect(r301.headers.location).toBe(other);
    expect(receiver.received.map((r) => r.path)).toEqual(['/1', '/2', '/3', '/4', '/5']);
  });

  it('uses setDefault() when the queue is empty, and byPath() over the queue without consuming it', async () => {
    receiver.setDefault({ kind: 'status', status: 503 });
    receiver.byPath('/special', { kind: 'status', status: 202 });
    receiver.script({ kind: 'status', status: 418 });
    expect((await post('/special?attempt=1')).status).toBe(202);
    expect((await post('/special')).status).toBe(202);
    expect((await post('/plain')).status).toBe(418);
    expect((await post('/plain')).status).toBe(503);
  });

  it('timeout: takes the request and never answers, until the client gives up after 300 ms', async () => {
    receiver.script({ kind: 'timeout' });
    const started = performance.now();
    const error = await failure(post('/slow', { body: 'x', signal: AbortSignal.timeout(300) }));
    const elapsed = performance.now() - started;
    expect(error.name).toMatch(/AbortError|TimeoutError/);
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(3000);
    expect(receiver.received).toHaveLength(1);
    expect(receiver.received[0]?.rawBody.toString()).toBe('x');
    expect((await post('/after')).status).toBe(200);
  });

  it('slow-body: sends the headers at once, then dribbles the body', async () => {
    receiver.script({ kind: 'slow-body', status: 200, chunkDelayMs: 60, chunks: 4 });
    const started = performance.now();
    const reply = await post('/dribble');
    expect(reply.status).toBe(200);
    expect(reply.body.toString()).toBe('chunk 0\nchunk 1\nchunk 2\nchunk 3\n');
    expect(reply.headersAt - started).toBeLessThan(reply.endAt - started);
    expect(reply.endAt - reply.headersAt).toBeGreaterThanOrEqual(4 * 60 - 30);
  });

  it('reset: reads the request, then resets the connection', async () => {
    receiver.script({ kind: 'reset' });
    const error = await failure(post('/reset', { body: 'payload' }));
    expect(error.code === 'ECONNRESET' || /socket hang up/.test(error.message)).toBe(true);
    expect(receiver.received[0]?.rawBody.toString()).toBe('payload');
    expect((await post('/after')).status).toBe(200);
  });

  it('keeps connections alive', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const replies = [];
      for (let i = 0; i < 3; i++) replies.push(await post(`/ka/${i}`, { agent }));
      expect(replies.map((r) => r.reusedSocket)).toEqual([false, true, true]);
    } finally {
      agent.destroy();
    }
  });

  it('serves its certificate on 127.0.0.1, [::1] and other names in it, and only to clients that trust the CA', async () => {
    expect((await send(`https://127.0.0.1:${receiver.port}/v4`, { ca: receiver.caPem })).status).toBe(200);
    expect((await send(`https://[::1]:${receiver.port}/v6`, { ca: receiver.caPem })).status).toBe(200);
    expect((await send(`https://127.0.0.1:${receiver.port}/sni`, { ca: receiver.caPem, servername: 'hooks.test' })).status).toBe(200);
    const wrongName = await failure(send(`https://127.0.0.1:${receiver.port}/sni`, { ca: receiver.caPem, servername: 'evil.test' }));
    expect(wrongName.code).toBe('ERR_TLS_CERT_ALTNAME_INVALID');
    const untrusted = await failure(send(`${receiver.url}/untrusted`, { ca: null }));
    expect(untrusted.code).toMatch(/UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_GET_ISSUER_CERT/);
    expect(receiver.received.map((r) => r.path)).toEqual(['/v4', '/v6', '/sni']);
  });

  it('waitFor() resolves once enough requests arrived, and rejects after its timeout', async () => {
    const waiting = receiver.waitFor(3, 5000);
    await Promise.all([post('/w/1'), post('/w/2'), post('/w/3')]);
    expect((await waiting).length).toBeGreaterThanOrEqual(3);
    await expect(receiver.waitFor(4, 100)).rejects.toThrow(/waited 100 ms for 4 request\(s\), got 3/);
  });

  it('close() destroys hanging connections', async () => {
    receiver.script({ kind: 'timeout' });
    const pending = failure(post('/hang'));
    await receiver.waitFor(1);
    const started = performance.now();
    await receiver.close();
    expect(performance.now() - started).toBeLessThan(1000);
    const error = await pending;
    expect(error.code === 'ECONNRESET' || /socket hang up/.test(error.message)).toBe(true);
  });

  it('handles a few thousand keep-alive requests quickly', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 16 });
    try {
      const total = 2000;
      let next = 0;
      const worker = async () => {
        while (next < total) {
          const i = next++;
          const reply = await post(`/load/${i}`, { agent, body: `{"n":${i}}` });
          if (reply.status !== 200) throw new Error(`status ${reply.status}`);
        }
      };
      await Promise.all(Array.from({ length: 16 }, worker));
      const received = await receiver.waitFor(total);
      expect(received).toHaveLength(total);
      expect(new Set(received.map((r) => r.path)).size).toBe(total);
    } finally {
      agent.destroy();
    }
  });
});

describe('test DNS (dns.ts)', () => {
  let dns: TestDns;
  let resolver: Resolver;
  beforeEach(async () => {
    dns = await startTestDns();
    resolver = new Resolver({ timeout: 2000, tries: 1 });
    resolver.setServers([dns.address]);
  });
  afterEach(async () => {
    await dns.close();
  });

  it('answers A, AAAA and TXT records', async () => {
    expect(dns.address).toMatch(/^127\.0\.0\.1:\d+$/);
    dns.set('hooks.test', { A: ['127.0.0.1', '10.1.2.3'], AAAA: ['::1', '2001:db8::7'], TXT: [['herald-verify=abc123'], ['two', 'parts'], ['naïve ✓']] });
    expect(await resolver.resolve4('hooks.test')).toEqual(['127.0.0.1', '10.1.2.3']);
    expect(await resolver.resolve6('hooks.test')).toEqual(['::1', '2001:db8::7']);
    // TXT strings go out as UTF-8 bytes; node:dns hands each byte back as one character (latin1).
    const asNodeReadsIt = Buffer.from('naïve ✓', 'utf8').toString('latin1');
    expect(await resolver.resolveTxt('hooks.test')).toEqual([['herald-verify=abc123'], ['two', 'parts'], [asNodeReadsIt]]);
  });

  it('matches names case-insensitively, with or without the trailing dot, and set() replaces', async () => {
    dns.set('Example.TEST.', { A: ['192.0.2.1'] });
    expect(await resolver.resolve4('example.test')).toEqual(['192.0.2.1']);
    expect(await resolver.resolve4('EXAMPLE.test.')).toEqual(['192.0.2.1']);
    dns.set('example.test', { A: ['192.0.2.2'] });
    expect(await resolver.resolve4('example.test')).toEqual(['192.0.2.2']);
  });

  it('answers NXDOMAIN for unknown names and no data for a known name without that type', async () => {
    dns.set('only-a.test', { A: ['127.0.0.1'] });
    expect((await failure(resolver.resolve4('unknown.test'))).code).toBe('ENOTFOUND');
    expect((await failure(resolver.resolveTxt('unknown.test'))).code).toBe('ENOTFOUND');
    expect((await failure(resolver.resolve6('only-a.test'))).code).toBe('ENODATA');
    expect((await failure(resolver.resolveTxt('only-a.test'))).code).toBe('ENODATA');
  });

  it('truncates large UDP answers and serves them in full over TCP', async () => {
    const big = Array.from({ length: 8 }, (_, i) => [`${i}:${'x'.repeat(200)}`]);
    dns.set('big.test', { TXT: big });
    // A raw UDP query gets the TC bit and no answers...
    const [host, port] = dns.address.split(':');
    const query = Buffer.from('1234' + '0100' + '0001' + '0000' + '0000' + '0000' + '03626967' + '0474657374' + '00' + '0010' + '0001', 'hex'); // id, RD, one question: big.test TXT IN;
    const socket = createSocket('udp4');
    const response = await new Promise<Buffer>((resolve) => {
      socket.once('message', (m: Buffer) => resolve(m));
      socket.send(query, Number(port), host);
    });
    socket.close();
    expect(response.readUInt16BE(0)).toBe(0x1234);
    expect(response.readUInt16BE(2) & 0x0200).toBe(0x0200);
    expect(response.readUInt16BE(6)).toBe(0);
    // ...so the resolver retries over TCP and gets everything.
    expect(await resolver.resolveTxt('big.test')).toEqual(big);
  });
});
