/**
 * Destination safety end to end (docs/reference/events/README.md): callbacks reach only public addresses, judged on
 * the address actually connected to, after DNS, unless the operator allow-lists a network. Names are
 * resolved through a test DNS server (config delivery.dnsServers), so a name can point anywhere.
 *
 * "No connection is made" is checked with a tripwire: a plain TCP listener on 127.0.0.1 and ::1 that
 * counts connections. Every refused URL uses its port, so a loopback address that slipped through the
 * guard would show up there; the other ranges have nothing listening, and a connection attempt to them
 * would end in a timeout or an unreachable error, not in refused_destination.
 *
 * A customer is told a generic reason only (never the addresses a name resolved to); a customer's own
 * allow-list (customers.allow_networks) opens networks to that customer alone.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, isIPv6, type Server } from 'node:net';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/config.ts';
import { callbackBody } from '../src/domain/callbacks.ts';
import { enqueueCallbacks } from '../src/store/callbacks.ts';
import { setAllowNetworks } from '../src/store/customers.ts';
import { upsertDomain } from '../src/store/domains.ts';
import { startTestApp, type TestApp, type TestCustomer } from './harness.ts';
import { startTestDns, type TestDns } from './support/dns.ts';
import { type Receiver, startReceiver } from './support/receiver.ts';
import { writeCaFile } from './support/tls.ts';

/** Addresses callbacks must not reach, one per refused range. */
const REFUSED = [
  '10.0.0.1', // private
  '172.16.0.1', // private
  '192.168.1.1', // private
  '100.64.0.1', // carrier-grade NAT
  '127.0.0.1', // loopback (not allow-listed here)
  '169.254.169.254', // cloud metadata
  '224.0.0.1', // multicast
  'fd00::1', // unique local
  'fe80::1', // link-local
  '::ffff:127.0.0.1', // IPv4-mapped loopback
  '::1', // loopback
];

interface Tripwire {
  port: number;
  connections: number;
  close(): Promise<void>;
}

async function startTripwire(): Promise<Tripwire> {
  const wire = { port: 0, connections: 0, close: async () => {} };
  const make = () =>
    createServer((socket) => {
      wire.connections++;
      socket.on('error', () => {});
      socket.destroy(); // counted; a client that got this far fails at once instead of timing out
    });
  const listen = (server: Server, host: string, port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host, port, ipv6Only: host.includes(':') }, () => {
        server.off('error', reject);
        resolve((server.address() as { port: number }).port);
      });
    });
  const servers: Server[] = [];
  const v4 = make();
  wire.port = await listen(v4, '127.0.0.1', 0);
  servers.push(v4);
  const v6 = make();
  try {
    await listen(v6, '::1', wire.port);
    servers.push(v6);
  } catch {
    // no IPv6 loopback on this host (or the port is taken there): the IPv4 side still counts
  }
  wire.close = async () => {
    await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  };
  return wire;
}

let dns: TestDns;
let receiver: Receiver;
let tripwire: Tripwire;
/** Nothing allow-listed. Its log (warn and above) goes to `operatorLog`. */
let strict: TestApp;
const operatorLog: Record<string, unknown>[] = [];
/** Only 127.0.0.1/32 allow-listed. */
let loopback: TestApp;

/** Names mapped by the test DNS and present in the receiver's certificate. */
const MIXED = 'mixed.test';
const LOOP = 'loop.test';
const V6LOOP = 'v6loop.test';
const PRIVATE_ONLY = 'private-only.test';
const OWN = 'own.test';
const FILE_PATH = '/.well-known/blockchain-events-verification.txt';

beforeAll(async () => {
  dns = await startTestDns();
  receiver = await startReceiver({ hostnames: ['localhost', MIXED, LOOP, V6LOOP, PRIVATE_ONLY, OWN] });
  tripwire = await startTripwire();
  const delivery = {
    ...loadConfig({}, {}).delivery,
    caFile: writeCaFile(receiver.caPem),
    dnsServers: [dns.address],
    timeoutMs: 2000,
    pollIntervalMs: 20,
  };
  [strict, loopback] = await Promise.all([
    startTestApp(
      { delivery: { ...delivery, allowNetworks: [] }, domainVerificationPort: receiver.port },
      { logger: pino({ level: 'warn' }, { write: (line: string) => void operatorLog.push(JSON.parse(line)) }) },
    ),
    startTestApp({ delivery: { ...delivery, allowNetworks: ['127.0.0.1/32'] } }),
  ]);
});
afterAll(async () => {
  await Promise.all([strict?.close(), loopback?.close()]);
  await Promise.all([receiver?.close(), tripwire?.close(), dns?.close()]);
});

const literalUrl = (ip: string) => `https://${isIPv6(ip) ? `[${ip}]` : ip}:${tripwire.port}/literal`;

/** The host as the subscription records it: the URL's hostname without brackets. */
const hostOf = (url: string) => new URL(url).hostname.replace(/^\[|\]$/g, '');

async function subscribe(t: TestApp, c: TestCustomer, callbackUrl: string): Promise<{ referenceId: string; callbackUrl: string }> {
  const res = await t.request('POST', '/blockchain-events/ethereum/goerli/subscriptions/transaction-mined', {
    key: c.key,
    body: { data: { item: { transactionId: `0x${randomBytes(32).toString('hex')}`, callbackUrl } } },
  });
  expect(res.status, res.text).toBe(200);
  return res.body.data.item;
}

async function enqueue(t: TestApp, c: TestCustomer, s: { referenceId: string; callbackUrl: string }): Promise<string> {
  const key = randomBytes(32).toString('hex');
  const id = randomUUID();
  const body = callbackBody({ id: s.referenceId, eventType: 'TRANSACTION_MINED', apiVersion: '2021-03-20' }, key, { n: 1 });
  await t.app.database.db.transaction('test:enqueue', (tx) =>
    enqueueCallbacks(tx, [
      { id, customerId: c.id, subscriptionId: s.referenceId, eventType: 'TRANSACTION_MINED', idempotencyKey: key, body, callbackUrl: s.callbackUrl },
    ]),
  );
  return id;
}

interface Attempt {
  httpStatus: number | null;
  error: { class: string; message: string } | null;
}

/** The first recorded attempt of the subscription's only callback, and the callback's status. */
async function firstAttempt(t: TestApp, c: TestCustomer, referenceId: string): Promise<{ status: string; attempt: Attempt }> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const res = await t.request('GET', `/blockchain-events/subscriptions/${referenceId}/callbacks`, { key: c.key });
    expect(res.status, res.text).toBe(200);
    const entry = res.body.data.items[0];
    if (entry?.attempts.length > 0) return { status: entry.status, attempt: entry.attempts[0] };
    if (Date.now() > deadline) throw new Error(`no attempt recorded for ${referenceId}: ${res.text}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Subscribes to `url` in app `t`, queues one callback and returns its first attempt. */
async function attempt(t: TestApp, c: TestCustomer, url: string) {
  const s = await subscribe(t, c, url);
  await enqueue(t, c, s);
  return await firstAttempt(t, c, s.referenceId);
}

describe('refused ranges (nothing allow-listed)', () => {
  let c: TestCustomer;
  beforeAll(async () => {
    c = await strict.customer({ domains: REFUSED.map((_, i) => `refused-${i}.test`) });
    // IP literals are verified by the operator, before the first request: the API's domain cache learns
    // of later changes asynchronously (NOTIFY), so a domain added between two requests may not be seen yet.
    for (const ip of REFUSED) await upsertDomain(strict.app.database.db, c.id, hostOf(literalUrl(ip)), 'operator');
  });

  describe.each(REFUSED.map((ip, i) => [ip, i] as const))('%s', (ip, i) => {
    it('as an IP literal in the callbackUrl: refused_destination, no connection', async () => {
      const url = literalUrl(ip);
      const before = tripwire.connections;
      const { attempt: a } = await attempt(strict, c, url);
      expect(a.httpStatus).toBeNull();
      expect(a.error?.class, a.error?.message).toBe('refused_destination');
      expect(tripwire.connections).toBe(before);
    });

    it('as the address a name resolves to: refused_destination, no connection', async () => {
      const name = `refused-${i}.test`;
      dns.set(name, isIPv6(ip) ? { AAAA: [ip] } : { A: [ip] });
      const before = tripwire.connections;
      const { attempt: a } = await attempt(strict, c, `https://${name}:${tripwire.port}/named`);
      expect(a.httpStatus).toBeNull();
      expect(a.error?.class, a.error?.message).toBe('refused_destination');
      // The customer learns that, not which address the name resolved to nor what kind it is.
      expect(a.error?.message).toBe('the host resolves to an address callbacks may not reach');
      expect(tripwire.connections).toBe(before);
    });
  });

  it('the receiver on loopback is refused too, by name and by address', async () => {
    dns.set(LOOP, { A: ['127.0.0.1'] });
    const d = await strict.customer({ domains: [LOOP, '127.0.0.1'] });
    const before = receiver.received.length;
    const byName = await attempt(strict, d, `https://${LOOP}:${receiver.port}/strict-name`);
    const byAddress = await attempt(strict, d, `https://127.0.0.1:${receiver.port}/strict-address`);
    expect(byName.attempt.error?.class).toBe('refused_destination');
    expect(byAddress.attempt.error?.class).toBe('refused_destination');
    expect(receiver.received.length).toBe(before);
  });

  it('test callbacks go through the same guard', async () => {
    dns.set(LOOP, { A: ['127.0.0.1'] });
    const d = await strict.customer({ domains: [LOOP] });
    const s = await subscribe(strict, d, `https://${LOOP}:${tripwire.port}/test-callback`);
    const before = tripwire.connections;
    const res = await strict.request('POST', `/blockchain-events/subscriptions/${s.referenceId}/test-callback`, { key: d.key });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.item).toMatchObject({ delivered: false, httpStatus: null, errorClass: 'refused_destination' });
    expect(res.body.data.item.errorMessage).toBe('the host resolves to an address callbacks may not reach');
    expect(res.text).not.toContain('127.0.0.1');
    expect(tripwire.connections).toBe(before);
  });
});

describe('allow-listed 127.0.0.1/32', () => {
  let c: TestCustomer;
  beforeAll(async () => {
    dns.set(MIXED, { A: ['10.0.0.1', '127.0.0.1'] });
    dns.set(LOOP, { A: ['127.0.0.1'] });
    dns.set(V6LOOP, { AAAA: ['::1'] });
    dns.set(PRIVATE_ONLY, { A: ['10.0.0.1'] });
    c = await loopback.customer({ domains: [MIXED, LOOP, V6LOOP, PRIVATE_ONLY, '127.0.0.1', '::1'] });
  });

  it('a name resolving to [10.0.0.1, 127.0.0.1] connects only to the allowed one and is delivered', async () => {
    const before = receiver.received.length;
    const { status, attempt: a } = await attempt(loopback, c, `https://${MIXED}:${receiver.port}/mixed`);
    expect(a.error, a.error?.message).toBeNull();
    expect(a.httpStatus).toBe(200);
    expect(status).toBe('delivered');
    expect(receiver.received.slice(before).map((r) => r.path)).toEqual(['/mixed']);
  });

  it('an allow-listed loopback works, by name and as an IP literal', async () => {
    const byName = await attempt(loopback, c, `https://${LOOP}:${receiver.port}/loop-name`);
    const byAddress = await attempt(loopback, c, `https://127.0.0.1:${receiver.port}/loop-address`);
    expect(byName).toMatchObject({ status: 'delivered', attempt: { httpStatus: 200, error: null } });
    expect(byAddress).toMatchObject({ status: 'delivered', attempt: { httpStatus: 200, error: null } });
    expect(receiver.received.map((r) => r.path)).toEqual(expect.arrayContaining(['/loop-name', '/loop-address']));
  });

  it('control: the tripwire does count a connection the guard lets through', async () => {
    const before = tripwire.connections;
    const { attempt: a } = await attempt(loopback, c, `https://127.0.0.1:${tripwire.port}/control`);
    expect(a.error?.class).not.toBe('refused_destination');
    expect(tripwire.connections).toBe(before + 1);
    // A socket error may name the address and port it happened on: the customer gets the class in words.
    expect([
      'the connection failed or was closed before a complete answer',
      'TLS handshake failed: the certificate must be valid for the host name and issued by a trusted CA',
    ]).toContain(a.error?.message);
  });

  it('outside the allowed network is still refused: 10.0.0.1 by name, ::1 by name and literal', async () => {
    const before = tripwire.connections;
    for (const url of [
      `https://${PRIVATE_ONLY}:${tripwire.port}/private`,
      `https://${V6LOOP}:${tripwire.port}/v6-name`,
      `https://[::1]:${tripwire.port}/v6-literal`,
    ]) {
      const { attempt: a } = await attempt(loopback, c, url);
      expect(a.error?.class, `${url}: ${a.error?.message}`).toBe('refused_destination');
    }
    expect(tripwire.connections).toBe(before);
  });
});

it('http:// callback URLs are refused when the subscription is created (409 invalid_data)', async () => {
  const c = await strict.customer({ domains: ['localhost'] });
  const res = await strict.request('POST', '/blockchain-events/ethereum/goerli/subscriptions/transaction-mined', {
    key: c.key,
    body: { data: { item: { transactionId: `0x${'ab'.repeat(32)}`, callbackUrl: `http://localhost:${receiver.port}/plain` } } },
  });
  expect(res.status, res.text).toBe(409);
  expect(res.body.error.code).toBe('invalid_data');
  expect(res.body.error.details).toEqual([expect.objectContaining({ attribute: 'callbackUrl' })]);
});

describe("a customer's own allow-list (nothing allow-listed for all)", () => {
  let trusted: TestCustomer;
  let other: TestCustomer;
  beforeAll(async () => {
    dns.set(OWN, { A: ['127.0.0.1'] });
    [trusted, other] = await Promise.all([strict.customer({ domains: [OWN] }), strict.customer({ domains: [OWN] })]);
    await setAllowNetworks(strict.app.database.db, trusted.id, ['127.0.0.1/32']);
  });

  it('opens the network to that customer alone, even over a connection kept alive for it', async () => {
    const before = receiver.received.length;
    const mine = await attempt(strict, trusted, `https://${OWN}:${receiver.port}/own-trusted`);
    expect(mine, mine.attempt.error?.message).toMatchObject({ status: 'delivered', attempt: { httpStatus: 200, error: null } });
    // Same origin right after: a pool shared between customers would hand this one the open connection.
    const theirs = await attempt(strict, other, `https://${OWN}:${receiver.port}/own-other`);
    expect(theirs.attempt).toMatchObject({
      httpStatus: null,
      error: { class: 'refused_destination', message: 'the host resolves to an address callbacks may not reach' },
    });
    expect(receiver.received.slice(before).map((r) => r.path)).toEqual(['/own-trusted']);
  });

  it('applies to test callbacks', async () => {
    const before = receiver.received.length;
    const test = async (c: TestCustomer, path: string) => {
      const s = await subscribe(strict, c, `https://${OWN}:${receiver.port}${path}`);
      const res = await strict.request('POST', `/blockchain-events/subscriptions/${s.referenceId}/test-callback`, { key: c.key });
      expect(res.status, res.text).toBe(200);
      return res;
    };
    expect((await test(trusted, '/test-trusted')).body.data.item).toMatchObject({ delivered: true, httpStatus: 200, errorClass: null });
    const refused = await test(other, '/test-other');
    expect(refused.body.data.item).toMatchObject({
      delivered: false,
      errorClass: 'refused_destination',
      errorMessage: 'the host resolves to an address callbacks may not reach',
    });
    expect(refused.text).not.toContain('127.0.0.1');
    expect(receiver.received.slice(before).map((r) => r.path)).toEqual(['/test-trusted']);
  });

  it('applies to domain verification by the HTTPS file', async () => {
    const [verifier, outsider] = await Promise.all([strict.customer({ domains: [] }), strict.customer({ domains: [] })]);
    await setAllowNetworks(strict.app.database.db, verifier.id, ['127.0.0.0/8']);
    const register = async (c: TestCustomer) => {
      const r = await strict.request('POST', '/blockchain-events/callback-domains', { key: c.key, body: { data: { item: { domain: OWN } } } });
      expect(r.status, r.text).toBe(201);
      return r.body.data.item.verificationToken as string;
    };
    const verify = (c: TestCustomer) => strict.request('POST', `/blockchain-events/callback-domains/${OWN}/verify`, { key: c.key });
    receiver.byPath(FILE_PATH, { kind: 'status', status: 200, body: `${await register(verifier)}\n${await register(outsider)}\n` });
    const before = receiver.received.length;
    const refused = await verify(outsider);
    expect(refused.status, refused.text).toBe(409);
    expect(refused.body.error.details[0]).toEqual({
      attribute: 'file',
      message: `https://${OWN}:${receiver.port}${FILE_PATH} could not be reached: refused_destination: the host resolves to an address callbacks may not reach`,
    });
    expect(refused.text).not.toContain('127.0.0.1');
    expect(receiver.received.length).toBe(before);
    const verified = await verify(verifier);
    expect(verified.status, verified.text).toBe(200);
    expect(verified.body.data.item.isVerified).toBe(true);
  });
});

describe('what the customer is not told goes to the operator log', () => {
  let c: TestCustomer;
  beforeAll(async () => {
    dns.set(PRIVATE_ONLY, { A: ['10.0.0.1'] });
    c = await strict.customer({ domains: [PRIVATE_ONLY] });
  });

  /** The log entries whose fields include `fields`, once at least one is there. */
  async function logged(fields: Record<string, unknown>): Promise<Record<string, unknown>[]> {
    const deadline = Date.now() + 5_000;
    for (;;) {
      const found = operatorLog.filter((entry) => Object.entries(fields).every(([k, v]) => entry[k] === v));
      if (found.length > 0 || Date.now() > deadline) return found;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  it('a refused callback attempt: the resolved address and its kind, with the callback id', async () => {
    const s = await subscribe(strict, c, `https://${PRIVATE_ONLY}:${tripwire.port}/logged`);
    const callbackId = await enqueue(strict, c, s);
    const { attempt: a } = await firstAttempt(strict, c, s.referenceId);
    expect(a.error).toEqual({ class: 'refused_destination', message: 'the host resolves to an address callbacks may not reach' });
    const [entry] = await logged({ callbackId });
    expect(entry).toMatchObject({ errorClass: 'refused_destination', subscriptionId: s.referenceId });
    expect(entry?.detail).toContain('10.0.0.1 (private)');
  });

  it('a refused test callback: the same, with the requestId the customer was answered with', async () => {
    const s = await subscribe(strict, c, `https://${PRIVATE_ONLY}:${tripwire.port}/logged-test`);
    const res = await strict.request('POST', `/blockchain-events/subscriptions/${s.referenceId}/test-callback`, { key: c.key });
    expect(res.status, res.text).toBe(200);
    expect(res.text).not.toContain('10.0.0.1');
    const [entry] = await logged({ requestId: res.body.requestId });
    expect(entry).toMatchObject({ errorClass: 'refused_destination' });
    expect(entry?.detail).toContain('10.0.0.1 (private)');
  });
});
