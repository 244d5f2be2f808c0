/**
 * A throwaway certificate authority for tests: an ECDSA P-256 CA and server certificates signed by it,
 * with subjectAltName DNS names and IP addresses. Certificates are built as DER right here (node:crypto
 * signs them), so no openssl binary or extra package is needed, and issue() is synchronous and fast.
 *
 * Validity: from 24 hours ago to 365 days from now, so a clock a little off never makes them "not yet
 * valid". Trust the CA with `ca: caPem` (node:https, tls, undici's Agent `connect: { ca }`) or point
 * NODE_EXTRA_CA_CERTS / a config option at writeCaFile(caPem) for a child process.
 */
import { createHash, generateKeyPair, generateKeyPairSync, type KeyObject, randomBytes, sign } from 'node:crypto';
import { mkdirSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ipToBytes } from './ip.ts';

export interface IssuedCertificate {
  /** The server certificate (PEM), signed by the CA; the CA itself is not appended. */
  certPem: string;
  /** Its private key (PKCS#8 PEM). */
  keyPem: string;
}

export interface TestCa {
  /** The CA certificate (PEM): what a client passes as `ca` to trust the issued certificates. */
  caPem: string;
  /** A server certificate for these DNS names and IP addresses (both go in subjectAltName). */
  issue(hostnames: string[], ips: string[]): IssuedCertificate;
}

const DAY_MS = 24 * 60 * 60 * 1000;

export async function createTestCa(): Promise<TestCa> {
  const { publicKey, privateKey } = await new Promise<{ publicKey: KeyObject; privateKey: KeyObject }>((resolve, reject) => {
    generateKeyPair('ec', { namedCurve: 'P-256' }, (error, pub, priv) => (error ? reject(error) : resolve({ publicKey: pub, privateKey: priv })));
  });
  const caName = name(`herald test CA ${randomBytes(4).toString('hex')}`);
  const caSpki = publicKey.export({ type: 'spki', format: 'der' });
  const caKeyId = keyIdentifier(caSpki);
  const caPem = certificate({
    issuer: caName,
    subject: caName,
    spki: caSpki,
    signingKey: privateKey,
    extensions: [
      extension('2.5.29.19', true, seq(tlv(0x01, Buffer.from([0xff])))), // basicConstraints: cA TRUE
      extension('2.5.29.15', true, tlv(0x03, Buffer.from([0x01, 0x06]))), // keyUsage: keyCertSign, cRLSign
      extension('2.5.29.14', false, tlv(0x04, caKeyId)), // subjectKeyIdentifier
    ],
  });

  return {
    caPem,
    issue(hostnames: string[], ips: string[]): IssuedCertificate {
      if (hostnames.length + ips.length === 0) throw new Error('issue() needs at least one hostname or IP address');
      const leaf = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      const spki = leaf.publicKey.export({ type: 'spki', format: 'der' });
      const altNames = [...hostnames.map((h) => tlv(0x82, Buffer.from(h, 'ascii'))), ...ips.map((ip) => tlv(0x87, ipToBytes(ip)))];
      const certPem = certificate({
        issuer: caName,
        subject: name(hostnames[0] ?? ips[0] ?? 'test'),
        spki,
        signingKey: privateKey,
        extensions: [
          extension('2.5.29.19', true, seq()), // basicConstraints: not a CA
          extension('2.5.29.15', true, tlv(0x03, Buffer.from([0x07, 0x80]))), // keyUsage: digitalSignature
          extension('2.5.29.37', false, seq(oid('1.3.6.1.5.5.7.3.1'))), // extKeyUsage: serverAuth
          extension('2.5.29.17', false, seq(...altNames)), // subjectAltName
          extension('2.5.29.14', false, tlv(0x04, keyIdentifier(spki))),
          extension('2.5.29.35', false, seq(tlv(0x80, caKeyId))), // authorityKeyIdentifier
        ],
      });
      return { certPem, keyPem: leaf.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() };
    },
  };
}

const caDir = join(tmpdir(), 'herald-test-ca');
const written = new Set<string>();

/**
 * Writes the CA certificate to a temporary file and returns its path: tmpdir()/herald-test-ca/<hash>.pem,
 * named by content, so writing the same CA again returns the same file. Files are removed when the process
 * exits normally (test workers are often killed instead, so files older than two days are pruned here too).
 */
export function writeCaFile(caPem: string): string {
  mkdirSync(caDir, { recursive: true });
  if (written.size === 0) {
    process.once('exit', () => {
      for (const path of written) rmSync(path, { force: true });
    });
    const cutoff = Date.now() - 2 * DAY_MS;
    for (const file of readdirSync(caDir)) {
      const path = join(caDir, file);
      try {
        if (statSync(path).mtimeMs < cutoff) rmSync(path, { force: true });
      } catch {
        // another process pruned it first
      }
    }
  }
  const path = join(caDir, `${createHash('sha256').update(caPem).digest('hex').slice(0, 32)}.pem`);
  if (!written.has(path)) {
    const temporary = `${path}.${process.pid}.tmp`;
    writeFileSync(temporary, caPem);
    renameSync(temporary, path); // atomic: a reader never sees half a file
    written.add(path);
  }
  return path;
}

// ---------------------------------------------------------------------------------------------------
// Just enough DER to write an X.509 v3 certificate.

function certificate(c: { issuer: Buffer; subject: Buffer; spki: Buffer; signingKey: KeyObject; extensions: Buffer[] }): string {
  const serial = randomBytes(16);
  serial[0] = (serial[0] ?? 0) & 0x7f || 0x01; // positive, and no leading zero byte
  const now = Date.now();
  const ecdsaWithSha256 = seq(oid('1.2.840.10045.4.3.2'));
  const tbs = seq(
    tlv(0xa0, tlv(0x02, Buffer.from([2]))), // version v3
    tlv(0x02, serial),
    ecdsaWithSha256,
    c.issuer,
    seq(time(new Date(now - DAY_MS)), time(new Date(now + 365 * DAY_MS))),
    c.subject,
    c.spki,
    tlv(0xa3, seq(...c.extensions)),
  );
  const signature = sign('sha256', tbs, c.signingKey); // DER ECDSA-Sig-Value
  const der = seq(tbs, ecdsaWithSha256, tlv(0x03, Buffer.from([0]), signature));
  const base64 = der.toString('base64').replace(/.{64}/g, '$&\n');
  return `-----BEGIN CERTIFICATE-----\n${base64}${base64.endsWith('\n') ? '' : '\n'}-----END CERTIFICATE-----\n`;
}

function tlv(tag: number, ...content: Buffer[]): Buffer {
  const body = Buffer.concat(content);
  let length: Buffer;
  if (body.length < 0x80) {
    length = Buffer.from([body.length]);
  } else {
    const bytes: number[] = [];
    for (let n = body.length; n > 0; n = Math.floor(n / 256)) bytes.unshift(n & 0xff);
    length = Buffer.from([0x80 | bytes.length, ...bytes]);
  }
  return Buffer.concat([Buffer.from([tag]), length, body]);
}

function seq(...content: Buffer[]): Buffer {
  return tlv(0x30, ...content);
}

function oid(dotted: string): Buffer {
  const [first = 0, second = 0, ...rest] = dotted.split('.').map(Number);
  const bytes = [first * 40 + second];
  for (const arc of rest) {
    const encoded = [arc & 0x7f];
    for (let v = Math.floor(arc / 128); v > 0; v = Math.floor(v / 128)) encoded.unshift((v & 0x7f) | 0x80);
    bytes.push(...encoded);
  }
  return tlv(0x06, Buffer.from(bytes));
}

/** A Name with a single commonName (UTF8String). */
function name(commonName: string): Buffer {
  return seq(tlv(0x31, seq(oid('2.5.4.3'), tlv(0x0c, Buffer.from(commonName, 'utf8')))));
}

/** UTCTime up to 2049, GeneralizedTime after, as RFC 5280 asks. */
function time(date: Date): Buffer {
  const digits = date.toISOString().slice(0, 19).replace(/[-:T]/g, ''); // YYYYMMDDHHMMSS
  const year = date.getUTCFullYear();
  return year < 2050 ? tlv(0x17, Buffer.from(`${digits.slice(2)}Z`)) : tlv(0x18, Buffer.from(`${digits}Z`));
}

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return critical ? seq(oid(id), tlv(0x01, Buffer.from([0xff])), tlv(0x04, value)) : seq(oid(id), tlv(0x04, value));
}

function keyIdentifier(spki: Buffer): Buffer {
  return createHash('sha1').update(spki).digest();
}
