/**
 * Issue 14 end to end (points 1, 4 and 5): herald following a fake Bitcoin Core 30, delivering to a real
 * HTTPS receiver, with a retry schedule of one retry after 1 s so that "down for a window" takes
 * seconds.
 *
 * - x-callback-sequence: 1, 2, 3, ... per subscription across blocks; every attempt of a callback (retry,
 *   recovery) carries its original number; a test callback carries 0.
 * - Recovery: the receiver is down while blocks are mined, the callbacks fail and the subscription is
 *   deactivated; activate with recoverSince (and, for a callbackUrl, POST /callbacks/recover) queues them
 *   again as one job: every missed callback arrives with its idempotencyKey and body, 5 credits each;
 *   a customer whose credits run out mid-way stops the job as out_of_credits with nothing unpaid queued.
 * - Secret rotation: during the overlap a receiver that knows either secret verifies each callback (both
 *   signatures present); after it, only the new secret's.
 */
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/config.ts';
import { startRecoveryRunner } from '../src/delivery/recovery.ts';
import { enqueueCallbacks } from '../src/store/callbacks.ts';
import { findCustomerByName } from '../src/store/customers.ts';
import { getRecovery, runRecoveryChunk } from '../src/store/recoveries.ts';
import { startTestApp, type TestApp, type TestCustomer } from './harness.ts';
import type { ChainDriver } from './support/chain-driver.ts';
import { startFakeUtxoDriver } from './support/fake-utxo-node.ts';
import { type Callback, followHelpers } from './support/follow-helpers.ts';
import type { ReceivedRequest, Receiver } from './support/receiver.ts';
import { startReceiver } from './support/receiver.ts';
import { createTestCa, writeCaFile } from './support/tls.ts';
import { until } from './support/wait.ts';

const SECRET = 'whsec-recovery-old';
const NEW_SECRET = 'whsec-recovery-new';

let node: ChainDriver;
let receiver: Receiver;
let t: TestApp;
let c: TestCustomer;

beforeAll(async () => {
  const ca = await createTestCa();
  [node, receiver] = await Promise.all([startFakeUtxoDriver('bitcoin'), startReceiver({ ca })]);
  t = await startTestApp({
    chains: [
      {
        blockchain: node.blockchain,
        network: node.network,
        rpcUrl: node.rpcUrl,
        ...node.chainConfig,
        confirmations: 2,
        pollIntervalMs: 50,
        concurrency: 4,
        requestTimeoutMs: 5000,
      },
    ],
    delivery: {
      ...loadConfig({}, {}).delivery,
      allowNetworks: ['127.0.0.1/32', '::1/128'],
      caFile: writeCaFile(ca.caPem),
      pollIntervalMs: 20,
      // Two attempts, 1 s apart, then failed (and the subscriptions of the URL deactivated).
      retryScheduleSeconds: [1],
      retryJitter: 0,
    },
  });
  c = await t.customer({ domains: ['localhost'] });
  await processed(await node.height());
}, 60_000);

afterAll(async () => {
  await t?.close();
  await receiver?.close();
  await node?.close();
});

const { processed, subscribe, callbacksOf } = followHelpers(() => ({ t, customer: c, receiver, blockchain: node.blockchain, network: node.network }), SECRET);

async function mineAndProcess(count = 1): Promise<number> {
  const height = await node.mine(count);
  await processed(height);
  await t.app.worker?.settled();
  return height;
}

const up = (hook: string) => receiver.byPath(`/hooks/${hook}`, { kind: 'status', status: 200 });
const down = (hook: string) => receiver.byPath(`/hooks/${hook}`, { kind: 'status', status: 503 });
const sequenceOf = (r: ReceivedRequest) => Number(r.headers['x-callback-sequence']);
const nowSeconds = () => Math.floor(Date.now() / 1000);

interface LogEntry {
  callbackId: string;
  idempotencyKey: string;
  status: string;
  sequence: number | null;
  attempts: unknown[];
}

async function log(key: string, referenceId: string): Promise<LogEntry[]> {
  const r = await t.request('GET', `/blockchain-events/subscriptions/${referenceId}/callbacks`, { key });
  expect(r.status, r.text).toBe(200);
  return r.body.data.items;
}

/**
 * The outage's end state: the first callback to exhaust its retries deactivated the subscription, so
 * each of its `count` callbacks is failed or waits pending (workers send only for active subscriptions).
 * Waits until the subscription is inactive, no attempt is in flight, and gives the log.
 */
async function afterOutage(key: string, referenceId: string, count: number, options: { ownFailure?: boolean } = {}): Promise<LogEntry[]> {
  // Without ownFailure the deactivation may come from another subscription of the same URL.
  const ownFailure = options.ownFailure ?? true;
  let last: LogEntry[] = [];
  const check = async () => {
    const item = (await t.request('GET', `/blockchain-events/subscriptions/${referenceId}`, { key })).body.data.item;
    last = await log(key, referenceId);
    return (
      !item.isActive && last.length === count && (!ownFailure || last.some((e) => e.status === 'failed')) && last.every((e) => e.attempts.length > 0) && last
    );
  };
  await until('the outage to deactivate the subscription', check, 20_000).catch((error) => {
    throw new Error(`${(error as Error).message}; the log: ${JSON.stringify(last)}`);
  });
  // An attempt claimed before the deactivation may still be recording its outcome.
  await t.app.worker?.settled();
  return (await check()) || last;
}

async function recovery(key: string, id: string) {
  const r = await t.request('GET', `/blockchain-events/recoveries/${id}`, { key });
  expect(r.status, r.text).toBe(200);
  return r.body.data.item;
}

async function creditsOf(customer: TestCustomer): Promise<bigint | undefined> {
  return (await findCustomerByName(t.app.database.db, customer.name))?.credits;
}

/** Every request received for `referenceId`: each idempotencyKey always with the same sequence number. */
function expectStableSequences(received: Callback[]): Map<string, number> {
  const byKey = new Map<string, number>();
  for (const r of received) {
    const seq = sequenceOf(r);
    expect(Number.isSafeInteger(seq) && seq > 0, `x-callback-sequence '${r.headers['x-callback-sequence']}'`).toBe(true);
    const known = byKey.get(r.json.idempotencyKey);
    if (known !== undefined) expect(seq, 'a retry or recovery carries its original number').toBe(known);
    byKey.set(r.json.idempotencyKey, seq);
  }
  return byKey;
}

describe('x-callback-sequence and recovery after a receiver outage', () => {
  it('numbers consecutive across blocks; missed callbacks come back with their keys, bodies and numbers via activate?recoverSince', async () => {
    up('seq');
    const { referenceId } = await subscribe('block-mined', {}, 'seq');
    await mineAndProcess(2);
    await until('two delivered', async () => callbacksOf(referenceId).length === 2);
    expect(callbacksOf(referenceId).map(sequenceOf)).toEqual([1, 2]);

    // The receiver goes down; three blocks are mined; the first callback to fail its retry deactivates
    // the subscription, the others wait pending.
    down('seq');
    const windowStart = nowSeconds();
    await mineAndProcess(3);
    const outage = await afterOutage(c.key, referenceId, 5);
    expect(outage.map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5]);
    const missed = outage.slice(2);
    const failed = missed.filter((e) => e.status === 'failed');
    expect(failed.length + missed.filter((e) => e.status === 'pending').length).toBe(3);
    const item = (await t.request('GET', `/blockchain-events/subscriptions/${referenceId}`, { key: c.key })).body.data.item;
    expect(item.deactivationReasons.map((r: { reason: string }) => r.reason)).toContain('maximum_retry_attempts_reached');
    const receivedBefore = callbacksOf(referenceId).length;

    // Back up: activate with recoverSince = the start of the outage. The pending ones go by themselves,
    // the failed ones through the recovery job.
    up('seq');
    const activated = await t.request('POST', `/blockchain-events/subscriptions/${referenceId}/activate?recoverSince=${windowStart}`, { key: c.key });
    expect(activated.status, activated.text).toBe(201);
    const recoveryId = activated.body.data.recoveryId as string;
    t.app.recoveries?.wake();
    const done = await until('the recovery delivered', async () => {
      const r = await recovery(c.key, recoveryId);
      return r.delivered === failed.length && r;
    });
    const n = failed.length;
    expect(done).toMatchObject({ state: 'done', found: n, queued: n, delivered: n, failed: 0, pending: 0, creditsConsumed: 5 * n, referenceId });
    // Activation 5, then 5 per callback queued (GET recoveries costs 1 per read on top: not counted here).
    expect(activated.headers.get('x-credits-consumed')).toBe('5');
    await until('every missed callback delivered', async () => (await log(c.key, referenceId)).every((e) => e.status === 'delivered'));

    const all = callbacksOf(referenceId);
    const resent = all.slice(receivedBefore);
    expect(resent).toHaveLength(3);
    // Every missed callback arrives once more, with its idempotencyKey and the same bytes.
    expect(new Set(resent.map((r) => r.json.idempotencyKey))).toEqual(new Set(missed.map((e) => e.idempotencyKey)));
    for (const r of resent) {
      const first = all.find((a) => a.json.idempotencyKey === r.json.idempotencyKey) as Callback;
      expect(r.rawBody.equals(first.rawBody)).toBe(true);
    }
    // The sequence tells the true order whatever the arrival order: 1..5 without a gap, each key one number.
    const numbers = expectStableSequences(all);
    expect([...numbers.values()].sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5]);
    const heights = [...numbers.entries()].sort((a, b) => a[1] - b[1]).map(([key]) => all.find((r) => r.json.idempotencyKey === key)?.json.data.item.height);
    expect(heights).toEqual([...heights].sort((a, b) => (a as number) - (b as number)));

    // Live again, and the numbering goes on where it was.
    await mineAndProcess(1);
    const next = await until('the next live callback', async () => callbacksOf(referenceId).length === all.length + 1 && callbacksOf(referenceId));
    expect(sequenceOf(next.at(-1) as Callback)).toBe(6);

    // A test callback is outside the sequence: 0.
    const test = await t.request('POST', `/blockchain-events/subscriptions/${referenceId}/test-callback`, { key: c.key });
    expect(test.status, test.text).toBe(200);
    const testRequest = receiver.received.at(-1) as ReceivedRequest;
    expect(testRequest.headers['x-callback-test']).toBe('true');
    expect(testRequest.headers['x-callback-sequence']).toBe('0');
  }, 60_000);

  it('POST /callbacks/recover queues the failed callbacks of every active subscription with the callbackUrl; a second run finds nothing', async () => {
    up('url');
    const a = await subscribe('block-mined', { allowDuplicates: true }, 'url');
    const b = await subscribe('block-mined', { allowDuplicates: true }, 'url');
    down('url');
    const since = nowSeconds();
    await mineAndProcess(2);
    // Both subscriptions share the URL: the first exhausted callback deactivates both.
    const logs = [await afterOutage(c.key, a.referenceId, 2, { ownFailure: false }), await afterOutage(c.key, b.referenceId, 2, { ownFailure: false })];
    const failedCount = logs.flat().filter((e) => e.status === 'failed').length;
    expect(failedCount).toBeGreaterThan(0);
    const receivedBefore = [a, b].map((s) => callbacksOf(s.referenceId).length);
    up('url');
    for (const s of [a, b]) expect((await t.request('POST', `/blockchain-events/subscriptions/${s.referenceId}/activate`, { key: c.key })).status).toBe(201);
    const callbackUrl = `${receiver.url}/hooks/url`;
    const started = await t.request('POST', '/blockchain-events/callbacks/recover', {
      key: c.key,
      body: { data: { item: { callbackUrl, eventType: 'BLOCK_MINED', since } } },
    });
    expect(started.status, started.text).toBe(202);
    expect(started.body.data.item).toMatchObject({ callbackUrl, eventType: 'BLOCK_MINED', found: failedCount });
    t.app.recoveries?.wake();
    await until('the failed ones delivered', async () => (await recovery(c.key, started.body.data.item.recoveryId)).delivered === failedCount);
    for (const [i, s] of [a, b].entries()) {
      await until('every callback delivered', async () => (await log(c.key, s.referenceId)).every((e) => e.status === 'delivered'));
      const got = callbacksOf(s.referenceId);
      expect(got.slice(receivedBefore[i])).toHaveLength(2);
      expectStableSequences(got);
      expect(new Set(got.map((r) => r.json.idempotencyKey)).size).toBe(2);
    }
    // Idempotent: nothing is failed any more, so the same request finds (and charges) nothing.
    const again = await t.request('POST', '/blockchain-events/callbacks/recover', { key: c.key, body: { data: { item: { callbackUrl, since } } } });
    expect(again.body.data.item.found).toBe(0);
    t.app.recoveries?.wake();
    expect(await until('done', async () => (await recovery(c.key, again.body.data.item.recoveryId)).state === 'done' || undefined)).toBe(true);
    expect((await recovery(c.key, again.body.data.item.recoveryId)).creditsConsumed).toBe(0);
  }, 60_000);

  it('credits for only part of the window: that part is queued and paid, the job stops as out_of_credits, the rest stays failed', async () => {
    const poor = await t.customer({ domains: ['localhost'] });
    const helpers = followHelpers(() => ({ t, customer: poor, receiver, blockchain: node.blockchain, network: node.network }), SECRET);
    up('poor');
    const { referenceId } = await helpers.subscribe('block-mined', {}, 'poor');
    down('poor');
    const since = nowSeconds();
    // Three outages of one block each: each callback fails and deactivates the subscription, which is
    // activated again (without recovery) before the next block.
    for (let i = 1; i <= 3; i++) {
      await mineAndProcess(1);
      const entries = await afterOutage(poor.key, referenceId, i);
      expect(entries.every((e) => e.status === 'failed')).toBe(true);
      if (i < 3) expect((await t.request('POST', `/blockchain-events/subscriptions/${referenceId}/activate`, { key: poor.key })).status).toBe(201);
    }
    up('poor');
    // Exactly the activation (5) and two callbacks (2 x 5).
    await t.app.database.db.query('test:recovery-set-credits', 'UPDATE customers SET credits = $2 WHERE id = $1', [poor.id, '15']);
    const activated = await t.request('POST', `/blockchain-events/subscriptions/${referenceId}/activate?recoverSince=${since}`, { key: poor.key });
    expect(activated.status, activated.text).toBe(201);
    t.app.recoveries?.wake();
    // Read from the store: the API read costs a credit, and this customer is to end at 0.
    const stopped = await until('the job stopped', async () => {
      const r = await getRecovery(t.app.database.db, poor.id, activated.body.data.recoveryId);
      return r?.state === 'out_of_credits' && r.delivered === 2 && r;
    });
    expect(stopped).toMatchObject({ found: 3, queued: 2, creditsConsumed: 10n, failed: 0 });
    expect(stopped.finishedAt).toBeInstanceOf(Date);
    expect(await creditsOf(poor)).toBe(0n);
    // The log endpoint costs a credit per item, which this customer no longer has: read the store.
    const rows = await t.app.database.db.query<{ status: string; sequence: string }>(
      'test:recovery-statuses',
      'SELECT status, sequence FROM callbacks WHERE subscription_id = $1 ORDER BY sequence',
      [referenceId],
    );
    expect(rows.map((r) => [Number(r.sequence), r.status])).toEqual([
      [1, 'delivered'],
      [2, 'delivered'],
      [3, 'failed'],
    ]);
  }, 60_000);
});

describe('secret rotation', () => {
  const hex = (secret: string, body: Buffer) => createHmac('sha256', secret).update(body).digest('hex');
  const standard = (secret: string, r: ReceivedRequest) =>
    `v1,${createHmac('sha256', secret).update(`${r.headers['webhook-id']}.${r.headers['webhook-timestamp']}.`).update(r.rawBody).digest('base64')}`;
  /** A receiver's check with one secret configured: any v1 entry of webhook-signature verifies. */
  const verifies = (secret: string, r: ReceivedRequest) => String(r.headers['webhook-signature']).split(' ').includes(standard(secret, r));

  it('during the overlap both secrets verify every callback; after it only the new one', async () => {
    up('rotate');
    const { referenceId } = await subscribe('block-mined', {}, 'rotate');
    const rotated = await t.request('POST', `/blockchain-events/subscriptions/${referenceId}/rotate-secret`, {
      key: c.key,
      body: { data: { item: { callbackSecretKey: NEW_SECRET, overlapSeconds: 3 } } },
    });
    expect(rotated.status, rotated.text).toBe(200);
    expect(rotated.headers.get('x-credits-consumed')).toBe('5');
    expect(rotated.body.data.item.callbackSecretKey).toBe(NEW_SECRET);
    const overlapEnds = rotated.body.data.item.previousSecretValidUntil as number;
    expect(overlapEnds - nowSeconds()).toBeGreaterThanOrEqual(2);

    await mineAndProcess(1);
    const [during] = await until('the callback during the overlap', async () => callbacksOf(referenceId).length === 1 && callbacksOf(referenceId));
    const d = during as Callback;
    expect(d.headers['x-signature']).toBe(hex(NEW_SECRET, d.rawBody));
    expect(d.headers['x-signature-previous']).toBe(hex(SECRET, d.rawBody));
    expect(String(d.headers['webhook-signature']).split(' ')).toEqual([standard(NEW_SECRET, d), standard(SECRET, d)]);
    expect(verifies(SECRET, d) && verifies(NEW_SECRET, d)).toBe(true);
    expect(verifies('some-other-secret', d)).toBe(false);

    // After the overlap: only the new secret signs.
    await until('the overlap to end', async () => Date.now() / 1000 > overlapEnds + 1.1, 10_000);
    await mineAndProcess(1);
    const after = (await until('the callback after the overlap', async () => callbacksOf(referenceId).length === 2 && callbacksOf(referenceId)))[1] as Callback;
    expect(after.headers['x-signature']).toBe(hex(NEW_SECRET, after.rawBody));
    expect(after.headers['x-signature-previous']).toBeUndefined();
    expect(String(after.headers['webhook-signature']).split(' ')).toEqual([standard(NEW_SECRET, after)]);
    expect(verifies(SECRET, after)).toBe(false);
    expect([sequenceOf(d), sequenceOf(after)]).toEqual([1, 2]);
  }, 60_000);
});

describe('store: sequence numbers and recovery chunks', () => {
  it('numbers only the callbacks inserted: a key given twice or already queued takes no number; each subscription counts on its own', async () => {
    up('store');
    const a = await subscribe('transaction-mined', { transactionId: randomBytes(32).toString('hex') }, 'store');
    const b = await subscribe('transaction-mined', { transactionId: randomBytes(32).toString('hex') }, 'store');
    const cb = (s: { referenceId: string }, key: string) => ({
      id: randomUUID(),
      customerId: c.id,
      subscriptionId: s.referenceId,
      eventType: 'TRANSACTION_MINED' as const,
      idempotencyKey: key,
      body: JSON.stringify({ referenceId: s.referenceId, idempotencyKey: key }),
      callbackUrl: `${receiver.url}/hooks/store`,
    });
    const enqueue = (list: ReturnType<typeof cb>[]) => t.app.database.db.transaction('test:recovery-enqueue', (tx) => enqueueCallbacks(tx, list));
    expect(await enqueue([cb(a, 'a1'), cb(b, 'b1'), cb(a, 'a2'), cb(a, 'a1')])).toBe(3);
    expect(await enqueue([cb(a, 'a2'), cb(b, 'b2'), cb(a, 'a3')])).toBe(2);
    const rows = await t.app.database.db.query<{ idempotency_key: string; sequence: string }>(
      'test:recovery-sequences',
      'SELECT idempotency_key, sequence FROM callbacks WHERE subscription_id = ANY ($1::uuid[]) ORDER BY idempotency_key',
      [[a.referenceId, b.referenceId]],
    );
    expect(rows.map((r) => [r.idempotency_key, Number(r.sequence)])).toEqual([
      ['a1', 1],
      ['a2', 2],
      ['a3', 3],
      ['b1', 1],
      ['b2', 2],
    ]);
    await until('delivered', async () => callbacksOf(a.referenceId).length === 3 && callbacksOf(b.referenceId).length === 2);
    expect(
      callbacksOf(a.referenceId)
        .map((r) => [r.json.idempotencyKey, sequenceOf(r)])
        .sort(),
    ).toEqual([
      ['a1', 1],
      ['a2', 2],
      ['a3', 3],
    ]);
  });

  it('a job stopped between chunks (a crash, a restart) resumes from its cursor: each callback queued and charged once', async () => {
    // This test runs the chunks itself: the app's runner stops (the last test of the file).
    await t.app.recoveries?.stop();
    up('chunks');
    const s = await subscribe('transaction-mined', { transactionId: randomBytes(32).toString('hex') }, 'chunks');
    const db = t.app.database.db;
    const later = new Date(Date.now() + 3_600_000);
    const keys = ['k1', 'k2', 'k3'];
    await db.transaction('test:recovery-chunk-enqueue', (tx) =>
      enqueueCallbacks(
        tx,
        keys.map((key) => ({
          id: randomUUID(),
          customerId: c.id,
          subscriptionId: s.referenceId,
          eventType: 'TRANSACTION_MINED' as const,
          idempotencyKey: key,
          body: JSON.stringify({ referenceId: s.referenceId, idempotencyKey: key }),
          callbackUrl: `${receiver.url}/hooks/chunks`,
        })),
        later,
      ),
    );
    // As the last retry leaves them (due later, so no worker touches them first).
    await db.query('test:recovery-chunk-fail', `UPDATE callbacks SET status = 'failed', attempts = 2, finished_at = now() WHERE subscription_id = $1`, [
      s.referenceId,
    ]);
    const started = await t.request('POST', `/blockchain-events/subscriptions/${s.referenceId}/recover`, {
      key: c.key,
      body: { data: { item: { since: nowSeconds() - 60 } } },
    });
    expect(started.status, started.text).toBe(202);
    const id = started.body.data.item.recoveryId as string;
    const before = await creditsOf(c);
    expect(await runRecoveryChunk(db, id, { chunk: 1, costPerCallback: 5n, now: new Date() })).toBe('more');
    expect(await getRecovery(db, c.id, id)).toMatchObject({ state: 'running', found: 3, queued: 1, creditsConsumed: 5n });
    // "Restart": a new runner takes the job over where the cursor is.
    const runner = startRecoveryRunner({ db, logger: { info() {}, warn() {}, error() {} }, costPerCallback: 5n, pollMs: 50 });
    try {
      await until('the job done', async () => (await getRecovery(db, c.id, id))?.state === 'done');
    } finally {
      await runner.stop();
    }
    expect(await getRecovery(db, c.id, id)).toMatchObject({ found: 3, queued: 3, creditsConsumed: 15n });
    expect(await creditsOf(c)).toBe((before as bigint) - 15n);
    expect(await runRecoveryChunk(db, id, { chunk: 1, costPerCallback: 5n, now: new Date() })).toBe('busy');
    await until('each sent once', async () => callbacksOf(s.referenceId).length === 3);
    await t.app.worker?.settled();
    expect(
      callbacksOf(s.referenceId)
        .map((r) => r.json.idempotencyKey)
        .sort(),
    ).toEqual(keys);
    const rows = await db.query<{ recovery_id: string; series_start: number }>(
      'test:recovery-chunk-rows',
      'SELECT recovery_id, series_start FROM callbacks WHERE subscription_id = $1',
      [s.referenceId],
    );
    // A new retry series each (numbering of attempts goes on), tagged with the job.
    expect(rows.every((r) => r.recovery_id === id && r.series_start === 2)).toBe(true);
  });
});
