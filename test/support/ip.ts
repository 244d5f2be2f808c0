/**
 * IP address text to network-order bytes, for certificate SANs (tls.ts) and DNS answers (dns.ts).
 */
import { isIPv4, isIPv6 } from 'node:net';

/** 4 bytes for an IPv4 address, 16 for an IPv6 one (including '::ffff:1.2.3.4' forms); throws otherwise. */
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
