/**
 * A throw-away certificate authority: an ECDSA P-256 CA and server certificates signed by it, with
 * subjectAltName DNS names and IP addresses, for HTTPS on one's own machine (`herald dev receiver`, the
 * tests' receivers). Certificates are built as DER right here (node:crypto signs them), so no openssl
 * binary or extra package is needed, and issue() is synchronous and fast. The CA's private key never
 * leaves the process: once it is gone, nothing more can be signed with it.
 *
 * Validity: from 24 hours ago to 365 days from now, so a clock a little off never makes them "not yet
 * valid". Trust the CA with `ca: caPem` (node:https, tls, undici's Agent `connect: { ca }`), or give its
 * file to herald as delivery.caFile (HERALD_DELIVERY_CA_FILE).
 */
import { createHash, generateKeyPair, generateKeyPairSync, type KeyObject, randomBytes, sign } from 'node:crypto';
import { isIPv4, isIPv6 } from 'node:net';

export interface IssuedCertificate {
  /** The server certificate (PEM), signed by the CA; the CA itself is not appended. */
  certPem: string;
  /** Its private key (PKCS#8 PEM). */
  keyPem: string;
}

export interface CertificateAuthority {
  /** The CA certificate (PEM): what a client passes as `ca` to trust the issued certificates. */
  caPem: string;
  /** A server certificate for these DNS names and IP addresses (both go in subjectAltName). */
  issue(hostnames: string[], ips: string[]): IssuedCertificate;
}

const DAY_MS = 24 * 60 * 60 * 1000;

export async function createCertificateAuthority(commonName: string): Promise<CertificateAuthority> {
  const { publicKey, privateKey } = await new Promise<{ publicKey: KeyObject; privateKey: KeyObject }>((resolve, reject) => {
    generateKeyPair('ec', { namedCurve: 'P-256' }, (error, pub, priv) => (error ? reject(error) : resolve({ publicKey: pub, privateKey: priv })));
  });
  const caName = name(`${commonName} ${randomBytes(4).toString('hex')}`);
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

/**
 * IP address text to network-order bytes (certificate SANs, the tests' DNS answers): 4 bytes for an IPv4
 * address, 16 for an IPv6 one (including '::ffff:1.2.3.4' forms); throws otherwise.
 */
export function ipToBytes(ip: string): Buffer {
  if (isIPv4(ip)) return Buffer.from(ip.split('.').map(Number));
  if (!isIPv6(ip)) throw new Error(`not an IP address: '${ip}'`);
  let text = ip.includes('%') ? ip.slice(0, ip.indexOf('%')) : ip;
  const lastColon = text.lastIndexOf(':');
  const last = text.slice(lastColon + 1);
  if (isIPv4(last)) {
    // '::ffff:1.2.3.4' → '::ffff:102:304'
    const [a = 0, b = 0, c = 0, d = 0] = last.split('.').map(Number);
    text = `${text.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((h) => Number.parseInt(h, 16)));
  const doubleColon = text.indexOf('::');
  let groups: number[];
  if (doubleColon >= 0) {
    const head = parse(text.slice(0, doubleColon));
    const rest = parse(text.slice(doubleColon + 2));
    const zeros = 8 - head.length - rest.length;
    groups = [...head, ...new Array<number>(zeros).fill(0), ...rest];
  } else {
    groups = parse(text);
  }
  if (groups.length !== 8) throw new Error(`cannot parse IPv6 address '${ip}'`);
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => {
    out.writeUInt16BE(g, i * 2);
  });
  return out;
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
