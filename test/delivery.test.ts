/**
 * Callback delivery end to end (docs/reference/events/README.md#signatures and #delivery): a real herald with its
 * delivery worker, a real HTTPS receiver with a CA of its own, and a manual clock. Retry delays are
 * crossed by moving the clock and waking the worker, never by waiting for them.
 *
 * Each test gets its own receiver(s) and customer; subscriptions made in a test are deleted after it,
 * so that callbacks still pending cannot be retried in a later test when the clock moves on.
 */
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/config.ts';
import type { Clock } from '../src/delivery/worker.ts';
import { callbackBody } from '../src/domain/callbacks.ts';
import type { EventType } from '../src/domain/chains.ts';
import { cancelPendingCallbacks, claimDueCallbacks, destinationOf, enqueueCallbacks, listCallbacks, PARK_AFTER_FAILURES } from '../src/store/callbacks.ts';
import { findCustomerByName } from '../src/store/customers.ts';
import type { Queryable } from '../src/store/db.ts';
import { listMigrations } from '../src/store/migrate.ts';
import { deleteSubscription } from '../src/store/subscriptions.ts';
import { SAMPLE, startTestApp, type TestApp, type TestCustomer } from './harness.ts';
import { type Behaviour, type ReceivedRequest, type Receiver, startReceiver } from './support/receiver.ts';
import { createTestCa, type TestCa, writeCaFile } from './support/tls.ts';
import { until } from './support/wait.ts';

const SECOND = 1000;
const HOUR = 3600 * SECOND;
const API_VERSION = '2021-03-20';
/** Test callbacks' transaction ids and block hashes: all zeros, which no chain produces. */
const ZERO_EVM_HASH = `0x${'0'.repeat(64)}`;
/** The contract's schedule: 30 s, 2 min, 10 min, 30 min, 1 h, 2 h, 4 h, 8 h, 12 h, each +-20 %. */
const SCHEDULE_SECONDS = [30, 120, 600, 1800, 3600, 7200, 14400, 28800, 43200];
const JITTER = 0.2;
const TIMEOUT_MS = 500;

/** A clock that stands still until the test moves it. */
class ManualClock implements Clock {
  #ms = Date.now();
  now(): Date {
    return new Date(this.#ms);
  }
  get ms(): number {
    return this.#ms;
  }
  /** Moves to `ms` (never backwards). */
  set(ms: number): void {
    if (ms < this.#ms) throw new Error(`the test clock cannot go back from ${this.#ms} to ${ms}`);
    this.#ms = ms;
  }
  advance(ms: number): void {
    this.set(this.#ms + ms);
  }
}

const clock = new ManualClock();
let ca: TestCa;
let t: TestApp;

beforeAll(async () => {
  ca = await createTestCa();
  t = await startTestApp(
    {
      delivery: {
        ...loadConfig({}, {}).delivery,
        allowNetworks: ['127.0.0.1/32', '::1/128'],
        caFile: writeCaFile(ca.caPem),
        timeoutMs: TIMEOUT_MS,
        pollIntervalMs: 20,
        perDestinationConcurrency: 2,
      },
    },
    { clock },
  );
});
afterAll(async () => {
  await t?.close();
});

// --- per-test resources --------------------------------------------------------------------------

const receivers: Receiver[] = [];
const created: { key: string; id: string }[] = [];

afterEach(async () => {
  for (const s of created.splice(0)) {
    await t.request('DELETE', `/blockchain-events/ethereum/goerli/subscriptions/${s.id}`, { key: s.key });
  }
  await worker().settled();
  for (const r of receivers.splice(0)) await r.close();
});

function worker() {
  const w = t.app.worker;
  if (!w) throw new Error('the test app has no delivery worker');
  return w;
}

/** A receiver (its own destination) with a certificate from the CA the app trusts. */
async function receiver(defaultBehaviour?: Behaviour): Promise<Receiver> {
  const r = await startReceiver({ ca });
  receivers.push(r);
  if (defaultBehaviour) r.setDefault(defaultBehaviour);
  return r;
}

/** A customer whose callbacks may go to the receivers; `credits` defaults to plenty. */
function customer(credits?: bigint): Promise<TestCustomer> {
  return t.customer({ domains: ['localhost'], ...(credits !== undefined && { credits }) });
}

/** Exactly what one transaction-mined subscription costs: a customer created with it has 0 left after subscribing. */
const ONE_SUBSCRIPTION = 1000n;

async function creditsOf(c: TestCustomer): Promise<bigint | undefined> {
  return (await findCustomerByName(t.app.database.db, c.name))?.credits;
}

/** A callback's status read from the store (the log endpoint would charge, and 404s once the subscription is deleted). */
async function storedStatus(c: TestCustomer, s: Sub, callbackId: string): Promise<string | undefined> {
  const log = await listCallbacks(t.app.database.db, c.id, s.referenceId, { limit: 50, offset: 0 });
  return log.items.find((e) => e.id === callbackId)?.status;
}

const status = (code: number, headers?: Record<string, string>): Behaviour => ({ kind: 'status', status: code, headers });

interface Sub {
  referenceId: string;
  callbackUrl: string;
  eventType: EventType;
  transactionId?: string;
  address?: string;
}

async function subscribe(
  c: TestCustomer,
  callbackUrl: string,
  options: { secret?: string; event?: 'transaction-mined' | 'address-tokens-transactions-confirmed' | 'internal-transactions-for-specific-amount' } = {},
): Promise<Sub> {
  const event = options.event ?? 'transaction-mined';
  const target =
    event === 'transaction-mined'
      ? { transactionId: `0x${randomBytes(32).toString('hex')}` }
      : event === 'address-tokens-transactions-confirmed'
        ? { address: SAMPLE.evmAddress }
        : { amountHigherThan: 5 };
  const item = { ...target, callbackUrl, ...(options.secret !== undefined && { callbackSecretKey: options.secret }) };
  const res = await t.request('POST', `/blockchain-events/ethereum/goerli/subscriptions/${event}`, { key: c.key, body: { data: { item } } });
  expect(res.status, res.text).toBe(event === 'transaction-mined' ? 200 : 201);
  const s = res.body.data.item as Sub;
  created.push({ key: c.key, id: s.referenceId });
  return s;
}

interface Queued {
  id: string;
  key: string;
  body: string;
}

/** Queues a callback of `s` as chain following would (inside a transaction), due at `due` (default: the clock's now). */
async function enqueue(c: TestCustomer, s: Sub, item: Record<string, unknown> = { n: 1 }, due: Date = clock.now()): Promise<Queued> {
  const key = randomBytes(32).toString('hex');
  const body = callbackBody({ id: s.referenceId, eventType: s.eventType, apiVersion: API_VERSION }, key, item);
  const id = randomUUID();
  await t.app.database.db.transaction('test:enqueue', (tx) =>
    enqueueCallbacks(
      tx,
      [{ id, customerId: c.id, subscriptionId: s.referenceId, eventType: s.eventType, idempotencyKey: key, body, callbackUrl: s.callbackUrl }],
      due,
    ),
  );
  return { id, key, body };
}

interface LogAttempt {
  attempt: number;
  timestamp: number;
  durationMs: number;
  httpStatus: number | null;
  error: { class: string; message: string } | null;
}
interface LogEntry {
  callbackId: string;
  idempotencyKey: string;
  event: string;
  status: string;
  outcome: string | null;
  createdTimestamp: number;
  nextAttemptTimestamp: number | null;
  attempts: LogAttempt[];
}

/** The callback log of a subscription (the API's view). */
async function callbackLog(c: TestCustomer, s: Sub): Promise<LogEntry[]> {
  const res = await t.request('GET', `/blockchain-events/subscriptions/${s.referenceId}/callbacks`, { key: c.key });
  expect(res.status, res.text).toBe(200);
  return res.body.data.items as LogEntry[];
}

async function entryOf(c: TestCustomer, s: Sub, callbackId: string): Promise<LogEntry> {
  const entry = (await callbackLog(c, s)).find((e) => e.callbackId === callbackId);
  if (!entry) throw new Error(`callback ${callbackId} is not in the log of subscription ${s.referenceId}`);
  return entry;
}

async function getSubscription(c: TestCustomer, s: Sub) {
  const res = await t.request('GET', `/blockchain-events/subscriptions/${s.referenceId}`, { key: c.key });
  expect(res.status, res.text).toBe(200);
  return res.body.data.item as { isActive: boolean; deactivationReasons?: { reason: string; timestamp: number }[] };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits for `count` requests at `r`, then for the worker to record what it made of them. */
async function arrived(r: Receiver, count: number): Promise<ReceivedRequest[]> {
  const got = await r.waitFor(count);
  await worker().settled();
  return got;
}

/**
 * Moves the clock, wakes the worker and gives it a few poll intervals (real time: only the worker's
 * claim query is waited for, never a retry delay) to claim whatever is due; then waits for it to settle.
 */
async function moveClockTo(ms: number): Promise<void> {
  clock.set(ms);
  worker().wake();
  await sleep(150);
  await worker().settled();
}

/**
 * The attempt just made (at the clock's present time) failed: the next is not made before delay x 0.8
 * and is made by delay x 1.2. Leaves the clock where the next attempt was made.
 */
async function expectRetryWithin(r: Receiver, delaySeconds: number): Promise<void> {
  const last = clock.ms;
  const before = r.received.length;
  await moveClockTo(last + delaySeconds * (1 - JITTER) * SECOND - SECOND);
  expect(r.received.length, `no retry before ${delaySeconds} s x ${1 - JITTER}`).toBe(before);
  clock.set(last + delaySeconds * (1 + JITTER) * SECOND + SECOND);
  worker().wake();
  await arrived(r, before + 1);
  expect(r.received.length).toBe(before + 1);
}

const hmacHex = (secret: string, data: Buffer) => createHmac('sha256', secret).update(data).digest('hex');

function expectSignedBy(request: ReceivedRequest, secret: string): void {
  const h = request.headers;
  expect(h['x-signature']).toBe(hmacHex(secret, request.rawBody));
  const id = h['webhook-id'] as string;
  const timestamp = h['webhook-timestamp'] as string;
  expect(timestamp).toMatch(/^\d+$/);
  const signed = Buffer.concat([Buffer.from(`${id}.${timestamp}.`, 'utf8'), request.rawBody]);
  expect(h['webhook-signature']).toBe(`v1,${createHmac('sha256', secret).update(signed).digest('base64')}`);
  expect(id).toBe(JSON.parse(request.rawBody.toString('utf8')).idempotencyKey);
}

// --- the tests -----------------------------------------------------------------------------------

it('runs on the contract retry schedule', () => {
  expect(t.config.delivery.retryScheduleSeconds).toEqual(SCHEDULE_SECONDS);
  expect(t.config.delivery.retryJitter).toBe(JITTER);
});

describe('outcomes of one attempt', () => {
  it('200: delivered, one attempt with httpStatus 200, the exact body bytes sent', async () => {
    const r = await receiver();
    const c = await customer();
    const s = await subscribe(c, `${r.url}/ok`);
    const cb = await enqueue(c, s);
    const [got] = await arrived(r, 1);
    expect(got?.method).toBe('POST');
    expect(got?.path).toBe('/ok');
    expect(got?.headers['content-type']).toBe('application/json');
    expect(got?.rawBody.equals(Buffer.from(cb.body, 'utf8'))).toBe(true);
    const entry = await entryOf(c, s, cb.id);
    expect(entry).toMatchObject({ idempotencyKey: cb.key, event: 'TRANSACTION_MINED', status: 'delivered', outcome: null, nextAttemptTimestamp: null });
    expect(entry.attempts).toHaveLength(1);
    expect(entry.attempts[0]).toMatchObject({ attempt: 1, httpStatus: 200, error: null });
    // Nothing more, however far the clock goes.
    await moveClockTo(clock.ms + 48 * HOUR);
    expect(r.received).toHaveLength(1);
  });

  it('500: retried, not before 30 s x 0.8 and by 30 s x 1.2', async () => {
    const r = await receiver(status(500));
    const c = await customer();
    const s = await subscribe(c, `${r.url}/fails`);
    const cb = await enqueue(c, s);
    await arrived(r, 1);
    const first = clock.ms;
    const entry = await entryOf(c, s, cb.id);
    expect(entry.status).toBe('pending');
    expect(entry.attempts).toEqual([expect.objectContaining({ attempt: 1, httpStatus: 500, error: expect.objectContaining({ class: 'bad_status' }) })]);
    const next = entry.nextAttemptTimestamp as number;
    expect(next).toBeGreaterThanOrEqual(Math.floor(first / SECOND) + 24 - 1);
    expect(next).toBeLessThanOrEqual(Math.floor(first / SECOND) + 36 + 1);

    await moveClockTo(first + 23 * SECOND);
    expect(r.received).toHaveLength(1);
    clock.set(first + 37 * SECOND);
    worker().wake();
    await arrived(r, 2);
    const after = await entryOf(c, s, cb.id);
    expect(after.status).toBe('pending');
    expect(after.attempts.map((a) => a.httpStatus)).toEqual([500, 500]);
  });

  it('no answer within the timeout: error class timeout, retried', async () => {
    const r = await receiver({ kind: 'timeout' });
    const c = await customer();
    const s = await subscribe(c, `${r.url}/hangs`);
    const cb = await enqueue(c, s);
    await arrived(r, 1);
    const entry = await entryOf(c, s, cb.id);
    expect(entry.status).toBe('pending');
    expect(entry.attempts[0]).toMatchObject({ httpStatus: null, error: { class: 'timeout' } });
    expect(entry.attempts[0]?.durationMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    expect(entry.attempts[0]?.durationMs).toBeLessThan(TIMEOUT_MS + 1500);
    await expectRetryWithin(r, 30);
  });

  it('headers at once but a body slower than the timeout: timeout too, retried', async () => {
    const r = await receiver({ kind: 'slow-body', status: 200, chunkDelayMs: 150, chunks: 20 });
    const c = await customer();
    const s = await subscribe(c, `${r.url}/dribbles`);
    const cb = await enqueue(c, s);
    await arrived(r, 1);
    const entry = await entryOf(c, s, cb.id);
    expect(entry.status).toBe('pending');
    expect(entry.attempts[0]?.error?.class).toBe('timeout');
    expect(entry.attempts[0]?.durationMs).toBeLessThan(TIMEOUT_MS + 1500);
    await expectRetryWithin(r, 30);
  });

  it('connection reset: a failure (connection_reset), retried', async () => {
    const r = await receiver({ kind: 'reset' });
    const c = await customer();
    const s = await subscribe(c, `${r.url}/resets`);
    const cb = await enqueue(c, s);
    await arrived(r, 1);
    const entry = await entryOf(c, s, cb.id);
    expect(entry.status).toBe('pending');
    expect(entry.attempts[0]).toMatchObject({ httpStatus: null, error: { class: 'connection_reset' } });
    await expectRetryWithin(r, 30);
  });

  it('429 with Retry-After: 120: the next attempt at +120 s, not at +30 s', async () => {
    const r = await receiver();
    r.script(status(429, { 'retry-after': '120' }));
    const c = await customer();
    const s = await subscribe(c, `${r.url}/busy`);
    const cb = await enqueue(c, s);
    await arrived(r, 1);
    const first = clock.ms;
    const entry = await entryOf(c, s, cb.id);
    expect(entry.attempts[0]).toMatchObject({ httpStatus: 429, error: { class: 'bad_status' } });
    expect(entry.nextAttemptTimestamp).toBe(Math.floor(first / SECOND) + 120);

    await moveClockTo(first + 37 * SECOND); // where the schedule's first retry would be at the latest
    expect(r.received).toHaveLength(1);
    await moveClockTo(first + 119 * SECOND);
    expect(r.received).toHaveLength(1);
    clock.set(first + 120 * SECOND);
    worker().wake();
    await arrived(r, 2);
    expect((await entryOf(c, s, cb.id)).status).toBe('delivered');
  });

  it('Retry-After beyond 12 h is honoured up to 12 h', async () => {
    const r = await receiver();
    r.script(status(503, { 'retry-after': String(7 * 24 * 3600) }));
    const c = await customer();
    const s = await subscribe(c, `${r.url}/maintenance`);
    const cb = await enqueue(c, s);
    await arrived(r, 1);
    const first = clock.ms;
    expect((await entryOf(c, s, cb.id)).nextAttemptTimestamp).toBe(Math.floor(first / SECOND) + 12 * 3600);
    await moveClockTo(first + 12 * HOUR - SECOND);
    expect(r.received).toHaveLength(1);
    clock.set(first + 12 * HOUR);
    worker().wake();
    await arrived(r, 2);
    expect((await entryOf(c, s, cb.id)).status).toBe('delivered');
  });

  it('410: no retry, failed with callback_url_gone, only that subscription deactivated', async () => {
    const r = await receiver();
    r.byPath('/gone', status(410));
    const c = await customer();
    const gone = await subscribe(c, `${r.url}/gone`);
    const twin = await subscribe(c, `${r.url}/gone`); // same customer, event type and callbackUrl
    const other = await subscribe(c, `${r.url}/fine`);
    const cb = await enqueue(c, gone);
    await arrived(r, 1);
    const entry = await entryOf(c, gone, cb.id);
    expect(entry).toMatchObject({ status: 'failed', outcome: 'callback_url_gone', nextAttemptTimestamp: null });
    expect(entry.attempts).toEqual([expect.objectContaining({ httpStatus: 410 })]);

    const deactivated = await getSubscription(c, gone);
    expect(deactivated.isActive).toBe(false);
    expect(deactivated.deactivationReasons?.map((d) => d.reason)).toEqual(['callback_url_gone']);
    expect((await getSubscription(c, twin)).isActive).toBe(true);
    expect((await getSubscription(c, other)).isActive).toBe(true);

    await moveClockTo(clock.ms + 48 * HOUR);
    expect(r.received).toHaveLength(1);
  });

  it('301 to another host: a failure (bad_status), the redirect not followed', async () => {
    const elsewhere = await receiver();
    const r = await receiver(status(301, { location: `${elsewhere.url}/moved` }));
    const c = await customer();
    const s = await subscribe(c, `${r.url}/redirects`);
    const cb = await enqueue(c, s);
    await arrived(r, 1);
    const entry = await entryOf(c, s, cb.id);
    expect(entry.status).toBe('pending');
    expect(entry.attempts[0]).toMatchObject({ httpStatus: 301, error: { class: 'bad_status' } });
    await sleep(100);
    expect(elsewhere.received).toHaveLength(0);
    expect(r.received.map((x) => x.path)).toEqual(['/redirects']);
  });
});

it('after 10 failed attempts: failed, and every active subscription with the same event type and callbackUrl deactivated', async () => {
  const r = await receiver();
  r.byPath('/down', status(500));
  const c = await customer();
  const failing = await subscribe(c, `${r.url}/down`);
  const twin = await subscribe(c, `${r.url}/down`); // same event type and callbackUrl: deactivated too
  const otherUrl = await subscribe(c, `${r.url}/up`); // another callbackUrl: stays active
  const otherEvent = await subscribe(c, `${r.url}/down`, { event: 'address-tokens-transactions-confirmed' }); // another event type: stays active
  const stranger = await t.customer({ domains: ['localhost'] });
  const otherCustomer = await subscribe(stranger, `${r.url}/down`); // another customer: stays active

  const cb = await enqueue(c, failing);
  await arrived(r, 1);
  for (const delay of SCHEDULE_SECONDS) {
    expect((await entryOf(c, failing, cb.id)).status).toBe('pending');
    await expectRetryWithin(r, delay);
  }
  expect(r.received).toHaveLength(10);
  const entry = await entryOf(c, failing, cb.id);
  expect(entry).toMatchObject({ status: 'failed', outcome: 'maximum_retry_attempts_reached', nextAttemptTimestamp: null });
  expect(entry.attempts.map((a) => a.attempt)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  expect(new Set(entry.attempts.map((a) => a.httpStatus))).toEqual(new Set([500]));

  // No 11th attempt.
  await moveClockTo(clock.ms + 48 * HOUR);
  expect(r.received).toHaveLength(10);

  for (const s of [failing, twin]) {
    const item = await getSubscription(c, s);
    expect(item.isActive).toBe(false);
    expect(item.deactivationReasons?.map((d) => d.reason)).toContain('maximum_retry_attempts_reached');
  }
  expect((await getSubscription(c, otherUrl)).isActive).toBe(true);
  expect((await getSubscription(c, otherEvent)).isActive).toBe(true);
  expect((await getSubscription(stranger, otherCustomer)).isActive).toBe(true);

  for (const s of [failing, twin]) {
    const res = await t.request('POST', `/blockchain-events/subscriptions/${s.referenceId}/activate`, { key: c.key });
    expect(res.status, res.text).toBe(201);
    expect(res.body.data.item.isActive).toBe(true);
    expect((await getSubscription(c, s)).isActive).toBe(true);
  }
});

describe('signatures', () => {
  it('x-signature and webhook-signature verify over the exact bytes, non-ASCII secret and body', async () => {
    const secret = 'sécret-ключ-秘密-🔑';
    const r = await receiver();
    const c = await customer();
    const s = await subscribe(c, `${r.url}/signed`, { secret });
    const cb = await enqueue(c, s, { memo: 'Grüße aus Köln — 東京 ✓ 🚀', quote: '"\\u00e9" é' });
    const [got] = await arrived(r, 1);
    if (!got) throw new Error('no request');
    expect(got.rawBody.equals(Buffer.from(cb.body, 'utf8'))).toBe(true);
    expect(got.rawBody.toString('utf8')).toContain('東京');
    expectSignedBy(got, secret);
    expect(got.headers['webhook-id']).toBe(cb.key);
    // Signed at the worker's time.
    expect(got.headers['webhook-timestamp']).toBe(String(Math.floor(clock.ms / SECOND)));
    // A different key does not verify: the check above is not vacuous.
    expect(got.headers['x-signature']).not.toBe(hmacHex('secret', got.rawBody));
  });

  it('no callbackSecretKey: no signature headers', async () => {
    const r = await receiver();
    const c = await customer();
    const s = await subscribe(c, `${r.url}/unsigned`);
    await enqueue(c, s);
    const [got] = await arrived(r, 1);
    expect(got?.headers).not.toHaveProperty('x-signature');
    expect(got?.headers).not.toHaveProperty('webhook-signature');
  });
});

it('a retried callback carries the same idempotencyKey and the same body bytes', async () => {
  const secret = 'k€y';
  const r = await receiver();
  r.script(status(500), status(503));
  const c = await customer();
  const s = await subscribe(c, `${r.url}/retry`, { secret });
  const cb = await enqueue(c, s, { text: 'ünïcödé' });
  await arrived(r, 1);
  await expectRetryWithin(r, 30);
  await expectRetryWithin(r, 120);
  const entry = await entryOf(c, s, cb.id);
  expect(entry.status).toBe('delivered');
  expect(entry.attempts.map((a) => a.httpStatus)).toEqual([500, 503, 200]);
  const [a, b, d] = r.received;
  for (const x of [a, b, d]) {
    if (!x) throw new Error('missing request');
    expect(x.rawBody.equals(Buffer.from(cb.body, 'utf8'))).toBe(true);
    expect(x.headers['webhook-id']).toBe(cb.key);
    expect(JSON.parse(x.rawBody.toString('utf8')).idempotencyKey).toBe(cb.key);
    expectSignedBy(x, secret);
  }
});

it('deleting a subscription cancels its pending callbacks', async () => {
  const r = await receiver(status(500));
  const c = await customer();
  const s = await subscribe(c, `${r.url}/deleted`);
  const retrying = await enqueue(c, s, { n: 1 });
  await arrived(r, 1);
  const later = await enqueue(c, s, { n: 2 }, new Date(clock.ms + HOUR)); // not yet due
  expect((await callbackLog(c, s)).map((e) => e.status)).toEqual(['pending', 'pending']);

  const res = await t.request('DELETE', `/blockchain-events/ethereum/goerli/subscriptions/${s.referenceId}`, { key: c.key });
  expect(res.status, res.text).toBe(200);
  // The subscription is gone, so its log is read from the store.
  const log = await listCallbacks(t.app.database.db, c.id, s.referenceId, { limit: 50, offset: 0 });
  expect(Object.fromEntries(log.items.map((e) => [e.id, [e.status, e.outcome]]))).toEqual({
    [retrying.id]: ['cancelled', 'subscription_deleted'],
    [later.id]: ['cancelled', 'subscription_deleted'],
  });

  await moveClockTo(clock.ms + 48 * HOUR);
  expect(r.received).toHaveLength(1);
});

describe('resend', () => {
  it('a delivered callback is sent again with the same idempotencyKey and body', async () => {
    const r = await receiver();
    const c = await customer();
    const s = await subscribe(c, `${r.url}/resend`, { secret: 's' });
    const cb = await enqueue(c, s);
    await arrived(r, 1);
    expect((await entryOf(c, s, cb.id)).status).toBe('delivered');

    // The resend is due at the API's (system) time; keep the worker's clock at or past it.
    clock.set(Math.max(clock.ms, Date.now() + 5 * SECOND));
    const res = await t.request('POST', `/blockchain-events/callbacks/${cb.id}/resend`, { key: c.key });
    expect(res.status, res.text).toBe(201);
    expect(res.body.data.item).toEqual({ callbackId: cb.id, status: 'pending' });
    worker().wake();
    const [first, second] = await arrived(r, 2);
    expect(second?.rawBody.equals(first?.rawBody as Buffer)).toBe(true);
    expect(second?.headers['webhook-id']).toBe(cb.key);
    expect(JSON.parse(second?.rawBody.toString('utf8') ?? '{}').idempotencyKey).toBe(cb.key);
    const entry = await entryOf(c, s, cb.id);
    expect(entry.status).toBe('delivered');
    expect(entry.attempts.map((a) => a.httpStatus)).toEqual([200, 200]);
  });

  it('a pending callback: 409', async () => {
    const r = await receiver(status(500));
    const c = await customer();
    const s = await subscribe(c, `${r.url}/pending`);
    const cb = await enqueue(c, s);
    await arrived(r, 1);
    expect((await entryOf(c, s, cb.id)).status).toBe('pending');
    const res = await t.request('POST', `/blockchain-events/callbacks/${cb.id}/resend`, { key: c.key });
    expect(res.status, res.text).toBe(409);
    expect(res.body.error.code).toBe('already_exists');
    await sleep(100);
    expect(r.received).toHaveLength(1);
  });

  it('with no credits left: 402, and the callback is neither queued again nor sent', async () => {
    const r = await receiver();
    const c = await customer(ONE_SUBSCRIPTION);
    const s = await subscribe(c, `${r.url}/resend-broke`);
    const cb = await enqueue(c, s);
    await arrived(r, 1);
    expect(await creditsOf(c)).toBe(0n);

    clock.set(Math.max(clock.ms, Date.now() + 5 * SECOND));
    const res = await t.request('POST', `/blockchain-events/callbacks/${cb.id}/resend`, { key: c.key });
    expect(res.status, res.text).toBe(402);
    expect(res.body.error.code).toBe('insufficient_credits');
    expect(await storedStatus(c, s, cb.id)).toBe('delivered');
    await moveClockTo(clock.ms + HOUR);
    expect(r.received).toHaveLength(1);
  });

  it('a callback of a deleted subscription: 404 saying so, nothing queued, nothing charged', async () => {
    const r = await receiver();
    const c = await customer();
    const s = await subscribe(c, `${r.url}/resend-deleted`);
    const cb = await enqueue(c, s);
    await arrived(r, 1);
    const deleted = await t.request('DELETE', `/blockchain-events/ethereum/goerli/subscriptions/${s.referenceId}`, { key: c.key });
    expect(deleted.status, deleted.text).toBe(200);
    const before = await creditsOf(c);

    clock.set(Math.max(clock.ms, Date.now() + 5 * SECOND));
    const res = await t.request('POST', `/blockchain-events/callbacks/${cb.id}/resend`, { key: c.key });
    expect(res.status, res.text).toBe(404);
    expect(res.body.error.code).toBe('resource_not_found');
    expect(res.body.error.message).toMatch(/subscription .* was deleted/);
    expect(await storedStatus(c, s, cb.id)).toBe('delivered');
    expect(await creditsOf(c)).toBe(before);
    await moveClockTo(clock.ms + HOUR);
    expect(r.received).toHaveLength(1);
  });

  it('migration 008 cancels the pending callbacks an earlier resend left behind a deleted subscription', async () => {
    const c = await customer();
    const kept = await subscribe(c, 'https://localhost:1/kept');
    const gone = await subscribe(c, 'https://localhost:1/gone');
    const due = new Date(clock.ms + 48 * HOUR); // not due in this test: the worker leaves both alone
    const pending = await enqueue(c, kept, { n: 1 }, due);
    const orphan = await enqueue(c, gone, { n: 2 }, due);
    // What the old resend did: a deleted subscription's callback put back to pending.
    await t.app.database.db.transaction('test:orphan', (tx) => deleteSubscription(tx, c.id, 'ethereum', 'goerli', gone.referenceId));
    const migration = listMigrations().find((m) => m.version === 8);
    if (!migration) throw new Error('migration 008 is missing');
    await t.app.database.db.query('test:migration-008', migration.sql);
    const log = async (s: Sub) => (await listCallbacks(t.app.database.db, c.id, s.referenceId, { limit: 50, offset: 0 })).items;
    expect((await log(gone)).map((e) => [e.id, e.status, e.outcome])).toEqual([[orphan.id, 'cancelled', 'subscription_deleted']]);
    expect((await log(kept)).map((e) => [e.id, e.status])).toEqual([[pending.id, 'pending']]);
  });

  it('a resend racing the deletion of its subscription waits for it, then answers 404 and queues nothing', async () => {
    const r = await receiver();
    const c = await customer();
    const s = await subscribe(c, `${r.url}/resend-race`);
    const cb = await enqueue(c, s);
    await arrived(r, 1);

    // The deletion the API makes, held open before its commit while the resend comes in.
    let commit = () => {};
    const held = new Promise<void>((resolve) => {
      commit = resolve;
    });
    let deleted = () => {};
    const deleting = new Promise<void>((resolve) => {
      deleted = resolve;
    });
    const deletion = t.app.database.db.transaction('test:held-delete', async (tx) => {
      await deleteSubscription(tx, c.id, 'ethereum', 'goerli', s.referenceId);
      await cancelPendingCallbacks(tx, c.id, s.referenceId);
      deleted();
      await held;
    });
    await deleting;
    clock.set(Math.max(clock.ms, Date.now() + 5 * SECOND));
    const resend = t.request('POST', `/blockchain-events/callbacks/${cb.id}/resend`, { key: c.key });
    await sleep(200);
    commit();
    await deletion;
    const res = await resend;
    expect(res.status, res.text).toBe(404);
    expect(await storedStatus(c, s, cb.id)).toBe('delivered');
    await moveClockTo(clock.ms + HOUR);
    expect(r.received).toHaveLength(1);
  });
});

describe('test callback', () => {
  it('sends a body of the event type, marked as a test inside the signature, with x-callback-test: true, and reports the answer', async () => {
    const secret = 'tëst';
    const r = await receiver(status(200));
    const c = await customer();
    const s = await subscribe(c, `${r.url}/test`, { secret });
    const res = await t.request('POST', `/blockchain-events/subscriptions/${s.referenceId}/test-callback`, { key: c.key });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.item).toMatchObject({ delivered: true, httpStatus: 200, errorClass: null });
    expect(r.received).toHaveLength(1);
    const got = r.received[0] as ReceivedRequest;
    expect(got.headers['x-callback-test']).toBe('true');
    expect(got.path).toBe('/test');
    expectSignedBy(got, secret);
    const body = JSON.parse(got.rawBody.toString('utf8'));
    expect(body).toEqual({
      apiVersion: API_VERSION,
      referenceId: s.referenceId,
      idempotencyKey: res.body.data.item.idempotencyKey,
      data: {
        product: 'BLOCKCHAIN_EVENTS',
        event: 'TRANSACTION_MINED',
        isTest: true,
        item: {
          blockchain: 'ethereum',
          network: 'goerli',
          transactionId: ZERO_EVM_HASH,
          minedInBlock: { height: expect.any(Number), hash: ZERO_EVM_HASH, timestamp: expect.any(Number) },
        },
      },
    });
    // Recognisable in the signed body, and as long as a real key (64 characters).
    expect(body.idempotencyKey).toMatch(/^test-[0-9a-f]{59}$/);
  });

  it('address tokens: an item with the subscribed address and a token', async () => {
    const r = await receiver(status(200));
    const c = await customer();
    const s = await subscribe(c, `${r.url}/tokens`, { event: 'address-tokens-transactions-confirmed' });
    const res = await t.request('POST', `/blockchain-events/subscriptions/${s.referenceId}/test-callback`, { key: c.key });
    expect(res.status, res.text).toBe(200);
    const body = JSON.parse((r.received[0] as ReceivedRequest).rawBody.toString('utf8'));
    expect(body.data.event).toBe('ADDRESS_TOKENS_TRANSACTION_CONFIRMED');
    expect(body.data.isTest).toBe(true);
    expect(body.data.item).toEqual({
      blockchain: 'ethereum',
      network: 'goerli',
      address: SAMPLE.evmAddress,
      minedInBlock: { height: expect.any(Number), hash: ZERO_EVM_HASH, timestamp: expect.any(Number) },
      transactionId: ZERO_EVM_HASH,
      tokenType: 'ERC-20',
      token: { name: expect.any(String), symbol: expect.any(String), decimals: expect.any(String), amount: '0', contractAddress: expect.any(String) },
      direction: expect.stringMatching(/^(incoming|outgoing)$/),
      safety: { verdict: 'ok', flags: [] },
    });
  });

  it('internal transactions: a zero amount in the chain unit, zero parent transaction id', async () => {
    const r = await receiver(status(200));
    const c = await customer();
    const s = await subscribe(c, `${r.url}/internal`, { event: 'internal-transactions-for-specific-amount' });
    const res = await t.request('POST', `/blockchain-events/subscriptions/${s.referenceId}/test-callback`, { key: c.key });
    expect(res.status, res.text).toBe(200);
    const body = JSON.parse((r.received[0] as ReceivedRequest).rawBody.toString('utf8'));
    expect(body.data).toMatchObject({ product: 'BLOCKCHAIN_EVENTS', event: 'CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER', isTest: true });
    expect(body.data.item).toEqual({
      blockchain: 'ethereum',
      network: 'goerli',
      address: expect.stringMatching(/^0x[0-9a-f]{40}$/),
      minedInBlock: { height: expect.any(Number), hash: ZERO_EVM_HASH, timestamp: expect.any(Number) },
      parentTransactionId: ZERO_EVM_HASH,
      operationId: expect.stringMatching(/^call_[0-9_]+$/),
      amount: '0',
      unit: 'ETH',
      safety: { verdict: 'ok', flags: [] },
    });
  });

  it('a receiver answering 500: delivered false, httpStatus 500', async () => {
    const r = await receiver(status(500));
    const c = await customer();
    const s = await subscribe(c, `${r.url}/test-fails`);
    const res = await t.request('POST', `/blockchain-events/subscriptions/${s.referenceId}/test-callback`, { key: c.key });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.item).toMatchObject({ delivered: false, httpStatus: 500, errorClass: 'bad_status' });
    expect(r.received).toHaveLength(1);
    expect(r.received[0]?.headers['x-callback-test']).toBe('true');
    // A test callback is not queued: nothing in the log, no retry.
    expect(await callbackLog(c, s)).toEqual([]);
    await moveClockTo(clock.ms + 48 * HOUR);
    expect(r.received).toHaveLength(1);
  });

  it('with no credits left: 402 and nothing is sent', async () => {
    const r = await receiver(status(200));
    const c = await customer(ONE_SUBSCRIPTION);
    const s = await subscribe(c, `${r.url}/test-broke`, { secret: 's' });
    const res = await t.request('POST', `/blockchain-events/subscriptions/${s.referenceId}/test-callback`, { key: c.key });
    expect(res.status, res.text).toBe(402);
    expect(res.body.error.code).toBe('insufficient_credits');
    await sleep(200);
    expect(r.received).toHaveLength(0);
    expect(await creditsOf(c)).toBe(0n);
  });

  it('its timeout covers the wait for a free connection: three at once to a destination that never answers (2 connections) all answer within the timeout', async () => {
    const r = await receiver({ kind: 'timeout' });
    const c = await customer();
    const s = await subscribe(c, `${r.url}/test-hangs`);
    const started = Date.now();
    const answers = await Promise.all(
      Array.from({ length: 3 }, async () => {
        const res = await t.request('POST', `/blockchain-events/subscriptions/${s.referenceId}/test-callback`, { key: c.key });
        return { res, ms: Date.now() - started };
      }),
    );
    for (const { res, ms } of answers) {
      expect(res.status, res.text).toBe(200);
      expect(res.body.data.item).toMatchObject({ delivered: false, httpStatus: null, errorClass: 'timeout' });
      // Before: the third waited for a slot (one timeout), then had a timeout of its own.
      expect(ms).toBeLessThan(1.8 * TIMEOUT_MS);
    }
    // Two reached the receiver at once; the third waited for a connection, which frees only as the first
    // two time out: at the edge of its own deadline, so it may still have been sent then, never earlier.
    const times = r.received.map((x) => x.receivedAt).sort((a, b) => a - b);
    expect(times.length).toBeGreaterThanOrEqual(2);
    expect(times.length).toBeLessThanOrEqual(3);
    if (times.length === 3) expect((times[2] as number) - (times[0] as number)).toBeGreaterThanOrEqual(TIMEOUT_MS - 100);
  });

  it('costs its price when it reports an answer, and nothing when it is refused before sending', async () => {
    const r = await receiver(status(500));
    const c = await customer();
    const s = await subscribe(c, `${r.url}/test-priced`);
    const before = (await creditsOf(c)) as bigint;
    const res = await t.request('POST', `/blockchain-events/subscriptions/${s.referenceId}/test-callback`, { key: c.key });
    expect(res.status, res.text).toBe(200);
    expect(res.headers.get('x-credits-consumed')).toBe(String(t.config.costs.getSubscription));
    expect(await creditsOf(c)).toBe(before - BigInt(t.config.costs.getSubscription));

    const other = await customer();
    const foreign = await t.request('POST', `/blockchain-events/subscriptions/${s.referenceId}/test-callback`, { key: other.key });
    expect(foreign.status, foreign.text).toBe(404);
    expect(r.received).toHaveLength(1);
  });
});

it('per-destination fairness: a destination that times out does not hold up another', async () => {
  const slow = await receiver({ kind: 'timeout' });
  const fast = await receiver(status(200));
  const c = await customer();
  const slowSub = await subscribe(c, `${slow.url}/slow`);
  const fastSub = await subscribe(c, `${fast.url}/fast`);
  for (let i = 0; i < 6; i++) await enqueue(c, slowSub, { i });
  await slow.waitFor(1);
  const started = Date.now();
  for (let i = 0; i < 3; i++) await enqueue(c, fastSub, { i });
  await fast.waitFor(3);
  // All three arrived without waiting for the slow destination's hanging requests, which never take
  // more than their two slots (perDestinationConcurrency 2): the third came only once one had timed out.
  expect(Date.now() - started).toBeLessThan(2 * TIMEOUT_MS);
  const firstSlow = slow.received[0]?.receivedAt as number;
  expect(slow.received.filter((x) => x.receivedAt < firstSlow + TIMEOUT_MS - 100).length).toBeLessThanOrEqual(2);

  // Once its first requests time out, the slow destination is parked (see the next test): what was
  // already claimed for it is still sent, two at a time; the rest waits for its probe, unattempted.
  await sleep(2 * TIMEOUT_MS + 500);
  await worker().settled();
  expect(new Set((await callbackLog(c, fastSub)).map((e) => e.status))).toEqual(new Set(['delivered']));
  const slowLog = await callbackLog(c, slowSub);
  const attempts = slowLog.flatMap((e) => e.attempts.map((a) => a.error?.class));
  expect(attempts.length).toBe(slow.received.length);
  expect(new Set(attempts)).toEqual(new Set(['timeout']));
  expect(slowLog.every((e) => e.status === 'pending')).toBe(true);
  const [parked] = await t.app.database.db.query<{ n: number }>('test:parked', 'SELECT count(*)::int AS n FROM destination_parking WHERE destination = $1', [
    destinationOf(slowSub.callbackUrl),
  ]);
  expect(parked?.n).toBe(1);
});

it('an unreachable destination is parked: its other callbacks wait for the probe (across a restart), none early, then all go at once', async () => {
  const r = await receiver({ kind: 'reset' });
  const c = await customer();
  const s = await subscribe(c, `${r.url}/parked`);
  const db = () => t.app.database.db;
  const parking = async () =>
    (
      await db().query<{ parked_until: Date; probe_callback_id: string; failures: number }>(
        'test:parking',
        'SELECT parked_until, probe_callback_id, failures FROM destination_parking WHERE destination = $1',
        [destinationOf(s.callbackUrl)],
      )
    )[0];

  // Three callbacks find the destination unreachable (connections reset): it is parked until the next retry of the
  // one that found it so last, its probe.
  const initial = [await enqueue(c, s, { n: 0 }), await enqueue(c, s, { n: 1 }), await enqueue(c, s, { n: 2 })];
  await arrived(r, 3);
  // The third attempt reached the receiver; its outcome is recorded a moment later (in the worker's next batch).
  const parked = await until('the destination parked', async () => {
    const row = await parking();
    return row !== undefined && row.failures >= PARK_AFTER_FAILURES ? row : undefined;
  });
  expect(parked.failures).toBeGreaterThanOrEqual(PARK_AFTER_FAILURES);
  const first = initial.find((q) => q.id === parked?.probe_callback_id) as Queued;
  expect(first).toBeDefined();
  // Parked until the probe's own next retry (the log gives it in whole seconds).
  const firstRetry = parked?.parked_until.getTime() as number;
  expect(Math.floor(firstRetry / SECOND)).toBe((await entryOf(c, s, first.id)).nextAttemptTimestamp);

  // Callbacks due meanwhile are not sent, before or after a restart of the service, and every callback
  // of the destination but the probe keeps its schedule across the restart: its state, its next attempt
  // time (a retry's or the due time of one never tried) and its attempts, neither pushed back nor lost.
  const waiting = [await enqueue(c, s, { n: 1 }), await enqueue(c, s, { n: 2 })];
  await moveClockTo(clock.ms + 5 * SECOND);
  expect(r.received).toHaveLength(3);
  const others = [...initial.filter((q) => q !== first), ...waiting];
  const schedule = async () =>
    Promise.all(
      others.map(async (q) => {
        const e = await entryOf(c, s, q.id);
        return { status: e.status, nextAttemptTimestamp: e.nextAttemptTimestamp, attempts: e.attempts.length };
      }),
    );
  const scheduleBefore = await schedule();
  expect(scheduleBefore.map((x) => x.attempts)).toEqual([1, 1, 0, 0]);
  for (const x of scheduleBefore) expect(x.nextAttemptTimestamp).not.toBeNull();
  await t.restart();
  await moveClockTo(firstRetry - SECOND);
  expect(r.received).toHaveLength(3);
  expect(await schedule()).toEqual(scheduleBefore);
  for (const w of waiting) expect((await entryOf(c, s, w.id)).attempts).toHaveLength(0);

  // At the probe's retry time, the probe alone is sent; still unreachable: parked again, until its next retry.
  await moveClockTo(firstRetry);
  await arrived(r, 4);
  await moveClockTo(clock.ms + 5 * SECOND);
  expect(r.received).toHaveLength(4);
  const keyOf = (x: ReceivedRequest | undefined) => JSON.parse(x?.rawBody.toString('utf8') ?? '{}').idempotencyKey;
  expect(keyOf(r.received[3])).toBe(first.key);
  const again = await parking();
  expect(again).toMatchObject({ probe_callback_id: first.id, failures: (parked?.failures as number) + 1 });
  const secondRetry = again?.parked_until.getTime() as number;
  expect(Math.floor(secondRetry / SECOND)).toBe((await entryOf(c, s, first.id)).nextAttemptTimestamp);

  // The receiver is back: the probe is delivered at its time and every due callback follows at once.
  r.setDefault(status(200));
  await moveClockTo(secondRetry);
  await arrived(r, 9);
  expect(await parking()).toBeUndefined();
  for (const q of [...initial, ...waiting]) expect((await entryOf(c, s, q.id)).status).toBe('delivered');
  for (const w of waiting) expect((await entryOf(c, s, w.id)).attempts).toHaveLength(1);
  for (const q of initial.filter((q) => q !== first)) expect((await entryOf(c, s, q.id)).attempts).toHaveLength(2);
  expect(keyOf(r.received[4])).toBe(first.key);
  expect(new Set(r.received.slice(5).map(keyOf))).toEqual(new Set([...initial.filter((q) => q !== first), ...waiting].map((q) => q.key)));
});

it("a test callback that gets an answer from a parked destination lets it go: its due callbacks go at once, not at the probe's retry", async () => {
  const r = await receiver({ kind: 'reset' });
  const c = await customer();
  const s = await subscribe(c, `${r.url}/released`);
  const parkedRows = async () =>
    (
      await t.app.database.db.query<{ n: number }>('test:parked-rows', 'SELECT count(*)::int AS n FROM destination_parking WHERE destination = $1', [
        destinationOf(s.callbackUrl),
      ])
    )[0]?.n;
  for (let n = 0; n < PARK_AFTER_FAILURES; n++) await enqueue(c, s, { n });
  await arrived(r, PARK_AFTER_FAILURES);
  expect(await parkedRows()).toBe(1);
  const waiting = [await enqueue(c, s, { n: 10 }), await enqueue(c, s, { n: 11 })];
  await moveClockTo(clock.ms + 5 * SECOND);
  expect(r.received).toHaveLength(PARK_AFTER_FAILURES);

  // The receiver is back and the customer checks it with a test callback: the clock stays where it is,
  // far from the probe's retry, and the waiting callbacks are sent at once.
  r.setDefault(status(200));
  const res = await t.request('POST', `/blockchain-events/subscriptions/${s.referenceId}/test-callback`, { key: c.key });
  expect(res.body.data.item).toMatchObject({ delivered: true, httpStatus: 200 });
  await arrived(r, PARK_AFTER_FAILURES + 1 + waiting.length);
  expect(await parkedRows()).toBe(0);
  for (const w of waiting) expect((await entryOf(c, s, w.id)).status).toBe('delivered');
});

describe("an inactive subscription's callbacks are held out of the claim's index (docs/concepts/delivery.md)", () => {
  const BACKLOG = 1000;

  /** Queues `count` callbacks of `s` in one transaction, all due at `due`. */
  async function enqueueMany(c: TestCustomer, s: Sub, count: number, due: Date): Promise<Queued[]> {
    const queued = Array.from({ length: count }, (_, n) => {
      const key = randomBytes(16).toString('hex');
      return { id: randomUUID(), key, body: callbackBody({ id: s.referenceId, eventType: s.eventType, apiVersion: API_VERSION }, key, { n }) };
    });
    await t.app.database.db.transaction('test:enqueue-many', (tx) =>
      enqueueCallbacks(
        tx,
        queued.map((q) => ({
          id: q.id,
          customerId: c.id,
          subscriptionId: s.referenceId,
          eventType: s.eventType,
          idempotencyKey: q.key,
          body: q.body,
          callbackUrl: s.callbackUrl,
        })),
        due,
      ),
    );
    return queued;
  }

  interface PlanNode {
    'Relation Name'?: string;
    'Actual Rows'?: number;
    'Actual Loops'?: number;
    'Rows Removed by Filter'?: number;
    Plans?: PlanNode[];
  }
  /** Rows of the outbox a plan read: returned by its scans of callbacks, or read and filtered out (EXPLAIN gives both per loop). */
  function callbackRowsRead(node: PlanNode): number {
    const own = node['Relation Name'] === 'callbacks' ? ((node['Actual Rows'] ?? 0) + (node['Rows Removed by Filter'] ?? 0)) * (node['Actual Loops'] ?? 1) : 0;
    return own + (node.Plans ?? []).reduce((sum, child) => sum + callbackRowsRead(child), 0);
  }

  /**
   * The worker's claim, run under EXPLAIN ANALYZE in a transaction rolled back, after queueing one callback of
   * `healthy` due now in it (invisible to the running worker): how many outbox rows it read.
   */
  async function rowsOneClaimReads(c: TestCustomer, healthy: Sub): Promise<number> {
    const rollback = new Error('rollback');
    let read: number | undefined;
    await t.app.database.db
      .transaction('test:explain-claim', async (tx) => {
        const key = randomBytes(16).toString('hex');
        const body = callbackBody({ id: healthy.referenceId, eventType: healthy.eventType, apiVersion: API_VERSION }, key, { healthy: true });
        const callback = { customerId: c.id, subscriptionId: healthy.referenceId, eventType: healthy.eventType, idempotencyKey: key, body };
        await enqueueCallbacks(tx, [{ id: randomUUID(), ...callback, callbackUrl: healthy.callbackUrl }], clock.now());
        const explaining: Queryable = {
          async query(label, sql, params) {
            const [row] = await tx.query<{ 'QUERY PLAN': { Plan: PlanNode }[] }>(`${label}:explain`, `EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, params);
            const plan = row?.['QUERY PLAN'][0]?.Plan;
            if (plan) read = callbackRowsRead(plan);
            return [];
          },
        };
        await claimDueCallbacks(explaining, { now: clock.now(), limit: 100, leaseMs: 60_000, skipDestinations: [], minShare: 2 });
        throw rollback;
      })
      .catch((error) => {
        if (error !== rollback) throw error;
      });
    if (read === undefined) throw new Error('the claim was not explained');
    return read;
  }

  const dormantCount = async (s: Sub) =>
    (
      await t.app.database.db.query<{ n: number }>(
        'test:dormant',
        "SELECT count(*)::int AS n FROM callbacks WHERE subscription_id = $1 AND status = 'pending' AND dormant",
        [s.referenceId],
      )
    )[0]?.n;

  const keyOf = (x: ReceivedRequest) => JSON.parse(x.rawBody.toString('utf8')).idempotencyKey as string;

  it('a paused subscription with a due backlog costs a claim nothing; across a restart nothing is lost or sent; resumed, each is sent once', async () => {
    const r = await receiver(status(200));
    const c = await customer();
    const paused = await subscribe(c, `${r.url}/paused`);
    const healthy = await subscribe(c, `${r.url}/healthy`);
    // Queued due in an hour (not claimed yet), then paused: the hour passes and the backlog is due.
    const backlog = await enqueueMany(c, paused, BACKLOG, new Date(clock.ms + HOUR));
    const res = await t.request('POST', `/blockchain-events/subscriptions/${paused.referenceId}/pause`, { key: c.key });
    expect(res.status, res.text).toBe(200);
    expect(await dormantCount(paused)).toBe(BACKLOG);
    await moveClockTo(clock.ms + HOUR + SECOND);
    expect(r.received).toHaveLength(0);

    // A claim that serves a healthy subscription of the same destination reads a handful of rows, not the
    // backlog (the walk before migration 084 read all of it, each filtered out).
    const read = await rowsOneClaimReads(c, healthy);
    expect(read).toBeLessThan(50);
    // The healthy subscription is delivered as usual beside it.
    await enqueue(c, healthy, { healthy: 1 });
    await arrived(r, 1);
    expect(r.received.map(keyOf)).not.toContain(backlog[0]?.key);

    // Across a restart: nothing sent, every callback of the backlog pending with its due time and no attempt.
    const state = async () =>
      (
        await t.app.database.db.query<{ n: number; attempts: number; due: Date; last_due: Date }>(
          'test:backlog-state',
          "SELECT count(*)::int AS n, sum(attempts)::int AS attempts, min(next_attempt_at) AS due, max(next_attempt_at) AS last_due FROM callbacks WHERE subscription_id = $1 AND status = 'pending'",
          [paused.referenceId],
        )
      )[0];
    const before = await state();
    expect(before).toMatchObject({ n: BACKLOG, attempts: 0 });
    await t.restart();
    await moveClockTo(clock.ms + 10 * SECOND);
    expect(r.received).toHaveLength(1);
    expect(await state()).toEqual(before);

    // Resumed: each callback of the backlog is sent exactly once.
    const activated = await t.request('POST', `/blockchain-events/subscriptions/${paused.referenceId}/activate`, { key: c.key });
    expect(activated.status, activated.text).toBe(201);
    await r.waitFor(1 + BACKLOG, 60_000);
    await worker().settled();
    await moveClockTo(clock.ms + 10 * SECOND);
    expect(r.received).toHaveLength(1 + BACKLOG);
    expect(new Set(r.received.slice(1).map(keyOf))).toEqual(new Set(backlog.map((q) => q.key)));
    const [delivered] = await t.app.database.db.query<{ n: number; attempts: number }>(
      'test:backlog-delivered',
      "SELECT count(*) FILTER (WHERE status = 'delivered')::int AS n, sum(attempts)::int AS attempts FROM callbacks WHERE subscription_id = $1",
      [paused.referenceId],
    );
    expect(delivered).toEqual({ n: BACKLOG, attempts: BACKLOG });
  });

  it('callbacks that reach a claim after the subscription went inactive are held out by that claim, unsent, and go once it is active again', async () => {
    const r = await receiver(status(200));
    const c = await customer();
    const s = await subscribe(c, `${r.url}/late`);
    const res = await t.request('POST', `/blockchain-events/subscriptions/${s.referenceId}/pause`, { key: c.key });
    expect(res.status, res.text).toBe(200);
    // Queued for the inactive subscription (as a producer that read it active a moment before would): due now.
    const late = await enqueueMany(c, s, 40, clock.now());
    worker().wake();
    await until('the claims held them out', async () => ((await dormantCount(s)) === late.length ? true : undefined));
    await moveClockTo(clock.ms + 5 * SECOND);
    expect(r.received).toHaveLength(0);

    const activated = await t.request('POST', `/blockchain-events/subscriptions/${s.referenceId}/activate`, { key: c.key });
    expect(activated.status, activated.text).toBe(201);
    await arrived(r, late.length);
    expect(new Set(r.received.map(keyOf))).toEqual(new Set(late.map((q) => q.key)));
    expect(await dormantCount(s)).toBe(0);
  });
});
