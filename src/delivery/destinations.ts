/**
 * Which IP addresses a callback may connect to (docs/reference/events/README.md#delivery). Judged on the
 * address the socket is about to connect to, after DNS, so a host that resolves to an internal address
 * (DNS rebinding) is refused like a literal one.
 *
 * Every address is handled as 16 bytes, an IPv4 address as its IPv4-mapped IPv6 form (::ffff:a.b.c.d): one
 * matcher then covers both families, and ::ffff:10.0.0.1 cannot differ from 10.0.0.1. net.BlockList is not
 * used for matching because whether it treats a mapped address as the IPv4 one depends on the Node version.
 */
import { isIP } from 'node:net';

export type RefusalReason =
  | 'loopback'
  | 'private'
  | 'carrier-grade-nat'
  | 'link-local'
  | 'metadata'
  | 'multicast'
  | 'unique-local'
  | 'unspecified'
  | 'reserved'
  | 'documentation'
  | 'benchmarking'
  | 'tunnel'
  | 'broadcast';

interface Network {
  base: Uint8Array;
  prefix: number; // in bits of the 16-byte form
}

/**
 * Why an address is refused (undefined = public, allowed). Handles IPv4, IPv6 and IPv4-mapped/compatible IPv6
 * (::ffff:10.0.0.1 is judged as 10.0.0.1), also NAT64 64:ff9b::/96 and 6to4 2002::/16 by their embedded IPv4.
 */
export function refusalReason(ip: string): RefusalReason | undefined {
  const parsed = parseAddress(ip);
  // Never allow what we cannot parse: the connecting code might read it differently from us.
  return parsed ? judge(parsed) : 'reserved';
}

function judge(parsed: Uint8Array): RefusalReason | undefined {
  const address = embeddedIPv4(parsed) ?? parsed;
  for (const [network, reason] of REFUSED) {
    if (contains(network, address)) return reason;
  }
  // Only 2000::/3 is allocated for global unicast; the rest of IPv6 (site-local fec0::/10, discard-only
  // 100::/64, local-use NAT64 64:ff9b:1::/48, ...) reaches nothing public, so it is not let through.
  if (!contains(IPV4_MAPPED, address) && !contains(GLOBAL_UNICAST, address)) return 'reserved';
  return undefined;
}

/** Networks allowed despite refusalReason: the operator's (delivery.allowNetworks) plus a customer's own. */
export class NetworkList {
  readonly #networks: Network[];

  /** Each entry is address/prefix; a bare address is one host. Throws on the first malformed entry. */
  constructor(cidrs: readonly string[]) {
    this.#networks = cidrs.map(parseNetwork);
  }

  has(ip: string): boolean {
    const address = parseAddress(ip);
    return address !== undefined && this.contains(address);
  }

  contains(address: Uint8Array): boolean {
    return this.#networks.some((network) => contains(network, address));
  }
}

/**
 * The single decision: allowed when refusalReason is undefined, or when the address is on the allow list
 * and, if it carries an IPv4 address the packets end up at (Teredo client, 6to4, NAT64, IPv4-compatible),
 * that address is allowed too: allow-listing 2001::/32 for one Teredo peer must not open the way to a
 * private IPv4 address hidden in another.
 */
export function checkDestination(ip: string, allow: NetworkList): { allowed: true } | { allowed: false; reason: RefusalReason } {
  const address = parseAddress(ip);
  if (!address) return { allowed: false, reason: 'reserved' };
  if (allow.contains(address)) {
    const carried = teredoClient(address) ?? embeddedIPv4(address);
    if (carried === undefined || allow.contains(carried)) return { allowed: true };
    const reason = judge(carried);
    return reason === undefined ? { allowed: true } : { allowed: false, reason };
  }
  const reason = judge(address);
  return reason === undefined ? { allowed: true } : { allowed: false, reason };
}

/** 16 bytes, or undefined when `text` is not one IP address. Accepts [brackets] and an IPv6 %zone. */
function parseAddress(text: string): Uint8Array | undefined {
  const unbracketed = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  // net.isIP is strict (no octal, hex or short IPv4 forms such as 0x7f.1, which inet_aton would read).
  const family = isIP(unbracketed);
  if (family === 4 && unbracketed === text) return mapIPv4(unbracketed.split('.').map(Number));
  if (family !== 6) return undefined;
  // The zone only picks an interface; the address alone decides where the connection goes.
  return parseIPv6(unbracketed.replace(/%.*$/, ''));
}

function mapIPv4(octets: number[]): Uint8Array {
  const bytes = new Uint8Array(16);
  bytes[10] = 0xff;
  bytes[11] = 0xff;
  bytes.set(octets, 12);
  return bytes;
}

/** `text` must already have passed isIP(text) === 6. */
function parseIPv6(text: string): Uint8Array {
  const groups = (part: string) => (part === '' ? [] : part.split(':'));
  const words = (part: string): number[] =>
    groups(part).flatMap((group) => {
      if (!group.includes('.')) return [Number.parseInt(group, 16)];
      const [a = 0, b = 0, c = 0, d = 0] = group.split('.').map(Number); // trailing dotted IPv4
      return [(a << 8) | b, (c << 8) | d];
    });
  const gap = text.indexOf('::');
  const head = words(gap < 0 ? text : text.slice(0, gap));
  const tail = gap < 0 ? [] : words(text.slice(gap + 2));
  const all = [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
  const bytes = new Uint8Array(16);
  all.forEach((word, i) => {
    bytes[2 * i] = word >> 8;
    bytes[2 * i + 1] = word & 0xff;
  });
  return bytes;
}

function parseNetwork(cidr: string): Network {
  const fail = (why: string) => new Error(`'${cidr}' is not a network: ${why}`);
  const [address = '', prefixText, ...rest] = cidr.trim().split('/');
  if (rest.length > 0) throw fail('more than one "/"');
  const family = isIP(address);
  if (family === 0) throw fail(`'${address}' is not an IPv4 or IPv6 address`);
  const bits = family === 4 ? 32 : 128;
  if (prefixText !== undefined && !/^\d{1,3}$/.test(prefixText)) throw fail(`the prefix '${prefixText}' is not a whole number`);
  const prefix = prefixText === undefined ? bits : Number(prefixText);
  if (prefix > bits) throw fail(`the prefix must be 0..${bits} for IPv${family}`);
  const base = parseAddress(address);
  if (!base) throw fail(`'${address}' is not an IPv4 or IPv6 address`);
  // Host bits after the prefix are ignored (10.1.2.3/8 is 10.0.0.0/8), as BlockList and Go's ParseCIDR do.
  return { base, prefix: family === 4 ? 96 + prefix : prefix };
}

function contains(network: Network, address: Uint8Array): boolean {
  const whole = network.prefix >> 3;
  for (let i = 0; i < whole; i++) {
    if (network.base[i] !== address[i]) return false;
  }
  const rest = network.prefix & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return (((network.base[whole] ?? 0) ^ (address[whole] ?? 0)) & mask) === 0;
}

const IPV4_MAPPED = parseNetwork('::ffff:0:0/96');
const IPV4_COMPATIBLE = parseNetwork('::/96');
const NAT64 = parseNetwork('64:ff9b::/96');
const SIX_TO_FOUR = parseNetwork('2002::/16');
const TEREDO = parseNetwork('2001::/32');
const GLOBAL_UNICAST = parseNetwork('2000::/3');

/**
 * The IPv4 address an IPv6 one stands for, mapped, when the packets may end up there: IPv4-compatible
 * (deprecated, some stacks still route it), NAT64 (the translator sits inside our network and connects on our
 * behalf) and 6to4 (the IPv4 is the tunnel end point). ::ffff:a.b.c.d needs nothing: it is the mapped form.
 * Teredo is not here: its range is refused whatever it carries (see teredoClient).
 */
function embeddedIPv4(address: Uint8Array): Uint8Array | undefined {
  if (contains(IPV4_COMPATIBLE, address)) {
    // :: and ::1 are the IPv6 unspecified and loopback addresses, not 0.0.0.0 and 0.0.0.1.
    return (address[15] ?? 0) <= 1 && address.subarray(12, 15).every((byte) => byte === 0) ? undefined : mapIPv4([...address.subarray(12)]);
  }
  if (contains(NAT64, address)) return mapIPv4([...address.subarray(12)]);
  if (contains(SIX_TO_FOUR, address)) return mapIPv4([...address.subarray(2, 6)]);
  return undefined;
}

/** The client of a Teredo address (RFC 4380 section 4): its IPv4 address, obfuscated (every bit flipped), in the last 32 bits. */
function teredoClient(address: Uint8Array): Uint8Array | undefined {
  if (!contains(TEREDO, address)) return undefined;
  return mapIPv4([...address.subarray(12)].map((byte) => byte ^ 0xff));
}

/**
 * THE table of refused ranges, each with the RFC that sets it aside. First match wins: the single metadata
 * hosts sit inside wider ranges (169.254/16, 100.64/10, fc00::/7) and the broadcast address inside 240/4, and
 * the more specific reason is the more useful one in the operator's log. Besides this table, IPv6 outside
 * 2000::/3 is refused as reserved (see refusalReason), and IPv6 forms that carry an IPv4 address are judged
 * by that address (see embeddedIPv4 and checkDestination).
 */
export const REFUSED_RANGES: readonly { cidr: string; reason: RefusalReason; rfc: string }[] = [
  { cidr: '169.254.169.254/32', reason: 'metadata', rfc: 'RFC 3927' }, // AWS, GCP, Azure, OpenStack, ... (inside link-local)
  { cidr: '100.100.100.200/32', reason: 'metadata', rfc: 'RFC 6598' }, // Alibaba Cloud (inside shared address space)
  { cidr: 'fd00:ec2::254/128', reason: 'metadata', rfc: 'RFC 4193' }, // AWS over IPv6 (inside unique-local)
  { cidr: '255.255.255.255/32', reason: 'broadcast', rfc: 'RFC 919' },
  { cidr: '0.0.0.0/8', reason: 'unspecified', rfc: 'RFC 1122' },
  { cidr: '::/128', reason: 'unspecified', rfc: 'RFC 4291' },
  { cidr: '127.0.0.0/8', reason: 'loopback', rfc: 'RFC 1122' },
  { cidr: '::1/128', reason: 'loopback', rfc: 'RFC 4291' },
  { cidr: '10.0.0.0/8', reason: 'private', rfc: 'RFC 1918' },
  { cidr: '172.16.0.0/12', reason: 'private', rfc: 'RFC 1918' },
  { cidr: '192.168.0.0/16', reason: 'private', rfc: 'RFC 1918' },
  { cidr: '100.64.0.0/10', reason: 'carrier-grade-nat', rfc: 'RFC 6598' },
  { cidr: '169.254.0.0/16', reason: 'link-local', rfc: 'RFC 3927' },
  { cidr: 'fe80::/10', reason: 'link-local', rfc: 'RFC 4291' },
  { cidr: '192.0.0.0/24', reason: 'reserved', rfc: 'RFC 6890' }, // IETF protocol assignments
  { cidr: '240.0.0.0/4', reason: 'reserved', rfc: 'RFC 1112' },
  { cidr: '192.0.2.0/24', reason: 'documentation', rfc: 'RFC 5737' },
  { cidr: '198.51.100.0/24', reason: 'documentation', rfc: 'RFC 5737' },
  { cidr: '203.0.113.0/24', reason: 'documentation', rfc: 'RFC 5737' },
  { cidr: '2001:db8::/32', reason: 'documentation', rfc: 'RFC 3849' },
  { cidr: '3fff::/20', reason: 'documentation', rfc: 'RFC 9637' },
  { cidr: '198.18.0.0/15', reason: 'benchmarking', rfc: 'RFC 2544' },
  { cidr: '2001:2::/48', reason: 'benchmarking', rfc: 'RFC 5180' },
  // Teredo: packets go through a relay to the client behind its NAT, whose address is hidden in the last
  // 32 bits; refused as a whole, and judged by that client address when an allow-list lets it through.
  { cidr: '2001::/32', reason: 'tunnel', rfc: 'RFC 4380' },
  // The 6to4 relay anycast: whichever relay is nearest, possibly one on the operator's own network.
  { cidr: '192.88.99.0/24', reason: 'tunnel', rfc: 'RFC 7526' },
  { cidr: '2001:10::/28', reason: 'reserved', rfc: 'RFC 4843' }, // ORCHID (deprecated): identifiers, not locators
  { cidr: '224.0.0.0/4', reason: 'multicast', rfc: 'RFC 5771' },
  { cidr: 'ff00::/8', reason: 'multicast', rfc: 'RFC 4291' },
  { cidr: 'fc00::/7', reason: 'unique-local', rfc: 'RFC 4193' },
];

const REFUSED: [Network, RefusalReason][] = REFUSED_RANGES.map(({ cidr, reason }) => [parseNetwork(cidr), reason]);
