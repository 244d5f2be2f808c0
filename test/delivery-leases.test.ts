/**
 * The destination leases of the delivery claims (migration 094, docs/concepts/delivery.md "A claim leases
 * the destination") where two statements or two claims meet. Real PostgreSQL, real HTTPS receivers:
 * - a worker's claim and its heartbeat lock the same lease rows, in the same order: never a deadlock;
 * - the probe of a parked destination still on its way when the claim's hold of the parking ends (a lease
 *   shorter than the receiver's timeout, or an outcome not recorded yet): no second probe is sent meanwhile;
 * - a receiver's answer with a NUL byte (PostgreSQL text holds none) is recorded: otherwise the worker's
 *   recording retried that batch for ever, recorded nothing more, and its list of callbacks on their way
 *   (left out of its claims, kept until recorded) grew with every callback it sent.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createSender } from '../src/app.ts';
import { loadConfig } from '../src/config/config.ts';
import { type DeliveryWorker, startDeliveryWorker } from '../src/delivery/worker.ts';
import { claimDue, destinationOf, enqueueCallbacks, PARK_AFTER_FAILURES, renewLeases } from '../src/store/callbacks.ts';
import { insertUnlessTwin } from '../src/store/subscriptions.ts';
import { startTestApp, type TestApp, type TestCustomer } from './harness.ts';
import { type Receiver, startReceiver } from './support/receiver.ts';
import { ethereumSubscription } from './support/subscription-rows.ts';
import { createTestCa, writeCaFile } from './support/tls.ts';
import { until } from './support/wait.ts';

let t: TestApp;
let receiver: Receiver;
/** The NUL test's own: the probe test leaves its destination parked. */
let other: Receiver;
const workers: DeliveryWorker[] = [];

beforeAll(async () => {
  const ca = await createTestCa();
  t = await startTestApp({
    // No worker of the app's own: the tests' claims and workers are the only ones.
    roles: ['api'],
    delivery: {
      ...loadConfig({}, {}).delivery,
      allowNetworks: ['127.0.0.1/32', '::1/128'],
      caFile: writeCaFile(ca.caPem),
      timeoutMs: 4_000,
      pollIntervalMs: 100,
    },
  });
  receiver = await startReceiver({ ca });
  other = await startReceiver({ ca });
}, 60_000);
afterAll(async () => {
  for (const w of workers) await w.stop();
  await receiver?.close();
  await other?.close();
  await t?.close();
});

async function subscriptionTo(c: TestCustomer, callbackUrl: string, callbackHost: string): Promise<string> {
  const target = `0x${randomBytes(32).toString('hex')}`;
  const row = ethereumSubscription({ eventType: 'TRANSACTION_MINED', transactionId: target, target, callbackUrl, callbackHost });
  const inserted = await insertUnlessTwin(t.app.database.db, c.id, row);
  if (!inserted) throw new Error('subscription not inserted');
  return inserted.id;
}

const newCallback = (c: TestCustomer, subscriptionId: string, callbackUrl: string) => ({
  id: randomUUID(),
  customerId: c.id,
  subscriptionId,
  eventType: 'TRANSACTION_MINED' as const,
  idempotencyKey: randomBytes(16).toString('hex'),
  body: '{}',
  callbackUrl,
});

it('a claim and the heartbeat of the same worker lock its leases in one order: no deadlock', async () => {
  const db = t.app.database.db;
  const c = await t.customer();
  // Many destinations, each with callbacks the claims take again and again (nothing is sent: the claims are the test's).
  const urls = Array.from({ length: 300 }, (_, i) => `https://d${i}.leases.test/x`);
  const sub = await subscriptionTo(c, urls[0] as string, 'd0.leases.test');
  await db.transaction('test:enqueue', (tx) =>
    enqueueCallbacks(
      tx,
      urls.flatMap((url) => [newCallback(c, sub, url), newCallback(c, sub, url)]),
      new Date(Date.now() - 60_000),
    ),
  );
  const holder = randomUUID();
  const destinations = urls.map(destinationOf);
  const errors: unknown[] = [];
  let claiming = true;
  // The heartbeat renewing every lease of the worker while its claims take the same leases again.
  const renewing = (async () => {
    while (claiming) await renewLeases(db, holder, destinations, new Date(), 15_000, false).catch((error) => errors.push(error));
  })();
  for (let i = 0; i < 15; i++) {
    const claim = await claimDue(db, { now: new Date(), limit: 1_000, leaseMs: 15_000, skipDestinations: [], holder }).catch((error) => {
      errors.push(error);
      return undefined;
    });
    if (claim) expect(new Set(claim.callbacks.map((x) => x.destination)).size).toBe(urls.length);
  }
  claiming = false;
  await renewing;
  expect(errors.map(String)).toEqual([]);
  // Out of the next tests' way.
  await db.query('test:away', `UPDATE callbacks SET status = 'cancelled' WHERE subscription_id = $1`, [sub]);
}, 120_000);

it('the probe of a parked destination, still on its way when the hold of the parking ends: no second probe meanwhile', async () => {
  const db = t.app.database.db;
  const c = await t.customer({ domains: ['localhost'] });
  receiver.byPath('/parked', { kind: 'timeout' });
  const url = `${receiver.url}/parked`;
  const destination = destinationOf(url);
  const sub = await subscriptionTo(c, url, 'localhost');
  // The callback that parked the destination (its probe), and two more due behind it.
  const [probe, ...others] = [newCallback(c, sub, url), newCallback(c, sub, url), newCallback(c, sub, url)];
  await db.transaction('test:enqueue', async (tx) => {
    await enqueueCallbacks(tx, [probe as ReturnType<typeof newCallback>], new Date(Date.now() - 120_000));
    await enqueueCallbacks(tx, others, new Date(Date.now() - 60_000));
  });
  await db.query(
    'test:park',
    `INSERT INTO destination_parking (destination, parked_until, probe_callback_id, parked_at, failures, last_error)
     VALUES ($1, now() - interval '1 second', $2, now() - interval '1 minute', $3, 'timeout')`,
    [destination, probe?.id, PARK_AFTER_FAILURES],
  );
  // A lease of 1 s, the receiver's timeout 4 s: the claim holds the parking for 1 s, the probe hangs for 4.
  const config = { ...t.config, delivery: { ...t.config.delivery, leaseSeconds: 1 } };
  const before = receiver.received.length;
  const worker = startDeliveryWorker({ db, sender: createSender(config), config, logger: pino({ level: 'silent' }) });
  workers.push(worker);
  await receiver.waitFor(before + 1);
  // Claims every 100 ms (the poll) for 2.5 s past the hold: the probe is still on its way.
  await new Promise((resolve) => setTimeout(resolve, 2_500));
  const sent = receiver.received.slice(before);
  expect(sent.map((r) => r.headers['x-callback-sequence'])).toEqual([sent[0]?.headers['x-callback-sequence']]);
  await worker.settled();
  const [parking] = await db.query<{ probe_callback_id: string }>('test:parking', 'SELECT probe_callback_id FROM destination_parking WHERE destination = $1', [
    destination,
  ]);
  expect(parking?.probe_callback_id).toBe(probe?.id);
  await worker.stop();
  workers.splice(workers.indexOf(worker), 1);
}, 60_000);

it('an answer with a NUL byte is recorded (the NUL replaced), and so is every outcome after it', async () => {
  const db = t.app.database.db;
  const c = await t.customer({ domains: ['localhost'] });
  other.byPath('/nul', { kind: 'status', status: 200, body: 'ok\u0000binary' });
  const nulUrl = `${other.url}/nul`;
  const okUrl = `${other.url}/fine`;
  const nulSub = await subscriptionTo(c, nulUrl, 'localhost');
  const okSub = await subscriptionTo(c, okUrl, 'localhost');
  const worker = startDeliveryWorker({ db, sender: createSender(t.config), config: t.config, logger: pino({ level: 'silent' }) });
  workers.push(worker);
  const first = newCallback(c, nulSub, nulUrl);
  await db.transaction('test:enqueue', (tx) => enqueueCallbacks(tx, [first]));
  const statusOf = async (id: string) => (await db.query<{ status: string }>('test:status', 'SELECT status FROM callbacks WHERE id = $1', [id]))[0]?.status;
  await until('the answer with a NUL recorded', async () => (await statusOf(first.id)) === 'delivered', 20_000);
  const [attempt] = await db.query<{ response_body: string }>('test:attempt', 'SELECT response_body FROM callback_attempts WHERE callback_id = $1', [first.id]);
  expect(attempt?.response_body).toBe('ok\ufffdbinary');
  // The recording goes on: a later callback's outcome is recorded too.
  const second = newCallback(c, okSub, okUrl);
  await db.transaction('test:enqueue', (tx) => enqueueCallbacks(tx, [second]));
  await until('the next outcome recorded', async () => (await statusOf(second.id)) === 'delivered', 20_000);
}, 60_000);

it("a claim's transaction commits without waiting for the WAL flush, and only the claim's", async () => {
  const db = t.app.database.db;
  const c = await t.customer();
  const url = 'https://commit.leases.test/x';
  const sub = await subscriptionTo(c, url, 'commit.leases.test');
  await db.transaction('test:enqueue', (tx) => enqueueCallbacks(tx, [newCallback(c, sub, url)], new Date(Date.now() - 60_000)));
  // In a transaction of the test's own, so that the setting can be read after the claim, before the commit.
  const mode = await db.transaction('test:claim', async (tx) => {
    const claim = await claimDue(tx, { now: new Date(), limit: 10, leaseMs: 15_000, skipDestinations: [], holder: randomUUID() });
    expect(claim.callbacks.map((x) => x.callbackUrl)).toEqual([url]);
    return (await tx.query<{ synchronous_commit: string }>('test:show', 'SHOW synchronous_commit'))[0]?.synchronous_commit;
  });
  expect(mode).toBe('off');
  // The setting was the claim's transaction's alone.
  expect((await db.query<{ synchronous_commit: string }>('test:show', 'SHOW synchronous_commit'))[0]?.synchronous_commit).toBe('on');
  await db.query('test:away', `UPDATE callbacks SET status = 'cancelled' WHERE subscription_id = $1`, [sub]);
});
