/**
 * `herald dev receiver`: an HTTPS callback receiver for one's own machine (docs/getting-started/receive-locally.md).
 * It serves a certificate of a throw-away CA, checks each callback's signatures as a customer's receiver
 * should (docs/guides/verify-signatures.md) and prints it. The CA certificate, the server certificate and
 * key, and the secret are kept in a directory, so a restarted receiver is still trusted by a herald that
 * was given the CA file; the CA's private key is never written anywhere.
 */
import { createHmac, randomBytes, timingSafeEqual, X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { signStandardWebhook } from '../delivery/signing.ts';
import { createCertificateAuthority } from './certificate-authority.ts';

/** A webhook-timestamp further than this from now is refused (a replay), as the example receivers do. */
export const TIMESTAMP_TOLERANCE_SECONDS = 5 * 60;
const MAX_BODY_BYTES = 1024 * 1024;
/** The receiver's certificate is made again when it expires within this. */
const RENEW_BEFORE_MS = 7 * 24 * 3600 * 1000;

export interface DevReceiverOptions {
  port: number;
  /** Address to listen on: loopback, so the receiver is reachable from this machine only. */
  host: string;
  /** Where the certificates and the generated secret are kept. */
  directory: string;
  /** The subscription's callbackSecretKey; when absent, one is made (and kept in the directory). */
  secret?: string;
  /** Where the lines go (stdout in the command). */
  print: (text: string) => void;
}

export interface DevReceiver {
  url: string;
  port: number;
  /** Absolute path of the CA certificate: herald's delivery.caFile. */
  caFile: string;
  secret: string;
  close(): Promise<void>;
}

export async function startDevReceiver(options: DevReceiverOptions): Promise<DevReceiver> {
  const directory = resolve(options.directory);
  mkdirSync(directory, { recursive: true, mode: 0o700 });
  const { caFile, certPem, keyPem } = await certificates(directory, options.host);
  const secret = options.secret ?? keptSecret(directory);
  const seen = new Set<string>();

  const server = createServer({ cert: certPem, key: keyPem }, (req, res) => {
    receive(req, res, secret, seen, options.print).catch(() => res.destroy());
  });
  await new Promise<void>((done, fail) => {
    server.once('error', fail);
    server.listen(options.port, options.host, () => done());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `https://localhost:${port}`,
    port,
    caFile,
    secret,
    close: () =>
      new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections();
      }),
  };
}

/** The kept certificates when still good for a week, else new ones from a new CA whose key is then dropped. */
async function certificates(directory: string, host: string): Promise<{ caFile: string; certPem: string; keyPem: string }> {
  const caFile = join(directory, 'ca.pem');
  const certFile = join(directory, 'cert.pem');
  const keyFile = join(directory, 'key.pem');
  if ([caFile, certFile, keyFile].every((file) => existsSync(file))) {
    const certPem = readFileSync(certFile, 'utf8');
    const certificate = new X509Certificate(certPem);
    if (Date.parse(certificate.validTo) - Date.now() > RENEW_BEFORE_MS && certificate.checkIP(host) !== undefined) {
      return { caFile, certPem, keyPem: readFileSync(keyFile, 'utf8') };
    }
  }
  const ca = await createCertificateAuthority('herald dev receiver CA');
  const { certPem, keyPem } = ca.issue(['localhost'], [host]);
  writeFileSync(caFile, ca.caPem);
  writeFileSync(certFile, certPem);
  writeFileSync(keyFile, keyPem, { mode: 0o600 });
  return { caFile, certPem, keyPem };
}

function keptSecret(directory: string): string {
  const file = join(directory, 'secret');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const secret = `dev-${randomBytes(16).toString('hex')}`;
  writeFileSync(file, `${secret}\n`, { mode: 0o600 });
  return secret;
}

/** What the signatures of a request say: ok, or what is wrong, in the words the receiver prints. */
export function checkSignatures(secret: string, headers: IncomingHttpHeaders, body: Buffer, nowSeconds: number): { ok: boolean; detail: string } {
  const header = (name: string) => (typeof headers[name] === 'string' ? (headers[name] as string) : undefined);
  const xSignature = createHmac('sha256', secret).update(body).digest('hex');
  const previous = same(xSignature, header('x-signature-previous'));
  if (!same(xSignature, header('x-signature')) && !previous) {
    return {
      ok: false,
      detail: header('x-signature')
        ? 'x-signature wrong (another secret, or the body was changed)'
        : 'x-signature missing (a subscription without callbackSecretKey?)',
    };
  }
  const id = header('webhook-id');
  const timestamp = header('webhook-timestamp');
  const signatures = header('webhook-signature');
  if (!id || !timestamp || !signatures) return { ok: false, detail: 'webhook-id, webhook-timestamp or webhook-signature missing' };
  const age = nowSeconds - Number(timestamp);
  if (!/^\d+$/.test(timestamp) || Math.abs(age) > TIMESTAMP_TOLERANCE_SECONDS)
    return { ok: false, detail: `webhook-timestamp ${age} s from now (at most ${TIMESTAMP_TOLERANCE_SECONDS})` };
  const expected = signStandardWebhook(Buffer.from(secret, 'utf8'), body, id, Number(timestamp))['webhook-signature'];
  if (!signatures.split(' ').some((signature) => same(expected, signature))) return { ok: false, detail: 'webhook-signature wrong' };
  return { ok: true, detail: previous ? 'signature ok (the previous secret, during a rotation)' : 'signature ok' };
}

function same(expected: string, received: string | undefined): boolean {
  const a = Buffer.from(expected);
  const b = Buffer.from(received ?? '');
  return a.length === b.length && timingSafeEqual(a, b);
}

async function receive(req: IncomingMessage, res: ServerResponse, secret: string, seen: Set<string>, print: (text: string) => void): Promise<void> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      res.writeHead(413).end();
      return;
    }
    chunks.push(chunk);
  }
  const body = Buffer.concat(chunks);
  const verdict = checkSignatures(secret, req.headers, body, Math.floor(Date.now() / 1000));
  const status = verdict.ok ? 204 : 401;
  res.writeHead(status).end(verdict.ok ? undefined : verdict.detail);

  let parsed: { idempotencyKey?: string; data?: { event?: string; isTest?: boolean } } | undefined;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    parsed = undefined;
  }
  const key = parsed?.idempotencyKey;
  const what = [
    parsed?.data?.event ?? 'not a callback body',
    parsed?.data?.isTest ? '(test callback)' : undefined,
    key ? `idempotencyKey ${key}` : undefined,
    key && seen.has(key) ? '(seen before: a retry or a resend)' : undefined,
    req.headers['x-callback-sequence'] !== undefined ? `sequence ${req.headers['x-callback-sequence']}` : undefined,
  ].filter(Boolean);
  if (key && verdict.ok) seen.add(key);
  const time = new Date().toISOString().slice(11, 19);
  print(`${time} ${req.method} ${req.url} ${what.join(' ')}: ${verdict.ok ? verdict.detail : `REFUSED, ${verdict.detail}`} -> ${status}`);
  print(parsed === undefined ? `  ${body.toString('utf8').slice(0, 500)}` : JSON.stringify(parsed, null, 2).replace(/^/gm, '  '));
}
