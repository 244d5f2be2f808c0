import { describe, expect, it } from 'vitest';
import { checkDestination, NetworkList, REFUSED_RANGES, type RefusalReason, refusalReason } from './destinations.ts';

// First, a middle and the last address of every refused range.
const refused: [string, RefusalReason][] = [
  ['0.0.0.0', 'unspecified'],
  ['0.1.2.3', 'unspecified'],
  ['0.255.255.255', 'unspecified'],
  ['10.0.0.0', 'private'],
  ['10.20.30.40', 'private'],
  ['10.255.255.255', 'private'],
  ['172.16.0.0', 'private'],
  ['172.20.1.1', 'private'],
  ['172.31.255.255', 'private'],
  ['192.168.0.0', 'private'],
  ['192.168.1.1', 'private'],
  ['192.168.255.255', 'private'],
  ['100.64.0.0', 'carrier-grade-nat'],
  ['100.100.0.1', 'carrier-grade-nat'],
  ['100.127.255.255', 'carrier-grade-nat'],
  ['127.0.0.0', 'loopback'],
  ['127.0.0.1', 'loopback'],
  ['127.255.255.255', 'loopback'],
  ['169.254.0.0', 'link-local'],
  ['169.254.1.1', 'link-local'],
  ['169.254.255.255', 'link-local'],
  ['169.254.169.253', 'link-local'],
  ['169.254.169.254', 'metadata'],
  ['100.100.100.200', 'metadata'],
  ['100.100.100.201', 'carrier-grade-nat'],
  ['192.0.0.0', 'reserved'],
  ['192.0.0.8', 'reserved'],
  ['192.0.0.255', 'reserved'],
  ['192.0.2.0', 'documentation'],
  ['192.0.2.128', 'documentation'],
  ['192.0.2.255', 'documentation'],
  ['198.51.100.0', 'documentation'],
  ['198.51.100.7', 'documentation'],
  ['198.51.100.255', 'documentation'],
  ['203.0.113.0', 'documentation'],
  ['203.0.113.99', 'documentation'],
  ['203.0.113.255', 'documentation'],
  ['198.18.0.0', 'benchmarking'],
  ['198.18.255.255', 'benchmarking'],
  ['198.19.0.0', 'benchmarking'],
  ['198.19.255.255', 'benchmarking'],
  ['224.0.0.0', 'multicast'],
  ['230.1.2.3', 'multicast'],
  ['239.255.255.255', 'multicast'],
  ['240.0.0.0', 'reserved'],
  ['250.1.2.3', 'reserved'],
  ['255.255.255.254', 'reserved'],
  ['255.255.255.255', 'broadcast'],
  ['::', 'unspecified'],
  ['::1', 'loopback'],
  ['0:0:0:0:0:0:0:1', 'loopback'],
  ['fe80::', 'link-local'],
  ['fe80::1', 'link-local'],
  ['fe80::1%eth0', 'link-local'],
  ['fe9a::1234', 'link-local'],
  ['febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'link-local'],
  ['fc00::', 'unique-local'],
  ['fd12:3456:789a::1', 'unique-local'],
  ['FD00::1', 'unique-local'],
  ['fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'unique-local'],
  ['fd00:ec2::254', 'metadata'],
  ['fd00:ec2::253', 'unique-local'],
  ['ff00::', 'multicast'],
  ['ff02::1', 'multicast'],
  ['ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'multicast'],
  ['2001:db8::', 'documentation'],
  ['2001:db8:1234::5', 'documentation'],
  ['2001:db8:ffff:ffff:ffff:ffff:ffff:ffff', 'documentation'],
  ['3fff::', 'documentation'], // RFC 9637
  ['3fff:abc:1::7', 'documentation'],
  ['3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff', 'documentation'],
  ['2001:2::', 'benchmarking'], // RFC 5180
  ['2001:2:0:12::34', 'benchmarking'],
  ['2001:2:0:ffff:ffff:ffff:ffff:ffff', 'benchmarking'],
  ['2001::', 'tunnel'], // Teredo, RFC 4380, whatever client it carries
  ['2001:0:4136:e378:8000:63bf:f7f7:f7f7', 'tunnel'], // client 8.8.8.8: refused all the same
  ['2001:0:ffff:ffff:ffff:ffff:ffff:ffff', 'tunnel'],
  ['192.88.99.0', 'tunnel'], // 6to4 relay anycast, RFC 7526
  ['192.88.99.1', 'tunnel'],
  ['192.88.99.255', 'tunnel'],
  ['2001:10::', 'reserved'], // ORCHID, RFC 4843
  ['2001:18:1::1', 'reserved'],
  ['2001:1f:ffff:ffff:ffff:ffff:ffff:ffff', 'reserved'],
];

// IPv6 forms that carry an IPv4 address are judged by that address.
const embedded: [string, RefusalReason | undefined][] = [
  ['::ffff:127.0.0.1', 'loopback'],
  ['::ffff:7f00:1', 'loopback'],
  ['::FFFF:7F00:0001', 'loopback'],
  ['0:0:0:0:0:ffff:127.0.0.1', 'loopback'],
  ['[::ffff:169.254.169.254]', 'metadata'],
  ['::ffff:a9fe:a9fe', 'metadata'],
  ['::ffff:10.0.0.1', 'private'],
  ['::ffff:0.0.0.0', 'unspecified'],
  ['::ffff:255.255.255.255', 'broadcast'],
  ['::ffff:8.8.8.8', undefined],
  ['::127.0.0.1', 'loopback'], // IPv4-compatible
  ['::7f00:1', 'loopback'],
  ['::10.1.2.3', 'private'],
  ['::0.0.0.2', 'unspecified'],
  ['::8.8.8.8', undefined],
  ['64:ff9b::10.0.0.1', 'private'], // NAT64
  ['64:ff9b::a9fe:a9fe', 'metadata'],
  ['64:ff9b::127.0.0.1', 'loopback'],
  ['64:ff9b::8.8.8.8', undefined],
  ['2002:c0a8:0101::1', 'private'], // 6to4 of 192.168.1.1
  ['2002:7f00:1::', 'loopback'],
  ['2002:808:808::1', undefined],
];

const allowed = [
  '8.8.8.8',
  '1.1.1.1',
  '93.184.216.34',
  '9.255.255.255', // just below 10/8
  '11.0.0.0', // just above
  '172.15.255.255',
  '172.32.0.0',
  '192.167.255.255',
  '192.169.0.0',
  '100.63.255.255',
  '100.128.0.0',
  '126.255.255.255',
  '128.0.0.0',
  '169.253.255.255',
  '169.255.0.0',
  '192.0.1.0',
  '192.0.3.0',
  '198.17.255.255',
  '198.20.0.0',
  '198.51.99.255',
  '198.51.101.0',
  '203.0.112.255',
  '203.0.114.0',
  '223.255.255.255',
  '2606:4700:4700::1111',
  '2001:4860:4860::8888',
  '[2606:4700:4700::1111]',
  '2001:db7:ffff:ffff:ffff:ffff:ffff:ffff', // just below 2001:db8::/32
  '2001:db9::',
  '2a00:1450:4001:80b::200e',
  '192.88.98.255', // around 192.88.99.0/24
  '192.88.100.0',
  '2001:1:ffff:ffff:ffff:ffff:ffff:ffff', // between Teredo 2001::/32 and 2001:2::/48
  '2001:2:1::', // just above 2001:2::/48
  '2001:f:ffff:ffff:ffff:ffff:ffff:ffff', // just below 2001:10::/28
  '2001:20::', // just above (ORCHIDv2, RFC 7343, is globally reachable)
  '3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff', // just below 3fff::/20
  '3fff:1000::',
];

// Outside 2000::/3 nothing is public; these are not in the named ranges but must not get through either.
const otherNonGlobalIPv6 = ['fec0::1', '100::1', '64:ff9b:1::a00:1', '::ffff:0:a00:1', '4000::1', 'e000::1', 'fb00::1', '1::'];

const garbage = [
  '',
  'localhost',
  'example.com',
  '127.1', // inet_aton would read this as 127.0.0.1
  '0x7f.0.0.1',
  '0177.0.0.1',
  '010.0.0.1',
  '2130706433',
  '256.0.0.1',
  '1.2.3',
  '1.2.3.4.5',
  ' 8.8.8.8',
  '8.8.8.8 ',
  '[8.8.8.8]',
  '8.8.8.8:443',
  '[::1]:443',
  ':::1',
  '1::2::3',
  'gggg::1',
  '2606:4700:4700::1111/128',
];

describe('refusalReason', () => {
  it.each(refused)('%s is refused as %s', (ip, reason) => {
    expect(refusalReason(ip)).toBe(reason);
  });

  it.each(embedded)('%s is judged by its IPv4 address: %s', (ip, reason) => {
    expect(refusalReason(ip)).toBe(reason);
  });

  it.each(allowed)('%s is public', (ip) => {
    expect(refusalReason(ip)).toBeUndefined();
  });

  it.each(otherNonGlobalIPv6)('%s (outside 2000::/3) is reserved', (ip) => {
    expect(refusalReason(ip)).toBe('reserved');
  });

  it.each(garbage)('%j is not an IP address, so it is refused as reserved', (ip) => {
    expect(refusalReason(ip)).toBe('reserved');
  });
});

describe('the table of refused ranges', () => {
  it.each(REFUSED_RANGES.map((r) => [r.cidr, r.rfc, r.reason] as const))('%s (%s) is refused as %s', (cidr, rfc, reason) => {
    expect(rfc).toMatch(/^RFC \d+$/);
    const base = cidr.split('/')[0] as string;
    expect(refusalReason(base)).toBe(reason);
  });

  it('names every range once', () => {
    expect(new Set(REFUSED_RANGES.map((r) => r.cidr)).size).toBe(REFUSED_RANGES.length);
  });
});

describe('NetworkList', () => {
  it('matches addresses inside its networks only', () => {
    const list = new NetworkList(['10.1.0.0/16', '2001:db8:abcd::/48', '192.0.2.7']);
    expect(list.has('10.1.0.0')).toBe(true);
    expect(list.has('10.1.255.255')).toBe(true);
    expect(list.has('10.2.0.0')).toBe(false);
    expect(list.has('10.0.255.255')).toBe(false);
    expect(list.has('2001:db8:abcd:ffff::1')).toBe(true);
    expect(list.has('2001:db8:abce::1')).toBe(false);
    expect(list.has('192.0.2.7')).toBe(true); // a bare address is one host
    expect(list.has('192.0.2.8')).toBe(false);
  });

  it('treats an IPv4 address and its mapped IPv6 form as the same address', () => {
    expect(new NetworkList(['10.0.0.0/8']).has('::ffff:10.9.9.9')).toBe(true);
    expect(new NetworkList(['::ffff:10.0.0.0/104']).has('10.9.9.9')).toBe(true);
  });

  it('handles prefixes that do not end on a byte boundary', () => {
    const list = new NetworkList(['172.16.0.0/12', 'fe80::/10']);
    expect(list.has('172.31.255.255')).toBe(true);
    expect(list.has('172.32.0.0')).toBe(false);
    expect(list.has('febf::1')).toBe(true);
    expect(list.has('fec0::1')).toBe(false);
  });

  it('ignores host bits after the prefix', () => {
    expect(new NetworkList(['10.1.2.3/8']).has('10.200.0.1')).toBe(true);
  });

  it('can hold everything, and nothing', () => {
    expect(new NetworkList(['0.0.0.0/0']).has('127.0.0.1')).toBe(true);
    expect(new NetworkList(['0.0.0.0/0']).has('::1')).toBe(false);
    expect(new NetworkList(['::/0']).has('::1')).toBe(true);
    expect(new NetworkList([]).has('8.8.8.8')).toBe(false);
  });

  it('never contains garbage', () => {
    expect(new NetworkList(['0.0.0.0/0', '::/0']).has('localhost')).toBe(false);
  });

  it.each([
    ['10.0.0.0/33', "'10.0.0.0/33' is not a network: the prefix must be 0..32 for IPv4"],
    ['::/129', "'::/129' is not a network: the prefix must be 0..128 for IPv6"],
    ['10.0.0.0/', "'10.0.0.0/' is not a network: the prefix '' is not a whole number"],
    ['10.0.0.0/-1', "'10.0.0.0/-1' is not a network: the prefix '-1' is not a whole number"],
    ['10.0.0.0/8/8', `'10.0.0.0/8/8' is not a network: more than one "/"`],
    ['10.0.0/8', "'10.0.0/8' is not a network: '10.0.0' is not an IPv4 or IPv6 address"],
    ['localhost/32', "'localhost/32' is not a network: 'localhost' is not an IPv4 or IPv6 address"],
    ['', "'' is not a network: '' is not an IPv4 or IPv6 address"],
  ])('refuses %j', (cidr, message) => {
    expect(() => new NetworkList(['127.0.0.1/32', cidr])).toThrow(message);
  });
});

describe('checkDestination', () => {
  const none = new NetworkList([]);
  const local = new NetworkList(['127.0.0.1/32', '::1/128']);

  it('allows public addresses and refuses the rest with a reason', () => {
    expect(checkDestination('8.8.8.8', none)).toEqual({ allowed: true });
    expect(checkDestination('2606:4700:4700::1111', none)).toEqual({ allowed: true });
    expect(checkDestination('127.0.0.1', none)).toEqual({ allowed: false, reason: 'loopback' });
    expect(checkDestination('169.254.169.254', none)).toEqual({ allowed: false, reason: 'metadata' });
    expect(checkDestination('not an ip', none)).toEqual({ allowed: false, reason: 'reserved' });
  });

  it('lets exactly the allow-listed addresses through', () => {
    expect(checkDestination('127.0.0.1', local)).toEqual({ allowed: true });
    expect(checkDestination('::1', local)).toEqual({ allowed: true });
    expect(checkDestination('::ffff:127.0.0.1', local)).toEqual({ allowed: true }); // the same socket address
    expect(checkDestination('127.0.0.2', local)).toEqual({ allowed: false, reason: 'loopback' });
    expect(checkDestination('10.0.0.1', local)).toEqual({ allowed: false, reason: 'private' });
    expect(checkDestination('169.254.169.254', local)).toEqual({ allowed: false, reason: 'metadata' });
    expect(checkDestination('8.8.8.8', local)).toEqual({ allowed: true });
  });

  // Teredo puts the client's IPv4 address, every bit flipped, in the last 32 bits.
  const teredo = (client: string) => {
    const [a = 0, b = 0, c = 0, d = 0] = client.split('.').map((n) => Number(n) ^ 0xff);
    return `2001:0:4136:e378:8000:63bf:${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  };

  it('an allow-listed Teredo address passes only when the client address it carries does', () => {
    const teredoAllowed = new NetworkList(['2001::/32']);
    expect(teredo('127.0.0.1')).toBe('2001:0:4136:e378:8000:63bf:80ff:fffe');
    expect(checkDestination(teredo('8.8.8.8'), none)).toEqual({ allowed: false, reason: 'tunnel' });
    expect(checkDestination(teredo('8.8.8.8'), teredoAllowed)).toEqual({ allowed: true });
    expect(checkDestination(teredo('127.0.0.1'), teredoAllowed)).toEqual({ allowed: false, reason: 'loopback' });
    expect(checkDestination(teredo('10.1.2.3'), teredoAllowed)).toEqual({ allowed: false, reason: 'private' });
    expect(checkDestination(teredo('169.254.169.254'), teredoAllowed)).toEqual({ allowed: false, reason: 'metadata' });
    // ... unless the client's own network is allow-listed as well.
    expect(checkDestination(teredo('10.1.2.3'), new NetworkList(['2001::/32', '10.0.0.0/8']))).toEqual({ allowed: true });
  });

  it('allow-listing a 6to4, NAT64 or IPv4-compatible range does not open the private IPv4 addresses it carries', () => {
    expect(checkDestination('2002:c0a8:0101::1', new NetworkList(['2002::/16']))).toEqual({ allowed: false, reason: 'private' });
    expect(checkDestination('2002:808:808::1', new NetworkList(['2002::/16']))).toEqual({ allowed: true });
    expect(checkDestination('64:ff9b::127.0.0.1', new NetworkList(['64:ff9b::/96']))).toEqual({ allowed: false, reason: 'loopback' });
    expect(checkDestination('64:ff9b::8.8.8.8', new NetworkList(['64:ff9b::/96']))).toEqual({ allowed: true });
    expect(checkDestination('::10.1.2.3', new NetworkList(['::/96']))).toEqual({ allowed: false, reason: 'private' });
    expect(checkDestination('64:ff9b::10.1.2.3', new NetworkList(['64:ff9b::/96', '10.1.0.0/16']))).toEqual({ allowed: true });
    // The mapped form is the IPv4 address itself: allow-listing one allows the other.
    expect(checkDestination('::ffff:10.1.2.3', new NetworkList(['10.1.0.0/16']))).toEqual({ allowed: true });
  });
});
