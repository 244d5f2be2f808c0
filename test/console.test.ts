/**
 * The console's API (docs/reference/api-overview.md "Console API"), customer side: the cross-chain subscription list with its
 * filters and delivery health, one callback with its payload and response excerpts, the account, and
 * credit usage recorded with each debit. A real herald with its delivery worker and a real HTTPS receiver.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { base58 } from '@scure/base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/config.ts';
import { callbackBody } from '../src/domain/callbacks.ts';
import { wholeMinute } from '../src/services/history-sampler.ts';
import { enqueueCallbacks } from '../src/store/callbacks.ts';
import { createOperatorToken } from '../src/store/operator-tokens.ts';
import { SAMPLE, startTestApp, type TestApp, type TestCustomer } from './harness.ts';
import { type Receiver, startReceiver } from './support/receiver.ts';
import { createTestCa, writeCaFile } from './support/tls.ts';

let t: TestApp;
let receiver: Receiver;

beforeAll(async () => {
  const ca = await createTestCa();
  receiver = await startReceiver({ ca });
  t = await startTestApp({
    delivery: {
      ...loadConfig({}, {}).delivery,
      allowNetworks: ['127.0.0.1/32', '::1/128'],
      caFile: writeCaFile(ca.caPem),
      timeoutMs: 2000,
      pollIntervalMs: 20,
    },
  });
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

const customer = (options: Parameters<TestApp['customer']>[0] = {}) => t.customer({ domains: ['localhost', 'hooks.example.com'], ...options });

async function subscribe(c: TestCustomer, path: string, item: Record<string, unknown>, chain = 'ethereum/goerli'): Promise<string> {
  const res = await t.request('POST', `/blockchain-events/${chain}/subscriptions/${path}`, { key: c.key, body: { data: { item } } });
  expect(res.status, res.text).toBeLessThan(300);
  return res.body.data.item.referenceId;
}

/** Queues a callback of the subscription as chain following would; returns its id and exact body. */
async function enqueue(c: TestCustomer, subscriptionId: string, callbackUrl: string, due = new Date()): Promise<{ id: string; body: string }> {
  const key = randomBytes(32).toString('hex');
  const body = callbackBody({ id: subscriptionId, eventType: 'TRANSACTION_MINED', apiVersion: '2021-03-20' }, key, { n: 1, amount: '1.000000000000000001' });
  const id = randomUUID();
  await t.app.database.db.transaction('test:enqueue', (tx) =>
    enqueueCallbacks(tx, [{ id, customerId: c.id, subscriptionId, eventType: 'TRANSACTION_MINED', idempotencyKey: key, body, callbackUrl }], due),
  );
  return { id, body };
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > end) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('GET /blockchain-events/subscriptions (cross-chain list)', () => {
  it('lists every chain, filters by chain, network, event type and state, and finds by reference id, address or transaction id', async () => {
    const c = await customer();
    const tx = `0x${'AB'.repeat(32)}`;
    const mined = await subscribe(c, 'transaction-mined', { transactionId: tx, callbackUrl: SAMPLE.callbackUrl });
    const mixedCase = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed';
    const tokens = await subscribe(c, 'address-tokens-transactions-confirmed', { address: mixedCase, callbackUrl: SAMPLE.callbackUrl });
    const btc = await subscribe(c, 'transaction-mined', { transactionId: SAMPLE.btcTx, callbackUrl: SAMPLE.callbackUrl }, 'bitcoin/testnet');
    await t.request('DELETE', `/blockchain-events/bitcoin/testnet/subscriptions/${btc}`, { key: c.key });
    const inactive = await subscribe(c, 'block-mined', { callbackUrl: SAMPLE.callbackUrl }, 'bitcoin/testnet');
    await t.app.database.db.query('test:deactivate', 'UPDATE subscriptions SET is_active = false WHERE id = $1', [inactive]);
    const other = await customer();
    await subscribe(other, 'transaction-mined', { transactionId: tx, callbackUrl: SAMPLE.callbackUrl });

    const list = async (query = '') => {
      const res = await t.request('GET', `/blockchain-events/subscriptions${query}`, { key: c.key });
      expect(res.status, res.text).toBe(200);
      expect(res.headers.get('x-credits-consumed')).toBe('0');
      return res.body.data;
    };
    const all = await list();
    expect(all.total).toBe(3);
    expect(all.items.map((s: { referenceId: string }) => s.referenceId)).toEqual([mined, tokens, inactive]);
    expect(all.items[0]).toMatchObject({ blockchain: 'ethereum', network: 'goerli', eventType: 'TRANSACTION_MINED', transactionId: tx, isActive: true });
    expect(all.items[0].health).toEqual({
      delivered: 0,
      failed: 0,
      pending: 0,
      retrying: 0,
      successRate: null,
      lastDeliveredTimestamp: null,
      lastFailedTimestamp: null,
      status: 'idle',
    });
    const ids = async (query: string) => (await list(query)).items.map((s: { referenceId: string }) => s.referenceId);
    expect(await ids('?blockchain=bitcoin')).toEqual([inactive]);
    expect(await ids('?network=goerli')).toEqual([mined, tokens]);
    expect(await ids('?eventType=ADDRESS_TOKENS_TRANSACTION_CONFIRMED')).toEqual([tokens]);
    expect(await ids('?active=false')).toEqual([inactive]);
    expect(await ids('?active=true&blockchain=ethereum')).toEqual([mined, tokens]);
    expect(await ids(`?q=${mined}`)).toEqual([mined]);
    expect(await ids(`?q=${mined.toUpperCase()}`)).toEqual([mined]);
    expect(await ids(`?q=${tx}`)).toEqual([mined]);
    expect(await ids(`?q=${tx.toLowerCase()}`)).toEqual([mined]);
    expect(await ids(`?q=${mixedCase}`)).toEqual([tokens]);
    expect(await ids(`?q=${mixedCase.toLowerCase()}`)).toEqual([tokens]);
    expect(await ids('?q=nothing-like-it')).toEqual([]);
    // Another spelling of the same Tron address: its 41... hex form finds the base58 subscription.
    const tron = await subscribe(c, 'address-coins-transactions-confirmed', { address: SAMPLE.tronAddress, callbackUrl: SAMPLE.callbackUrl }, 'tron/nile');
    const tronHex = Buffer.from(base58.decode(SAMPLE.tronAddress)).subarray(0, 21).toString('hex');
    expect(tronHex.startsWith('41')).toBe(true);
    expect(await ids(`?q=${tronHex}`)).toEqual([tron]);
    await t.request('DELETE', `/blockchain-events/tron/nile/subscriptions/${tron}`, { key: c.key });
    const paged = await list('?limit=1&offset=1');
    expect(paged).toMatchObject({ limit: 1, offset: 1, total: 3 });
    expect(paged.items.map((s: { referenceId: string }) => s.referenceId)).toEqual([tokens]);
  });

  it('answers bad filters with the error envelope', async () => {
    const c = await customer();
    for (const [query, code] of [
      ['?blockchain=dogecoin-classic', 'invalid_data'],
      ['?active=yes', 'invalid_data'],
      ['?eventType=NOPE', 'invalid_data'],
      ['?limit=51', 'limit_greater_than_allowed'],
      ['?offset=-1', 'invalid_pagination'],
      ['?colour=red', 'extra_query_attributes'],
      ['?q=a%00b', 'invalid_data'],
      [`?q=${'x'.repeat(201)}`, 'invalid_data'],
    ]) {
      const res = await t.request('GET', `/blockchain-events/subscriptions${query}`, { key: c.key });
      expect(res.body.error?.code, `${query}: ${res.text}`).toBe(code);
      expect(res.body.error.message.length).toBeGreaterThan(10);
    }
    expect((await t.request('GET', '/blockchain-events/subscriptions')).body.error.code).toBe('missing_api_key');
    expect((await t.request('GET', '/blockchain-events/subscriptions', { key: 'hk_nope' })).body.error.code).toBe('invalid_api_key');
  });
});

describe('delivery health and GET /blockchain-events/callbacks/{id}', () => {
  it('gives each subscription a status: delivering, retrying, failing, idle or paused, from its callbacks and state', async () => {
    const c = await customer();
    const make = () => subscribe(c, 'transaction-mined', { transactionId: `0x${randomBytes(32).toString('hex')}`, callbackUrl: SAMPLE.callbackUrl });
    const [idle, delivering, retrying, failing, deactivated, paused, recovered] = await Promise.all([make(), make(), make(), make(), make(), make(), make()]);
    // Due in an hour: the delivery worker leaves them pending.
    const later = new Date(Date.now() + 3_600_000);
    await enqueue(c, delivering, SAMPLE.callbackUrl, later);
    const tried = await enqueue(c, retrying, SAMPLE.callbackUrl, later);
    await t.app.database.db.query('test:status-retry', 'UPDATE callbacks SET attempts = 1 WHERE id = $1', [tried.id]);
    const lost = await enqueue(c, failing, SAMPLE.callbackUrl, later);
    await t.app.database.db.query('test:status-fail', `UPDATE callbacks SET status = 'failed', finished_at = now() - interval '1 minute' WHERE id = $1`, [
      lost.id,
    ]);
    // A failure followed by a delivery is no longer failing.
    const old = await enqueue(c, recovered, SAMPLE.callbackUrl, later);
    const ok = await enqueue(c, recovered, SAMPLE.callbackUrl, later);
    await t.app.database.db.query('test:status-fail-old', `UPDATE callbacks SET status = 'failed', finished_at = now() - interval '2 minutes' WHERE id = $1`, [
      old.id,
    ]);
    await t.app.database.db.query('test:status-deliver', `UPDATE callbacks SET status = 'delivered', finished_at = now() WHERE id = $1`, [ok.id]);
    const reasons = (reason: string) => JSON.stringify([{ reason, timestamp: Math.floor(Date.now() / 1000) }]);
    await t.app.database.db.query('test:status-deactivate', 'UPDATE subscriptions SET is_active = false, deactivation_reasons = $2 WHERE id = $1', [
      deactivated,
      reasons('maximum_retry_attempts_reached'),
    ]);
    await t.app.database.db.query('test:status-pause', 'UPDATE subscriptions SET is_active = false, deactivation_reasons = $2 WHERE id = $1', [
      paused,
      reasons('paused'),
    ]);

    const res = await t.request('GET', '/blockchain-events/subscriptions?limit=50', { key: c.key });
    expect(res.status, res.text).toBe(200);
    const status = Object.fromEntries(res.body.data.items.map((s: { referenceId: string; health: { status: string } }) => [s.referenceId, s.health.status]));
    expect(status).toEqual({
      [idle]: 'idle',
      [delivering]: 'delivering',
      [retrying]: 'retrying',
      [failing]: 'failing',
      [deactivated]: 'failing',
      [paused]: 'paused',
      [recovered]: 'delivering',
    });
    const retryingHealth = res.body.data.items.find((s: { referenceId: string }) => s.referenceId === retrying).health;
    expect(retryingHealth).toMatchObject({ pending: 1, retrying: 1 });
    const failingHealth = res.body.data.items.find((s: { referenceId: string }) => s.referenceId === failing).health;
    expect(failingHealth.lastFailedTimestamp).toBeGreaterThan(Date.now() / 1000 - 600);
  });

  it('counts delivered, failed and pending callbacks, and shows one callback with its payload and response excerpts', async () => {
    const c = await customer();
    const callbackUrl = `${receiver.url}/hooks/${randomBytes(4).toString('hex')}`;
    const id = await subscribe(c, 'transaction-mined', { transactionId: `0x${randomBytes(32).toString('hex')}`, callbackUrl });
    const long = 'x'.repeat(6000);
    receiver.byPath(new URL(callbackUrl).pathname, { kind: 'status', status: 200, body: `accepted ${long}` });
    const first = await enqueue(c, id, callbackUrl);
    const second = await enqueue(c, id, callbackUrl);
    const health = async () => (await t.request('GET', `/blockchain-events/subscriptions?q=${id}`, { key: c.key })).body.data.items[0].health;
    const delivered = await until(health, (h) => h.delivered === 2);
    expect(delivered).toMatchObject({ delivered: 2, failed: 0, pending: 0, successRate: 1 });
    expect(delivered.lastDeliveredTimestamp).toBeGreaterThan(Date.now() / 1000 - 60);
    // A failed one lowers the success rate; a queued one is pending.
    await t.app.database.db.query('test:fail', `UPDATE callbacks SET status = 'failed', outcome = 'maximum_retry_attempts_reached' WHERE id = $1`, [second.id]);
    await t.app.database.db.query('test:park', 'UPDATE subscriptions SET is_active = false WHERE id = $1', [id]);
    await enqueue(c, id, callbackUrl);
    expect(await health()).toMatchObject({ delivered: 1, failed: 1, pending: 1, successRate: 0.5 });

    const res = await t.request('GET', `/blockchain-events/callbacks/${first.id}?context=c1`, { key: c.key });
    expect(res.status, res.text).toBe(200);
    expect(res.body.context).toBe('c1');
    expect(res.headers.get('x-credits-consumed')).toBe('0');
    const item = res.body.data.item;
    expect(item).toMatchObject({ callbackId: first.id, referenceId: id, event: 'TRANSACTION_MINED', status: 'delivered', nextAttemptTimestamp: null });
    // The payload is the body sent, byte for byte (the spliced text, not a re-serialisation).
    expect(res.text).toContain(`"payload":${first.body}}`);
    expect(item.payload).toEqual(JSON.parse(first.body));
    expect(item.attempts).toHaveLength(1);
    expect(item.attempts[0]).toMatchObject({ attempt: 1, httpStatus: 200, error: null });
    expect(item.attempts[0].responseExcerpt.startsWith('accepted xxx')).toBe(true);
    expect(Buffer.byteLength(item.attempts[0].responseExcerpt)).toBeLessThanOrEqual(4096);

    const other = await customer();
    for (const [callbackId, key] of [
      [first.id, other.key],
      [randomUUID(), c.key],
      ['not-a-uuid', c.key],
    ] as const) {
      const missing = await t.request('GET', `/blockchain-events/callbacks/${callbackId}`, { key });
      expect(missing.status).toBe(404);
      expect(missing.body.error.code).toBe('resource_not_found');
    }
  });
});

describe('POST /blockchain-events/subscriptions/{referenceId}/pause', () => {
  it('pauses (status paused, reason paused), leaves an inactive one as it is, and activate resumes it', async () => {
    const c = await customer();
    const id = await subscribe(c, 'transaction-mined', { transactionId: `0x${randomBytes(32).toString('hex')}`, callbackUrl: SAMPLE.callbackUrl });
    const pause = () => t.request('POST', `/blockchain-events/subscriptions/${id}/pause`, { key: c.key });
    const paused = await pause();
    expect(paused.status, paused.text).toBe(200);
    expect(paused.headers.get('x-credits-consumed')).toBe('0');
    expect(paused.body.data.item).toMatchObject({ referenceId: id, isActive: false, deactivationReasons: [{ reason: 'paused' }] });
    const health = async () => (await t.request('GET', `/blockchain-events/subscriptions?q=${id}`, { key: c.key })).body.data.items[0].health;
    expect((await health()).status).toBe('paused');
    // Again: nothing changes (one reason).
    expect((await pause()).body.data.item.deactivationReasons).toHaveLength(1);
    const resumed = await t.request('POST', `/blockchain-events/subscriptions/${id}/activate`, { key: c.key });
    expect(resumed.status, resumed.text).toBe(201);
    expect(resumed.body.data.item.isActive).toBe(true);
    expect((await health()).status).toBe('idle');
    const other = await customer();
    expect((await t.request('POST', `/blockchain-events/subscriptions/${id}/pause`, { key: other.key })).body.error.code).toBe('resource_not_found');
    expect((await t.request('POST', '/blockchain-events/subscriptions/not-a-uuid/pause', { key: c.key })).body.error.code).toBe('resource_not_found');
  });
});

describe('POST /blockchain-events/subscriptions/{referenceId}/callback-url', () => {
  it('points the subscription and its pending callbacks at the new URL (delivered there), and refuses an unverified, non-https or twin URL', async () => {
    const c = await customer();
    const tag = randomBytes(4).toString('hex');
    const oldUrl = `${receiver.url}/hooks/old-${tag}`;
    const newUrl = `${receiver.url}/hooks/new-${tag}`;
    const tx = `0x${randomBytes(32).toString('hex')}`;
    const id = await subscribe(c, 'transaction-mined', { transactionId: tx, callbackUrl: oldUrl });
    const waiting = await enqueue(c, id, oldUrl, new Date(Date.now() + 3_600_000));
    const change = (url: string, key = c.key, ref = id) =>
      t.request('POST', `/blockchain-events/subscriptions/${ref}/callback-url`, { key, body: { data: { item: { callbackUrl: url } } } });

    const changed = await change(newUrl);
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body.data.item).toMatchObject({ referenceId: id, callbackUrl: newUrl, isActive: true });
    expect(Number(changed.headers.get('x-credits-consumed'))).toBe(t.config.costs.rotateSecret);
    expect((await t.request('GET', `/blockchain-events/subscriptions/${id}`, { key: c.key })).body.data.item.callbackUrl).toBe(newUrl);
    // The pending callback is now due: it reaches the new URL, not the old one.
    await t.app.database.db.query('test:url-due', 'UPDATE callbacks SET next_attempt_at = now() WHERE id = $1', [waiting.id]);
    const delivered = await until(
      async () => receiver.received.filter((r) => r.path === `/hooks/new-${tag}`).length,
      (n) => n > 0,
    );
    expect(delivered).toBe(1);
    expect(receiver.received.some((r) => r.path === `/hooks/old-${tag}`)).toBe(false);

    expect((await change('https://not-verified.example.org/hooks')).body.error.code).toBe('callback_url_not_verified');
    expect((await change('http://localhost/hooks')).body.error.code).toBe('invalid_data');
    // An active twin (same event and target, no allowDuplicates) already has this URL.
    await subscribe(c, 'transaction-mined', { transactionId: tx, callbackUrl: oldUrl });
    expect((await change(oldUrl)).body.error.code).toBe('already_exists');
    const other = await customer();
    expect((await change(newUrl, other.key)).body.error.code).toBe('resource_not_found');
  });
});

describe('GET /account/overview', () => {
  it('counts the last 24 h of callbacks, names the failing subscriptions and unverified domains, and follows the first-run checklist', async () => {
    const fresh = await t.customer({ domains: [] });
    const empty = await t.request('GET', '/account/overview', { key: fresh.key });
    expect(empty.status, empty.text).toBe(200);
    expect(empty.headers.get('x-credits-consumed')).toBe('0');
    expect(empty.body.data.item).toMatchObject({
      callbacks: { delivered: 0, failed: 0, pending: 0, retrying: 0, successRate: null },
      failingSubscriptions: { total: 0, items: [] },
      unverifiedDomains: [],
      firstRun: { domainVerified: false, subscriptionCreated: false, testCallbackDelivered: false },
    });
    expect(empty.body.data.item.sinceTimestamp).toBeGreaterThan(Date.now() / 1000 - 86_400 - 60);

    const c = await customer();
    const registered = await t.request('POST', '/blockchain-events/callback-domains', {
      key: c.key,
      body: { data: { item: { domain: 'not-yet.example.com' } } },
    });
    expect(registered.status, registered.text).toBe(201);
    const callbackUrl = `${receiver.url}/hooks/${randomBytes(4).toString('hex')}`;
    const make = () => subscribe(c, 'transaction-mined', { transactionId: `0x${randomBytes(32).toString('hex')}`, callbackUrl });
    const [healthy, failing, deactivated, paused] = await Promise.all([make(), make(), make(), make()]);
    const later = new Date(Date.now() + 3_600_000);
    const done = await enqueue(c, healthy, callbackUrl, later);
    await enqueue(c, healthy, callbackUrl, later);
    const tried = await enqueue(c, healthy, callbackUrl, later);
    const lost = await enqueue(c, failing, callbackUrl, later);
    // An old failure, out of the window: not counted.
    const old = await enqueue(c, healthy, callbackUrl, later);
    const db = t.app.database.db;
    await db.query('test:ov-deliver', `UPDATE callbacks SET status = 'delivered', finished_at = now() WHERE id = $1`, [done.id]);
    await db.query('test:ov-retry', 'UPDATE callbacks SET attempts = 2, series_start = 0 WHERE id = $1', [tried.id]);
    await db.query('test:ov-fail', `UPDATE callbacks SET status = 'failed', finished_at = now() WHERE id = $1`, [lost.id]);
    await db.query(
      'test:ov-old',
      `UPDATE callbacks SET status = 'failed', finished_at = now() - interval '2 days', created_at = now() - interval '2 days' WHERE id = $1`,
      [old.id],
    );
    const reasons = (reason: string) => JSON.stringify([{ reason, timestamp: Math.floor(Date.now() / 1000) }]);
    await db.query('test:ov-deactivate', 'UPDATE subscriptions SET is_active = false, deactivation_reasons = $2 WHERE id = $1', [
      deactivated,
      reasons('callback_url_gone'),
    ]);
    await db.query('test:ov-pause', 'UPDATE subscriptions SET is_active = false, deactivation_reasons = $2 WHERE id = $1', [paused, reasons('paused')]);

    const read = async () => {
      const res = await t.request('GET', '/account/overview', { key: c.key });
      expect(res.status, res.text).toBe(200);
      return res.body.data.item;
    };
    const o = await read();
    expect(o.callbacks).toEqual({ delivered: 1, failed: 1, pending: 2, retrying: 1, successRate: 0.5 });
    expect(o.failingSubscriptions.total).toBe(2);
    expect(o.failingSubscriptions.items.map((f: { referenceId: string }) => f.referenceId)).toEqual([failing, deactivated]);
    expect(o.failingSubscriptions.items[0]).toMatchObject({
      eventType: 'TRANSACTION_MINED',
      blockchain: 'ethereum',
      network: 'goerli',
      isActive: true,
      failed: 1,
    });
    expect(o.failingSubscriptions.items[1]).toMatchObject({ isActive: false, failed: 0, lastFailedTimestamp: null });
    expect(o.unverifiedDomains).toEqual(['not-yet.example.com']);
    expect(o.firstRun).toEqual({ domainVerified: true, subscriptionCreated: true, testCallbackDelivered: false });

    // A test callback answered with a 2xx completes the checklist; a refused one does not.
    receiver.byPath(new URL(callbackUrl).pathname, { kind: 'status', status: 500 });
    const refused = await t.request('POST', `/blockchain-events/subscriptions/${healthy}/test-callback`, { key: c.key });
    expect(refused.body.data?.item?.delivered, refused.text).toBe(false);
    expect((await read()).firstRun.testCallbackDelivered).toBe(false);
    receiver.byPath(new URL(callbackUrl).pathname, { kind: 'status', status: 200 });
    const test = await t.request('POST', `/blockchain-events/subscriptions/${healthy}/test-callback`, { key: c.key });
    expect(test.body.data?.item?.delivered, test.text).toBe(true);
    expect((await read()).firstRun.testCallbackDelivered).toBe(true);
    // Another customer's overview sees none of it.
    expect((await t.request('GET', '/account/overview', { key: fresh.key })).body.data.item.failingSubscriptions.total).toBe(0);
  });
});

describe('GET /blockchain-events/callbacks (deliveries across subscriptions)', () => {
  it('lists the callbacks of every subscription newest first, filtered by state, event type, chain, subscription and time, charged per callback', async () => {
    const c = await customer();
    const callbackUrl = SAMPLE.callbackUrl;
    const goerli = await subscribe(c, 'transaction-mined', { transactionId: `0x${randomBytes(32).toString('hex')}`, callbackUrl });
    const sepolia = await subscribe(c, 'transaction-mined', { transactionId: `0x${randomBytes(32).toString('hex')}`, callbackUrl }, 'ethereum/sepolia');
    const blocks = await subscribe(c, 'block-mined', { callbackUrl }, 'bitcoin/testnet');
    const later = new Date(Date.now() + 3_600_000);
    const db = t.app.database.db;
    const a = await enqueue(c, goerli, callbackUrl, later);
    const b = await enqueue(c, sepolia, callbackUrl, later);
    const d = await enqueue(c, blocks, callbackUrl, later);
    const e = await enqueue(c, goerli, callbackUrl, later);
    // Creation times a minute apart (a oldest), states: a delivered, b failed, d retrying, e pending.
    for (const [i, id] of [a.id, b.id, d.id, e.id].entries()) {
      await db.query('test:dl-created', `UPDATE callbacks SET created_at = now() - make_interval(mins => $2) WHERE id = $1`, [id, 10 - i]);
    }
    await db.query('test:dl-delivered', `UPDATE callbacks SET status = 'delivered', finished_at = now() WHERE id = $1`, [a.id]);
    await db.query('test:dl-failed', `UPDATE callbacks SET status = 'failed', finished_at = now(), outcome = 'maximum_retry_attempts_reached' WHERE id = $1`, [
      b.id,
    ]);
    await db.query('test:dl-retrying', "UPDATE callbacks SET attempts = 1, event_type = 'BLOCK_MINED' WHERE id = $1", [d.id]);
    // Another customer's callback is never listed.
    const other = await customer();
    const theirs = await subscribe(other, 'transaction-mined', { transactionId: `0x${randomBytes(32).toString('hex')}`, callbackUrl });
    await enqueue(other, theirs, callbackUrl, later);

    const list = async (q = '') => {
      const res = await t.request('GET', `/blockchain-events/callbacks${q}`, { key: c.key });
      expect(res.status, res.text).toBe(200);
      return res;
    };
    const ids = async (q = '') => (await list(q)).body.data.items.map((x: { callbackId: string }) => x.callbackId);
    const all = await list();
    expect(all.body.data.total).toBe(4);
    expect(all.body.data.items.map((x: { callbackId: string }) => x.callbackId)).toEqual([e.id, d.id, b.id, a.id]);
    expect(all.body.data.items[2]).toMatchObject({
      referenceId: sepolia,
      blockchain: 'ethereum',
      network: 'sepolia',
      event: 'TRANSACTION_MINED',
      status: 'failed',
      outcome: 'maximum_retry_attempts_reached',
      attempts: [],
    });
    expect(all.body.data.untilTimestamp - all.body.data.sinceTimestamp).toBe(7 * 86_400);
    // Charged as the subscription's callback log: per callback returned.
    expect(Number(all.headers.get('x-credits-consumed'))).toBe(4 * t.config.costs.getSubscription);
    expect(await ids('?status=delivered')).toEqual([a.id]);
    expect(await ids('?status=failed')).toEqual([b.id]);
    expect(await ids('?status=retrying')).toEqual([d.id]);
    expect(await ids('?status=pending')).toEqual([e.id, d.id]);
    expect(await ids('?eventType=BLOCK_MINED')).toEqual([d.id]);
    expect(await ids('?blockchain=ethereum&network=goerli')).toEqual([e.id, a.id]);
    expect(await ids(`?referenceId=${sepolia}`)).toEqual([b.id]);
    const now = Math.floor(Date.now() / 1000);
    expect(await ids(`?since=${now - 9 * 60 - 30}&until=${now - 7 * 60 - 30}`)).toEqual([d.id, b.id]);
    expect(await ids('?limit=2&offset=1')).toEqual([d.id, b.id]);
    expect((await t.request('GET', '/blockchain-events/callbacks?referenceId=nope', { key: c.key })).body.error.code).toBe('resource_not_found');
    expect((await t.request('GET', '/blockchain-events/callbacks?status=lost', { key: c.key })).body.error.code).toBe('invalid_data');
  });
});

describe('GET /account and GET /account/usage', () => {
  it('shows the balance, plan and active subscriptions', async () => {
    const c = await customer({ credits: 50_000n, plan: { maxActiveSubscriptions: 7, requestsPerSecond: 99 } });
    await subscribe(c, 'transaction-mined', { transactionId: SAMPLE.evmTx, callbackUrl: SAMPLE.callbackUrl });
    const res = await t.request('GET', '/account', { key: c.key });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.item).toEqual({
      customerName: c.name,
      billingEnabled: true,
      credits: 49_000,
      plan: { mainnetAllowed: true, maxActiveSubscriptions: 7, requestsPerSecond: 99 },
      activeSubscriptions: 1,
    });
    expect(res.headers.get('x-credits-consumed')).toBe('0');
  });

  it('records credits per endpoint per UTC day with each debit, batched or not, and not for refused or refunded calls', async () => {
    // Enough for two creates, twenty reads and a delete: the third create is refused for lack of credits.
    const c = await customer({ credits: 2_025n });
    const today = new Date().toISOString().slice(0, 10);
    const usage = async (query = '') => {
      const res = await t.request('GET', `/account/usage${query}`, { key: c.key });
      expect(res.status, res.text).toBe(200);
      return res.body.data.items;
    };
    expect(await usage()).toEqual([]);
    const id = await subscribe(c, 'transaction-mined', { transactionId: SAMPLE.evmTx, callbackUrl: SAMPLE.callbackUrl });
    // Concurrent reads of one customer go through the charger's group commit: one statement, one usage row.
    await Promise.all(Array.from({ length: 20 }, () => t.request('GET', `/blockchain-events/subscriptions/${id}`, { key: c.key })));
    // Refused (already exists): charged, then refunded, so not counted.
    const twin = await t.request('POST', '/blockchain-events/ethereum/goerli/subscriptions/transaction-mined', {
      key: c.key,
      body: { data: { item: { transactionId: SAMPLE.evmTx, callbackUrl: SAMPLE.callbackUrl } } },
    });
    expect(twin.body.error.code).toBe('already_exists');
    const second = await t.request('POST', '/blockchain-events/ethereum/goerli/subscriptions/transaction-mined', {
      key: c.key,
      body: { data: { item: { transactionId: `0x${'cd'.repeat(32)}`, callbackUrl: SAMPLE.callbackUrl } } },
    });
    expect(second.status, second.text).toBe(200);
    // Too expensive now: 402, nothing taken, nothing recorded.
    const broke = await t.request('POST', '/blockchain-events/ethereum/goerli/subscriptions/transaction-mined', {
      key: c.key,
      body: { data: { item: { transactionId: `0x${'ef'.repeat(32)}`, callbackUrl: SAMPLE.callbackUrl } } },
    });
    expect(broke.body.error.code).toBe('insufficient_credits');
    // A debit in a transaction (delete).
    await t.request('DELETE', `/blockchain-events/ethereum/goerli/subscriptions/${id}`, { key: c.key });
    const cost = t.config.costs;
    const rows = await usage();
    expect(rows).toEqual(
      [
        { day: today, endpoint: 'delete-subscription', requests: 1, credits: cost.deleteSubscription },
        { day: today, endpoint: 'get-subscription', requests: 20, credits: 20 * cost.getSubscription },
        { day: today, endpoint: 'transaction-mined', requests: 2, credits: 2 * cost.transactionMined },
      ].filter((r) => r.credits > 0),
    );
    const spent = rows.reduce((sum: number, r: { credits: number }) => sum + r.credits, 0);
    const account = await t.request('GET', '/account', { key: c.key });
    expect(account.body.data.item.credits).toBe(2_025 - spent);
    expect(spent).toBe(2_021);

    // Older days: within `days` only, newest first.
    await t.app.database.db.query(
      'test:old-usage',
      `INSERT INTO credit_usage (customer_id, day, endpoint, requests, credits) VALUES
         ($1, (now() AT TIME ZONE 'UTC')::date - 1, 'status', 3, 0), ($1, (now() AT TIME ZONE 'UTC')::date - 5, 'wallets', 2, 200)`,
      [c.id],
    );
    const days = async (query: string) => [...new Set((await usage(query)).map((r: { day: string }) => r.day))];
    const dayBefore = (n: number) => new Date(Date.parse(today) - n * 86_400_000).toISOString().slice(0, 10);
    expect(await days('?days=1')).toEqual([today]);
    expect(await days('?days=5')).toEqual([today, dayBefore(1)]);
    expect(await days('?days=6')).toEqual([today, dayBefore(1), dayBefore(5)]);
    expect(await days('')).toEqual([today, dayBefore(1), dayBefore(5)]);
    for (const bad of ['?days=0', '?days=91', '?days=x']) {
      const res = await t.request('GET', `/account/usage${bad}`, { key: c.key });
      expect(res.status, bad).toBe(409);
      expect(res.body.error.code).toBe('invalid_data');
    }
  });
});

describe('GET /operator/delivery', () => {
  it('counts each attempt once per minute by outcome, reports the queue, and ranks destinations of the last hour by their p95', async () => {
    const made = await createOperatorToken(t.app.database.db, 'delivery-page');
    const operator = { authorization: `Bearer ${made?.token}` };
    const page = async () => {
      const res = await t.request('GET', '/operator/delivery?minutes=10', { headers: operator });
      expect(res.status, res.text).toBe(200);
      return res.body.data.item;
    };
    const totals = (item: { attemptsPerMinute: { delivered: number; failed: number; retried: number }[] }) =>
      item.attemptsPerMinute.reduce((sum, m) => ({ delivered: sum.delivered + m.delivered, failed: sum.failed + m.failed, retried: sum.retried + m.retried }), {
        delivered: 0,
        failed: 0,
        retried: 0,
      });
    const minuteNow = () => wholeMinute(new Date()).getTime() / 1000;
    // The chart counts every attempt of the database: earlier tests' retries, due while this one runs, would
    // add to its minutes (CI once saw a stray retry stand in for this test's own). They wait a day.
    await t.app.database.db.query('test:defer-others', "UPDATE callbacks SET next_attempt_at = now() + interval '1 day' WHERE status = 'pending'");
    const askedIn = minuteNow();
    const before = await page();
    expect(before.attemptsPerMinute).toHaveLength(10);
    const minutes = before.attemptsPerMinute.map((m: { timestamp: number }) => m.timestamp);
    expect(minutes[9] - minutes[0]).toBe(9 * 60);
    // The last minute is the one the server answered in: the one asked in, or the next if the request crossed into it.
    expect([askedIn, minuteNow()]).toContain(minutes[9]);

    const c = await customer();
    const outcomes = { ok: 200, busy: 500, gone: 410 } as const;
    const ours: string[] = [];
    for (const [name, status] of Object.entries(outcomes)) {
      const callbackUrl = `${receiver.url}/outcome-${name}-${randomBytes(3).toString('hex')}`;
      receiver.byPath(new URL(callbackUrl).pathname, { kind: 'status', status });
      const id = await subscribe(c, 'transaction-mined', { transactionId: `0x${randomBytes(32).toString('hex')}`, callbackUrl });
      ours.push((await enqueue(c, id, callbackUrl)).id);
    }
    const attempted = async () =>
      (
        await t.app.database.db.query<{ n: number }>(
          'test:attempted',
          'SELECT count(DISTINCT callback_id)::int AS n FROM callback_attempts WHERE callback_id = ANY($1)',
          [ours],
        )
      )[0]?.n;
    expect(await until(attempted, (n) => n === 3, 20_000)).toBe(3);
    // A callback due two minutes ago that nothing claims: the worker is stopped (this is the file's last
    // test). A paused subscription's callback would not do: it is held out of the due queue (dormant,
    // docs/concepts/delivery.md) and not counted as due.
    await t.app.worker?.stop();
    const parkedUrl = `${receiver.url}/parked`;
    const parked = await subscribe(c, 'transaction-mined', { transactionId: `0x${randomBytes(32).toString('hex')}`, callbackUrl: parkedUrl });
    await enqueue(c, parked, parkedUrl, new Date(Date.now() - 120_000));

    const after = await until(page, (item) => {
      const sum = totals(item);
      return sum.delivered + sum.failed + sum.retried >= totals(before).delivered + totals(before).failed + totals(before).retried + 3;
    });
    const [was, now] = [totals(before), totals(after)];
    expect({ delivered: now.delivered - was.delivered, failed: now.failed - was.failed, retried: now.retried - was.retried }).toEqual({
      delivered: 1,
      failed: 1,
      retried: 1,
    });
    expect(after.due).toBeGreaterThanOrEqual(before.due + 1);
    expect(after.oldestDueAgeSeconds).toBeGreaterThanOrEqual(120);
    const host = new URL(receiver.url).host;
    const slowest = after.slowestDestinations.find((d: { host: string }) => d.host === host);
    expect(slowest).toMatchObject({ host, attempts: expect.any(Number), failures: expect.any(Number) });
    expect(slowest.attempts).toBeGreaterThanOrEqual(3);
    expect(slowest.failures).toBeGreaterThanOrEqual(2);
    expect(slowest.p95Ms).toBeGreaterThanOrEqual(slowest.p50Ms);
    expect(after.slowestDestinations.length).toBeLessThanOrEqual(10);

    for (const bad of ['?minutes=0', '?minutes=10081']) {
      expect((await t.request('GET', `/operator/delivery${bad}`, { headers: operator })).body.error.code).toBe('invalid_data');
    }
    expect((await t.request('GET', '/operator/delivery', { key: c.key })).body.error.code).toBe('invalid_operator_token');
    // Seven days of minutes at most, every one present.
    const week = await t.request('GET', '/operator/delivery?minutes=10080', { headers: operator });
    expect(week.body.data.item.attemptsPerMinute).toHaveLength(10080);
  });
});
