/**
 * Callback-domain verification (docs/reference/api.md#callback-domains): register a domain, prove control with an HTTPS
 * file or a DNS TXT record, and the verified host is then accepted as a callbackUrl host. The HTTPS
 * file is served by a test receiver on loopback (allow-listed), names resolve through a test DNS server.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/config.ts';
import { getDomain } from '../src/store/domains.ts';
import { startTestApp, type TestApp, type TestCustomer, type TestResponse } from './harness.ts';
import { startTestDns, type TestDns } from './support/dns.ts';
import { type Receiver, startReceiver } from './support/receiver.ts';
import { writeCaFile } from './support/tls.ts';

const FILE_PATH = '/.well-known/blockchain-events-verification.txt';
const DOMAINS = '/blockchain-events/callback-domains';

let t: TestApp;
let receiver: Receiver;
let dns: TestDns;
let alice: TestCustomer;

beforeAll(async () => {
  receiver = await startReceiver({ hostnames: ['localhost', 'verify.test', 'lines.test', 'missing.test', 'wrong.test', 'empty.test', 'moved.test'] });
  dns = await startTestDns();
  for (const host of ['verify.test', 'lines.test', 'missing.test', 'wrong.test', 'empty.test', 'moved.test', 'badcert.test'])
    dns.set(host, { A: ['127.0.0.1'] });
  dns.set('private.test', { A: ['10.0.0.1'] });
  t = await startTestApp({
    domainVerificationPort: receiver.port,
    delivery: {
      ...loadConfig({}, {}).delivery,
      allowNetworks: ['127.0.0.1/32', '::1/128'],
      caFile: writeCaFile(receiver.caPem),
      dnsServers: [dns.address],
    },
  });
  alice = await t.customer({ domains: [] });
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
  await dns?.close();
});

function register(domain: string, key = alice.key): Promise<TestResponse> {
  return t.request('POST', DOMAINS, { key, body: { data: { item: { domain } } } });
}

function verify(domain: string, key = alice.key): Promise<TestResponse> {
  return t.request('POST', `${DOMAINS}/${encodeURIComponent(domain)}/verify`, { key });
}

/** Registers the domain and returns its token. */
async function tokenOf(domain: string, key = alice.key): Promise<string> {
  const r = await register(domain, key);
  expect(r.status, r.text).toBe(201);
  return r.body.data.item.verificationToken;
}

function subscribe(callbackUrl: string, key = alice.key): Promise<TestResponse> {
  return t.request('POST', '/blockchain-events/ethereum/goerli/subscriptions/transaction-mined', {
    key,
    body: { data: { item: { transactionId: `0x${'5e'.repeat(32)}`, callbackUrl } } },
  });
}

function detail(r: TestResponse, attribute: 'file' | 'dnsTxt'): string {
  return r.body.error.details.find((d: { attribute: string }) => d.attribute === attribute)?.message ?? '';
}

function expectVerificationFailed(r: TestResponse): void {
  expect(r.status, r.text).toBe(409);
  expect(r.body.error.code).toBe('domain_verification_failed');
  expect(r.body.error.details.map((d: { attribute: string }) => d.attribute)).toEqual(['file', 'dnsTxt']);
  expect(r.headers.get('x-credits-consumed')).toBeNull();
}

describe('register', () => {
  it('answers 201 with a token and both ways to prove control', async () => {
    const r = await register('Hooks.Register.Example');
    expect(r.status, r.text).toBe(201);
    expect(r.headers.get('x-credits-consumed')).toBe(String(t.config.costs.walletsAndDomains));
    const item = r.body.data.item;
    expect(item).toMatchObject({ domain: 'hooks.register.example', isVerified: false, verifiedTimestamp: null });
    expect(item.verificationToken).toMatch(/^herald-verification=[0-9a-f]{32}$/);
    expect(typeof item.createdTimestamp).toBe('number');
    expect(item.verification).toEqual({
      file: { url: 'https://hooks.register.example/.well-known/blockchain-events-verification.txt', content: item.verificationToken },
      dnsTxt: { name: '_blockchain-events.hooks.register.example', value: item.verificationToken },
    });
  });

  it('registering again returns the same domain and token, 201', async () => {
    const first = await register('again.example');
    const second = await register('AGAIN.example');
    expect(second.status, second.text).toBe(201);
    expect(second.body.data.item).toEqual(first.body.data.item);
    const list = await t.request('GET', DOMAINS, { key: alice.key });
    expect(list.body.data.items.filter((d: { domain: string }) => d.domain === 'again.example')).toHaveLength(1);
  });

  it('each customer gets its own token for the same domain', async () => {
    const bob = await t.customer({ domains: [] });
    expect(await tokenOf('shared.example', bob.key)).not.toBe(await tokenOf('shared.example'));
  });

  it.each([
    ['https://hooks.example.com', 'scheme'],
    ['hooks.example.com/callbacks', 'path'],
    ['hooks.example.com:8443', 'port'],
    ['10.0.0.1', 'IP address'],
    ['[::1]', 'IP address'],
    ['2001:db8::1', 'IP address'],
    ['127.1', 'IP address'],
    ['user@hooks.example.com', "'@'"],
    ['hooks.example.com.', 'trailing dot'],
    ['hooks..example.com', 'not a valid host name'],
    ['-hooks.example.com', 'not a valid host name'],
    ['hooks_1.example.com', 'not a valid host name'],
    ['hooks example.com', 'white space'],
  ])('%s is refused with 409 invalid_data (%s)', async (domain, words) => {
    const r = await register(domain);
    expect(r.status, r.text).toBe(409);
    expect(r.body.error.code).toBe('invalid_data');
    expect(r.body.error.message).toContain(words);
    expect(r.body.error.details).toEqual([{ attribute: 'domain', message: r.body.error.message }]);
    expect(r.headers.get('x-credits-consumed')).toBeNull();
  });

  it('a missing or empty domain and extra attributes are refused', async () => {
    expect((await t.request('POST', DOMAINS, { key: alice.key, body: { data: { item: {} } } })).body.error.code).toBe('missing_required_attributes');
    expect((await register('')).body.error.code).toBe('invalid_data');
    const extra = await t.request('POST', DOMAINS, { key: alice.key, body: { data: { item: { domain: 'x.example', port: 1 } } } });
    expect(extra.body.error.code).toBe('extra_body_attributes');
  });
});

describe('verify by the HTTPS file', () => {
  it('proves the domain, after which a callbackUrl on that host is accepted', async () => {
    const before = await subscribe('https://verify.test/cb');
    expect(before.status, before.text).toBe(409);
    expect(before.body.error.code).toBe('callback_url_not_verified');

    const token = await tokenOf('verify.test');
    receiver.byPath(FILE_PATH, { kind: 'status', status: 200, body: `${token}\n` });
    const seen = receiver.received.length;
    const r = await verify('verify.test');
    expect(r.status, r.text).toBe(200);
    expect(r.headers.get('x-credits-consumed')).toBe(String(t.config.costs.walletsAndDomains));
    expect(r.body.data.item).toMatchObject({ domain: 'verify.test', isVerified: true, verificationToken: token });
    expect(r.body.data.item.verifiedTimestamp).toBeGreaterThanOrEqual(r.body.data.item.createdTimestamp);
    expect(r.body.data.item.verification.file.content).toBe(token);

    const request = receiver.received.slice(seen).find((q) => q.path === FILE_PATH);
    expect(request?.method).toBe('GET');
    expect(request?.headers.host).toBe(`verify.test:${receiver.port}`);
    expect((await getDomain(t.app.database.db, alice.id, 'verify.test'))?.verifiedBy).toBe('https-file');

    const after = await subscribe('https://verify.test/cb');
    expect(after.status, after.text).toBe(200);
  });

  it('accepts the token on one line of a longer file', async () => {
    const token = await tokenOf('lines.test');
    receiver.byPath(FILE_PATH, { kind: 'status', status: 200, body: `# callback domain proofs\r\nherald-verification=not-this-one\r\n  ${token}  \r\n` });
    const r = await verify('lines.test');
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.item.isVerified).toBe(true);
  });

  it('a 404 is reported as such', async () => {
    await tokenOf('missing.test');
    receiver.byPath(FILE_PATH, { kind: 'status', status: 404, body: 'not found' });
    const r = await verify('missing.test');
    expectVerificationFailed(r);
    expect(detail(r, 'file')).toBe(`https://missing.test:${receiver.port}${FILE_PATH} answered 404`);
    expect(detail(r, 'dnsTxt')).toBe('no TXT record at _blockchain-events.missing.test');
    expect(r.body.error.message).toContain('_blockchain-events.missing.test');
    expect((await getDomain(t.app.database.db, alice.id, 'missing.test'))?.verifiedAt).toBeNull();
  });

  it('a redirect is not followed', async () => {
    await tokenOf('moved.test');
    receiver.byPath(FILE_PATH, { kind: 'status', status: 301, headers: { location: 'https://verify.test/elsewhere' } });
    const r = await verify('moved.test');
    expectVerificationFailed(r);
    expect(detail(r, 'file')).toMatch(/answered 301 \(redirects are not followed/);
  });

  it('wrong content is quoted back, shortened', async () => {
    const token = await tokenOf('wrong.test');
    receiver.byPath(FILE_PATH, { kind: 'status', status: 200, body: `abc\n${'x'.repeat(100)}` });
    const r = await verify('wrong.test');
    expectVerificationFailed(r);
    expect(detail(r, 'file')).toBe(`https://wrong.test:${receiver.port}${FILE_PATH} contained 'abc ${'x'.repeat(36)}…' instead of the token`);
    expect(r.body.error.message).toContain(token);
  });

  it('an empty file is reported as empty', async () => {
    await tokenOf('empty.test');
    receiver.byPath(FILE_PATH, { kind: 'status', status: 200, body: '' });
    const r = await verify('empty.test');
    expectVerificationFailed(r);
    expect(detail(r, 'file')).toContain('answered 200 with an empty body');
  });

  it('a host resolving to a private address is refused (not allow-listed), without naming the address', async () => {
    await tokenOf('private.test');
    const r = await verify('private.test');
    expectVerificationFailed(r);
    expect(detail(r, 'file')).toBe(
      `https://private.test:${receiver.port}${FILE_PATH} could not be reached: refused_destination: the host resolves to an address callbacks may not reach`,
    );
    expect(r.text).not.toContain('10.0.0.1');
    expect(r.text).not.toContain('private address');
  });

  it('a certificate that does not name the host is a TLS failure, told without the names the certificate holds', async () => {
    await tokenOf('badcert.test');
    const seen = receiver.received.length;
    const r = await verify('badcert.test');
    expectVerificationFailed(r);
    expect(detail(r, 'file')).toContain('could not be reached: tls: TLS handshake failed');
    // The receiver's certificate names localhost, verify.test, ...: none of it reaches the customer.
    for (const named of ['localhost', 'verify.test', 'altnames', 'DNS:', '127.0.0.1']) expect(r.text).not.toContain(named);
    expect(receiver.received.length).toBe(seen);
  });

  it('a name that does not resolve is a DNS failure', async () => {
    await tokenOf('nowhere.test');
    const r = await verify('nowhere.test');
    expectVerificationFailed(r);
    expect(detail(r, 'file')).toContain('could not be reached: dns: ');
    expect(detail(r, 'dnsTxt')).toBe('no TXT record at _blockchain-events.nowhere.test');
  });
});

describe('verify by the DNS TXT record', () => {
  it('proves the domain', async () => {
    const token = await tokenOf('txt.test');
    dns.set('_blockchain-events.txt.test', { TXT: [['v=spf1 -all'], [token]] });
    const r = await verify('txt.test');
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.item.isVerified).toBe(true);
    expect((await getDomain(t.app.database.db, alice.id, 'txt.test'))?.verifiedBy).toBe('dns-txt');
    expect((await subscribe('https://txt.test/hooks')).status).toBe(200);
  });

  it('joins the character-strings of one record', async () => {
    const token = await tokenOf('split.test');
    dns.set('_blockchain-events.split.test', { TXT: [[token.slice(0, 20), token.slice(20)]] });
    const r = await verify('split.test');
    expect(r.status, r.text).toBe(200);
  });

  it('a name that exists without a TXT record is "no TXT record"', async () => {
    await tokenOf('notxt.test');
    dns.set('_blockchain-events.notxt.test', { A: ['192.0.2.1'] });
    const r = await verify('notxt.test');
    expectVerificationFailed(r);
    expect(detail(r, 'dnsTxt')).toBe('no TXT record at _blockchain-events.notxt.test');
  });

  it('wrong values are quoted back', async () => {
    await tokenOf('wrongtxt.test');
    dns.set('_blockchain-events.wrongtxt.test', { TXT: [['a'], ['b']] });
    const r = await verify('wrongtxt.test');
    expectVerificationFailed(r);
    expect(detail(r, 'dnsTxt')).toBe("TXT records at _blockchain-events.wrongtxt.test: 'a', 'b' — none is the token");
  });

  it("another customer's token does not prove it", async () => {
    const bob = await t.customer({ domains: [] });
    const bobsToken = await tokenOf('theirs.test', bob.key);
    await tokenOf('theirs.test');
    dns.set('_blockchain-events.theirs.test', { TXT: [[bobsToken]] });
    expectVerificationFailed(await verify('theirs.test'));
    expect((await verify('theirs.test', bob.key)).status).toBe(200);
  });
});

describe('exact host, tenants, repeats', () => {
  it("a subdomain is not covered by its parent's verification", async () => {
    const parent = await tokenOf('parent.test');
    dns.set('_blockchain-events.parent.test', { TXT: [[parent]] });
    expect((await verify('parent.test')).status).toBe(200);
    const sub = await register('hooks.parent.test');
    expect(sub.body.data.item.isVerified).toBe(false);
    const subscription = await subscribe('https://hooks.parent.test/cb');
    expect(subscription.status, subscription.text).toBe(409);
    expect(subscription.body.error.code).toBe('callback_url_not_verified');
    expectVerificationFailed(await verify('hooks.parent.test'));
    // The parent's record at _blockchain-events.parent.test is no proof for the subdomain either.
    dns.set('_blockchain-events.hooks.parent.test', { TXT: [[parent]] });
    expectVerificationFailed(await verify('hooks.parent.test'));
  });

  it('an unknown domain is 404', async () => {
    const r = await verify('unknown.test');
    expect(r.status, r.text).toBe(404);
    expect(r.body.error.code).toBe('resource_not_found');
  });

  it("another customer's domain is 404, even once verified", async () => {
    const bob = await t.customer({ domains: [] });
    await tokenOf('only-alice.test');
    expect((await verify('only-alice.test', bob.key)).status).toBe(404);
    expect((await verify('verify.test', bob.key)).body.error.code).toBe('resource_not_found');
    expect((await subscribe('https://verify.test/cb', bob.key)).body.error.code).toBe('callback_url_not_verified');
  });

  it('an already verified domain answers 200 at once, without fetching', async () => {
    const seen = receiver.received.length;
    receiver.byPath(FILE_PATH, { kind: 'status', status: 404 });
    const r = await verify('VERIFY.test');
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.item).toMatchObject({ domain: 'verify.test', isVerified: true });
    expect(receiver.received.length).toBe(seen);
    const again = await register('verify.test');
    expect(again.status).toBe(201);
    expect(again.body.data.item.isVerified).toBe(true);
  });

  it('a failed verification costs nothing', async () => {
    await tokenOf('free.test');
    const before = await t.request('GET', DOMAINS, { key: alice.key });
    const available = BigInt(before.headers.get('x-credits-available') ?? '0');
    expectVerificationFailed(await verify('free.test'));
    const after = await t.request('GET', DOMAINS, { key: alice.key });
    expect(BigInt(after.headers.get('x-credits-available') ?? '0')).toBe(available - BigInt(t.config.costs.walletsAndDomains));
  });

  it('an operator-verified domain is listed verified; the API can prove the others', async () => {
    const carol = await t.customer({ domains: ['ops.example'] });
    const r = await verify('ops.example', carol.key);
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.item.isVerified).toBe(true);
  });
});
