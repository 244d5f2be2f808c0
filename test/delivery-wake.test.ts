/**
 * A wake-up (the NOTIFY of new callbacks) with a destination at its concurrency cap and a backlog of due
 * callbacks behind it: the claim goes destination by destination (docs/concepts/delivery.md), so it finds
 * the new callback at once and reads none of the backlog (counted by PostgreSQL's own statistics of the
 * claim's transaction). And the heartbeat of the destination leases: renewed while a callback is on its way,
 * lapsed when none is. Real PostgreSQL, real HTTPS receivers.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createSender } from '../src/app.ts';
import { loadConfig } from '../src/config/config.ts';
import { type DeliveryWorker, startDeliveryWorker } from '../src/delivery/worker.ts';
import { claimDueCallbacks, destinationOf, enqueueCallbacks } from '../src/store/callbacks.ts';
import { insertUnlessTwin } from '../src/store/subscriptions.ts';
import { startTestApp, type TestApp, type TestCustomer } from './harness.ts';
import { type Receiver, startReceiver } from './support/receiver.ts';
import { ethereumSubscription } from './support/subscription-rows.ts';
import { createTestCa, writeCaFile } from './support/tls.ts';

let t: TestApp;
let worker: DeliveryWorker | undefined;
const receivers: Receiver[] = [];

beforeAll(async () => {
  const ca = await createTestCa();
  t = await startTestApp({
    // No worker of the app's own: the test's worker is the only one claiming.
    roles: ['api'],
    delivery: {
      ...loadConfig({}, {}).delivery,
      allowNetworks: ['127.0.0.1/32', '::1/128'],
      caFile: writeCaFile(ca.caPem),
      timeoutMs: 4_000,
      // No poll during the test: only the wake-up may start a claim after the backlog is proven.
      pollIntervalMs: 60_000,
      perDestinationConcurrency: 1,
      // Two per claim: the backlog stays in the database, behind the saturated destination.
      batchSize: 2,
    },
  });
  for (let i = 0; i < 2; i++) receivers.push(await startReceiver({ ca }));
});
afterAll(async () => {
  await worker?.stop();
  for (const r of receivers) await r.close();
  await t?.close();
});

async function subscriptionTo(c: TestCustomer, callbackUrl: string): Promise<string> {
  const target = `0x${randomBytes(32).toString('hex')}`;
  const row = ethereumSubscription({ eventType: 'TRANSACTION_MINED', transactionId: target, target, callbackUrl, callbackHost: 'localhost' });
  const inserted = await insertUnlessTwin(t.app.database.db, c.id, row);
  if (!inserted) throw new Error('subscription not inserted');
  return inserted.id;
}

/** Callbacks waiting behind the saturated destination: a claim that walked them would fetch them all. */
const BACKLOG = 5_000;

async function enqueueMany(c: TestCustomer, subscriptionId: string, callbackUrl: string, due: Date, n: number): Promise<void> {
  const callbacks = Array.from({ length: n }, () => ({
    id: randomUUID(),
    customerId: c.id,
    subscriptionId,
    eventType: 'TRANSACTION_MINED' as const,
    idempotencyKey: randomBytes(16).toString('hex'),
    body: '{}',
    callbackUrl,
  }));
  await t.app.database.db.transaction('test:enqueue-many', (tx) => enqueueCallbacks(tx, callbacks, due));
}

async function enqueue(c: TestCustomer, subscriptionId: string, callbackUrl: string, due: Date): Promise<void> {
  const key = randomBytes(16).toString('hex');
  await t.app.database.db.transaction('test:enqueue', (tx) =>
    enqueueCallbacks(
      tx,
      [{ id: randomUUID(), customerId: c.id, subscriptionId, eventType: 'TRANSACTION_MINED', idempotencyKey: key, body: '{}', callbackUrl }],
      due,
    ),
  );
}

it('a wake-up finds the new callback at once, and the claim reads none of a saturated destination’s backlog', async () => {
  const [slow, fast] = receivers as [Receiver, Receiver];
  slow.setDefault({ kind: 'timeout' });
  const c = await t.customer({ domains: ['localhost'] });
  const slowUrl = `${slow.url}/backlog`;
  const fastUrl = `${fast.url}/new`;
  const slowSub = await subscriptionTo(c, slowUrl);
  const fastSub = await subscriptionTo(c, fastUrl);
  // A backlog due a minute ago: one is sent (the destination's one slot), the others wait for it.
  const minuteAgo = new Date(Date.now() - 60_000);
  await enqueueMany(c, slowSub, slowUrl, minuteAgo, BACKLOG);

  const db = t.app.database.db;
  worker = startDeliveryWorker({ db, sender: createSender(t.config), config: t.config, logger: pino({ level: 'silent' }) });
  await slow.waitFor(1);

  await enqueue(c, fastSub, fastUrl, new Date());
  worker.wake(); // what the NOTIFY of that insert does in the service
  await fast.waitFor(1, 3_000);
  // The backlog still waits for its slot: one sent so far.
  expect(slow.received).toHaveLength(1);

  // What one claim reads, skipping the saturated destination: a probe per destination, not its backlog. The
  // claim is another worker's, so the callback goes to a destination of its own (the worker holds the lease of
  // the fast one: docs/concepts/delivery.md).
  const otherUrl = fastUrl.replace('localhost', '127.0.0.1');
  await enqueue(c, fastSub, otherUrl, new Date());
  const fetched = await db.transaction('test:claim-cost', async (tx) => {
    const claimed = await claimDueCallbacks(tx, { now: new Date(), limit: 2, leaseMs: 1_000, skipDestinations: [destinationOf(slowUrl)] });
    expect(claimed.map((x) => x.destination)).toEqual([destinationOf(otherUrl)]);
    const [row] = await tx.query<{ n: string }>(
      'test:claim-fetched',
      "SELECT coalesce(sum(idx_tup_fetch), 0) AS n FROM pg_stat_xact_user_tables WHERE relname = 'callbacks'",
    );
    return Number(row?.n);
  });
  expect(fetched).toBeLessThan(50);
});

it('the heartbeat: a destination stays leased to its worker while a callback is on its way, however long it takes; idle, its lease lapses; ended leases are pruned', async () => {
  await worker?.stop(); // the first test's worker: this one has a short lease
  worker = undefined;
  // The first test's backlog, out of the way (a day ahead): this worker is to have one callback on its way.
  await t.app.database.db.query('test:backlog-away', `UPDATE callbacks SET next_attempt_at = now() + interval '1 day' WHERE status = 'pending'`);
  const fast = receivers[1] as Receiver;
  fast.byPath('/hang', { kind: 'timeout' });
  const c = await t.customer({ domains: ['localhost'] });
  const hangUrl = `${fast.url}/hang`;
  const destination = destinationOf(hangUrl);
  const sub = await subscriptionTo(c, hangUrl);
  const db = t.app.database.db;
  // A lease that ended two hours ago: the first beat prunes it.
  await db.query(
    'test:old-lease',
    `INSERT INTO destination_leases (destination, holder, leased_until) VALUES ('https://gone.test:443', $1, now() - interval '2 hours')`,
    [randomUUID()],
  );
  const config = { ...t.config, delivery: { ...t.config.delivery, leaseSeconds: 1 } };
  const before = fast.received.length;
  await enqueue(c, sub, hangUrl, new Date());
  worker = startDeliveryWorker({ db, sender: createSender(config), config, logger: pino({ level: 'silent' }) });
  worker.wake();
  await fast.waitFor(before + 1);
  const claimedAt = Date.now();

  // Another worker's claims, past the 1 s lease, while the request hangs (timeoutMs 4 s): the destination is
  // still leased (the heartbeat renewed it), so they take nothing of it, the callback on its way included.
  const otherHolder = randomUUID();
  const othersClaim = () => claimDueCallbacks(db, { now: new Date(), limit: 10, leaseMs: 1_000, skipDestinations: [], holder: otherHolder });
  for (const at of [1_500, 3_000]) {
    await new Promise((resolve) => setTimeout(resolve, claimedAt + at - Date.now()));
    expect((await othersClaim()).filter((x) => x.destination === destination)).toEqual([]);
  }
  const [pruned] = await db.query<{ n: number }>(
    'test:pruned',
    `SELECT count(*)::int AS n FROM destination_leases WHERE destination = 'https://gone.test:443'`,
  );
  expect(pruned?.n).toBe(0);

  // The attempt timed out and its retry is 30 s away: nothing on its way, so the lease is no longer renewed
  // and lapses within leaseSeconds, while the worker lives; another worker's claim then takes a new callback.
  await worker.settled();
  await new Promise((resolve) => setTimeout(resolve, 1_200));
  await enqueue(c, sub, hangUrl, new Date());
  expect((await othersClaim()).filter((x) => x.destination === destination)).toHaveLength(1);
  expect(fast.received.length).toBe(before + 1);
}, 20_000);
