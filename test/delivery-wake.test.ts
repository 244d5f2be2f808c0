/**
 * A wake-up (the NOTIFY of new callbacks) keeps what the worker's claims proved: with a destination at its
 * concurrency cap and a backlog of due callbacks behind it, the claim after the wake-up starts at the due
 * time already proven instead of walking past the whole backlog again (src/delivery/worker.ts wake), and
 * still finds the new callback at once. Real PostgreSQL, real HTTPS receivers; the worker's database is the
 * app's, with each claim's `dueFrom` read on its way through.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createSender } from '../src/app.ts';
import { loadConfig } from '../src/config/config.ts';
import { type DeliveryWorker, startDeliveryWorker } from '../src/delivery/worker.ts';
import { enqueueCallbacks } from '../src/store/callbacks.ts';
import type { Db } from '../src/store/db.ts';
import { insertUnlessTwin } from '../src/store/subscriptions.ts';
import { startTestApp, type TestApp, type TestCustomer } from './harness.ts';
import { type Receiver, startReceiver } from './support/receiver.ts';
import { ethereumSubscription } from './support/subscription-rows.ts';
import { createTestCa, writeCaFile } from './support/tls.ts';

let t: TestApp;
let worker: DeliveryWorker | undefined;
const receivers: Receiver[] = [];
/** Each claim's `dueFrom` parameter ('-infinity' when the claim walks from the oldest due callback). */
const claims: unknown[] = [];

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

it('a wake-up starts the next claim where the claims before it left off, past a saturated destination’s backlog, and finds the new callback', async () => {
  const [slow, fast] = receivers as [Receiver, Receiver];
  slow.setDefault({ kind: 'timeout' });
  const c = await t.customer({ domains: ['localhost'] });
  const slowUrl = `${slow.url}/backlog`;
  const fastUrl = `${fast.url}/new`;
  const slowSub = await subscriptionTo(c, slowUrl);
  const fastSub = await subscriptionTo(c, fastUrl);
  // A backlog due a minute ago: one is sent (the destination's one slot), the others wait for it.
  const minuteAgo = new Date(Date.now() - 60_000);
  for (let i = 0; i < 20; i++) await enqueue(c, slowSub, slowUrl, minuteAgo);

  const db = t.app.database.db;
  const observed: Db = {
    ...db,
    query: (label, sql, params) => {
      if (label === 'callbacks:claim') claims.push(params?.[4]);
      return db.query(label, sql, params);
    },
  };
  worker = startDeliveryWorker({ db: observed, sender: createSender(t.config), config: t.config, logger: pino({ level: 'silent' }) });
  await slow.waitFor(1);
  // The worker has claimed the one it may send, then proven (skipping the saturated destination) that
  // nothing else is due: it sleeps until a wake-up or the poll.
  let before = -1;
  for (const deadline = Date.now() + 5_000; claims.length !== before && Date.now() < deadline; ) {
    before = claims.length;
    await new Promise((r) => setTimeout(r, 300));
  }
  expect(before).toBe(claims.length);
  expect(before).toBeGreaterThanOrEqual(2);

  await enqueue(c, fastSub, fastUrl, new Date());
  worker.wake(); // what the NOTIFY of that insert does in the service
  await fast.waitFor(1, 3_000);
  const after = claims.slice(before);
  expect(after.length).toBeGreaterThanOrEqual(1);
  // Started at a due time (about 5 s before the wake-up, no later than what was proven), not from the oldest due callback.
  const first = after[0];
  expect(first).toBeInstanceOf(Date);
  expect((first as Date).getTime()).toBeGreaterThan(minuteAgo.getTime());
  expect((first as Date).getTime()).toBeLessThanOrEqual(Date.now() - 4_000);
  // The backlog still waits for its slot: one sent so far.
  expect(slow.received).toHaveLength(1);
});
