/**
 * Retention on a real database: the pass deletes exactly the finished callbacks older than their
 * status's window, with their attempts, and never a pending or recent one, nor one a reorganisation or
 * the already-mined check still needs; the delivery role's pruner runs it periodically, reports it in
 * /metrics, and stops after its current batch on shutdown.
 */
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultRetention } from '../src/config/config.ts';
import { pacingOf, pauseAfter, pruneOldCallbacks } from '../src/delivery/retention.ts';
import { enqueueCallbacks, requeueCallback } from '../src/store/callbacks.ts';
import { createDb, type Db } from '../src/store/db.ts';
import { pruneFinishedBatch } from '../src/store/retention.ts';
import { insertUnlessTwin } from '../src/store/subscriptions.ts';
import { SAMPLE, startTestApp, type TestApp } from './harness.ts';
import { ethereumSubscription } from './support/subscription-rows.ts';
import { until } from './support/wait.ts';

/** An ethereum/mainnet subscription row of `eventType` (inserted by SQL, not through the API), with a twin allowed. */
const DAY = 86_400_000;
const OTHER_EVENT = 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED';

/**
 * `count` callbacks of `status` finished `ageDays` before `now` (pending: created then, not finished),
 * each with `attempts` attempts; returns their ids.
 */
async function insertCallbacks(
  db: Db,
  options: {
    status: string;
    ageDays: number;
    now: Date;
    count?: number;
    attempts?: number;
    subscriptionId?: string;
    eventType?: string;
    key?: string;
    customerId?: string;
  },
): Promise<string[]> {
  const at = new Date(options.now.getTime() - options.ageDays * DAY);
  // Callbacks and their attempts in one statement: a running pruner must never see a finished callback whose
  // attempts are not there yet (it would delete the callback and leave the later attempts orphaned; in the
  // service an attempt is always recorded before its callback finishes).
  const rows = await db.query<{ id: string }>(
    'test:insert-callbacks',
    `WITH made AS (
       INSERT INTO callbacks (id, customer_id, subscription_id, event_type, idempotency_key, body, callback_url, destination, status,
         next_attempt_at, created_at, finished_at)
       SELECT gen_random_uuid(), $8::bigint, coalesce($4::uuid, gen_random_uuid()), $5, coalesce($6, 'k' || g || '-' || gen_random_uuid()), '{}',
         'https://hooks.example.com/x', 'https://hooks.example.com:443', $1::text, $2, $2, CASE WHEN $1::text = 'pending' THEN NULL ELSE $2::timestamptz END
       FROM generate_series(1, $3::int) g RETURNING id),
     tried AS (
       INSERT INTO callback_attempts (callback_id, attempt, started_at, duration_ms, http_status)
       SELECT id, n, $2, 5, 200 FROM made, generate_series(1, $7::int) n)
     SELECT id FROM made`,
    [
      options.status,
      at,
      options.count ?? 1,
      options.subscriptionId ?? null,
      options.eventType ?? OTHER_EVENT,
      options.key ?? null,
      options.attempts ?? 2,
      options.customerId ?? '1',
    ],
  );
  const ids = rows.map((r) => r.id);
  return ids;
}

async function existing(db: Db, ids: string[]): Promise<Set<string>> {
  const rows = await db.query<{ id: string }>('test:existing', 'SELECT id FROM callbacks WHERE id = ANY ($1::uuid[])', [ids]);
  return new Set(rows.map((r) => r.id));
}

async function orphanAttempts(db: Db): Promise<number> {
  const [row] = await db.query<{ n: number }>(
    'test:orphans',
    'SELECT count(*)::int AS n FROM callback_attempts a WHERE NOT EXISTS (SELECT 1 FROM callbacks c WHERE c.id = a.callback_id)',
  );
  return row?.n ?? -1;
}

describe('the retention pass', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ retention: { ...defaultRetention(), enabled: false } });
  });
  afterAll(() => t.close());

  it('deletes exactly the finished callbacks past their status window, with their attempts; dry run only counts', async () => {
    const db = t.app.database.db;
    const now = new Date();
    const ages = [1, 6, 8, 29, 31, 89, 91, 400];
    const windows: Record<string, number> = { delivered: 30, failed: 90, cancelled: 7 };
    const expectGone = new Set<string>();
    const expectKept = new Set<string>();
    for (const status of ['pending', 'delivered', 'failed', 'cancelled']) {
      for (const ageDays of ages) {
        const ids = await insertCallbacks(db, { status, ageDays, now, count: 3 });
        const old = status !== 'pending' && ageDays > (windows[status] as number);
        for (const id of ids) (old ? expectGone : expectKept).add(id);
      }
    }
    // Old, but recorded under a block still in a chain's window: a reorganisation may need it.
    const [inWindow] = await insertCallbacks(db, { status: 'cancelled', ageDays: 400, now, key: `block-key-${randomUUID()}` });
    await db.query(
      'test:block-callback',
      `INSERT INTO chain_block_callbacks (blockchain, network, block_height, subscription_id, idempotency_key)
       SELECT 'ethereum', 'mainnet', 100, subscription_id, idempotency_key FROM callbacks WHERE id = $1`,
      [inWindow],
    );
    expectKept.add(inWindow as string);
    // Old, of an existing TRANSACTION_MINED subscription: without it the already-mined check would send it again.
    const customer = await t.customer();
    const subscription = await insertUnlessTwin(
      db,
      customer.id,
      ethereumSubscription({ eventType: 'TRANSACTION_MINED', transactionId: SAMPLE.evmTx, target: SAMPLE.evmTx }),
    );
    const [mined] = await insertCallbacks(db, { status: 'delivered', ageDays: 400, now, subscriptionId: subscription?.id, eventType: 'TRANSACTION_MINED' });
    expectKept.add(mined as string);
    // Old TRANSACTION_MINED of a deleted subscription (no row): pruned as any other.
    for (const id of await insertCallbacks(db, { status: 'delivered', ageDays: 400, now, eventType: 'TRANSACTION_MINED' })) expectGone.add(id);

    const retention = { ...defaultRetention(), batchSize: 2, pauseMs: 0 };
    const all = [...expectGone, ...expectKept];
    const dry = await pruneOldCallbacks(db, retention, { now, dryRun: true });
    expect(dry.callbacks).toBe(expectGone.size);
    expect(dry.attempts).toBe(expectGone.size * 2);
    expect(dry.byStatus.delivered.callbacks).toBe(3 * 4 + 1);
    expect(dry.byStatus.failed.callbacks).toBe(3 * 2);
    expect(dry.byStatus.cancelled.callbacks).toBe(3 * 6);
    expect((await existing(db, all)).size).toBe(all.length);

    const figures = await pruneOldCallbacks(db, retention, { now });
    expect(figures.callbacks).toBe(expectGone.size);
    expect(figures.attempts).toBe(expectGone.size * 2);
    expect(figures.interrupted).toBe(false);
    const left = await existing(db, all);
    expect([...left].sort()).toEqual([...expectKept].sort());
    expect(await orphanAttempts(db)).toBe(0);
    const [kept] = await db.query<{ n: number }>(
      'test:kept-attempts',
      'SELECT count(*)::int AS n FROM callback_attempts WHERE callback_id = ANY ($1::uuid[])',
      [[...expectKept]],
    );
    expect(kept?.n).toBe(expectKept.size * 2);
    // Nothing more to do.
    expect((await pruneOldCallbacks(db, retention, { now })).callbacks).toBe(0);
  });

  it("keeps each subscription's callback counter exact: decremented by what a batch deleted, removed when it reaches zero", async () => {
    const db = t.app.database.db;
    const now = new Date();
    const [emptied, halved, untouched] = [randomUUID(), randomUUID(), randomUUID()];
    // Interleaved over the three subscriptions, so that one batch decrements several counters at once.
    for (let i = 0; i < 5; i++) {
      await insertCallbacks(db, { status: 'delivered', ageDays: 40, now, count: 3, attempts: 1, subscriptionId: emptied });
      await insertCallbacks(db, { status: 'delivered', ageDays: 40, now, count: 2, attempts: 1, subscriptionId: halved });
      await insertCallbacks(db, { status: 'delivered', ageDays: 2, now, count: 2, attempts: 1, subscriptionId: halved });
      await insertCallbacks(db, { status: 'delivered', ageDays: 2, now, count: 1, attempts: 1, subscriptionId: untouched });
    }
    const counters = async () =>
      Object.fromEntries(
        (
          await db.query<{ subscription_id: string; callbacks: number; actual: number }>(
            'test:counters',
            `SELECT k.subscription_id, k.callbacks::int, (SELECT count(*)::int FROM callbacks c WHERE c.subscription_id = k.subscription_id) AS actual
             FROM callback_counts k WHERE k.subscription_id = ANY ($1::uuid[])`,
            [[emptied, halved, untouched]],
          )
        ).map((r) => [r.subscription_id, [r.callbacks, r.actual]]),
      );
    expect(await counters()).toEqual({ [emptied]: [15, 15], [halved]: [20, 20], [untouched]: [5, 5] });
    await pruneOldCallbacks(db, { ...defaultRetention(), batchSize: 7, pauseMs: 0 }, { now });
    expect(await counters()).toEqual({ [halved]: [10, 10], [untouched]: [5, 5] });
  });

  it('yields: spends at most dutyCycle of the pass in batches, and its asynchronous commit stays in its own transactions', async () => {
    // One connection, so the batches and the SHOW below share a session: a SET that outlived its batch would show.
    const db = createDb(t.app.database.url, { poolSize: 1 });
    try {
      const now = new Date();
      const old = await insertCallbacks(db, { status: 'delivered', ageDays: 31, now, count: 3_000, attempts: 1 });
      const retention = { ...defaultRetention(), batchSize: 200, pauseMs: 0, dutyCycle: 0.25 };
      const figures = await pruneOldCallbacks(db, retention, { now });
      expect(figures.callbacks).toBe(old.length);
      expect((await existing(db, old)).size).toBe(0);
      // 15 full batches, each followed by a pause three times its length, then one that finds nothing.
      expect(figures.busySeconds).toBeGreaterThan(0);
      expect(figures.busySeconds / figures.seconds).toBeLessThan(0.4);
      const [setting] = await db.query<{ synchronous_commit: string }>('test:show', 'SHOW synchronous_commit');
      expect(setting?.synchronous_commit).toBe('on');
    } finally {
      await db.close();
    }
  });
});

/** A transaction on its own connection that stays open, after `work`, until released. */
async function holdOpen(url: string, work: (tx: Parameters<Parameters<Db['transaction']>[1]>[0]) => Promise<unknown>) {
  const db = createDb(url, { poolSize: 1 });
  let release = () => {};
  const released = new Promise<void>((r) => {
    release = r;
  });
  let ready = () => {};
  const started = new Promise<void>((r) => {
    ready = r;
  });
  const done = db.transaction('test:hold', async (tx) => {
    await work(tx);
    ready();
    await released;
  });
  await Promise.race([started, done]);
  return {
    async commit() {
      release();
      await done;
      await db.close();
    },
  };
}

/** Until a statement that deletes callbacks waits for a lock (at most 10 s). */
async function untilPrunerWaits(db: Db): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const [row] = await db.query<{ n: number }>(
      'test:pruner-waits',
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%DELETE FROM callbacks%' AND pid <> pg_backend_pid()`,
    );
    if ((row?.n ?? 0) > 0) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error('the prune batch never waited for the held callback');
}

describe('a prune batch beside the other writers of old callbacks', () => {
  let t: TestApp;
  let customerId: string;
  let subscriptionId: string;
  beforeAll(async () => {
    t = await startTestApp({ retention: { ...defaultRetention(), enabled: false } });
    customerId = (await t.customer()).id;
    const subscription = await insertUnlessTwin(
      t.app.database.db,
      customerId,
      ethereumSubscription({ eventType: 'ADDRESS_COINS_TRANSACTION_CONFIRMED', address: SAMPLE.evmAddress, target: SAMPLE.evmAddress.toLowerCase() }),
    );
    subscriptionId = subscription?.id as string;
  });
  afterAll(() => t.close());

  const oldOnes = (now: Date, count: number) =>
    insertCallbacks(t.app.database.db, { status: 'delivered', ageDays: 45, now, count, attempts: 1, customerId, subscriptionId });
  const batch = (now: Date, lockWaitMs?: number) =>
    pruneFinishedBatch(t.app.database.db, { status: 'delivered', before: new Date(now.getTime() - 30 * DAY), limit: 100, lockWaitMs });

  it('keeps a callback resent while the batch waited for it (the delete checks the row again), and deletes the rest', async () => {
    const db = t.app.database.db;
    const now = new Date();
    const [resent, ...others] = await oldOnes(now, 3);
    // The resend's transaction holds the row from before the batch starts until after it waits for it.
    const resend = await holdOpen(t.app.database.url, async (tx) => expect(await requeueCallback(tx, customerId, resent as string, now)).toBe('queued'));
    const pruning = batch(now, 10_000);
    await untilPrunerWaits(db);
    await resend.commit();
    const figures = await pruning;
    expect(figures.skippedHeld).toBe(false);
    expect(figures.callbacks).toBe(2);
    expect(figures.attempts).toBe(2);
    expect((await existing(db, others)).size).toBe(0);
    const [row] = await db.query<{ status: string }>('test:status', 'SELECT status FROM callbacks WHERE id = $1', [resent]);
    expect(row?.status).toBe('pending');
    expect(await orphanAttempts(db)).toBe(0);
  });

  it('gives up waiting for a callback held for long and skips it instead: the rest goes, the held one stays', async () => {
    const db = t.app.database.db;
    const now = new Date();
    const [held, ...others] = await oldOnes(now, 4);
    const resend = await holdOpen(t.app.database.url, async (tx) => expect(await requeueCallback(tx, customerId, held as string, now)).toBe('queued'));
    try {
      const started = performance.now();
      const figures = await batch(now);
      expect(performance.now() - started).toBeLessThan(5_000);
      expect(figures.skippedHeld).toBe(true);
      expect(figures.callbacks).toBe(3);
      expect((await existing(db, others)).size).toBe(0);
      expect((await existing(db, [held as string])).size).toBe(1);
    } finally {
      await resend.commit();
    }
    // Resent meanwhile: no longer prunable.
    expect((await batch(now)).callbacks).toBe(0);
    expect((await existing(db, [held as string])).size).toBe(1);
  });

  it("waits as long as needed for the callback counter a chain follower's insert holds, without giving up, and keeps it exact", async () => {
    const db = t.app.database.db;
    const now = new Date();
    const old = await oldOnes(now, 5);
    const count = async () =>
      (await db.query<{ n: number }>('test:counter', 'SELECT callbacks::int AS n FROM callback_counts WHERE subscription_id = $1', [subscriptionId]))[0]?.n;
    const before = await count();
    // A follower queueing a new callback of the subscription: its counter row is held until it commits.
    const follower = await holdOpen(t.app.database.url, (tx) =>
      enqueueCallbacks(tx, [
        {
          id: randomUUID(),
          customerId,
          subscriptionId,
          eventType: 'ADDRESS_COINS_TRANSACTION_CONFIRMED',
          idempotencyKey: `new-${randomUUID()}`,
          body: '{}',
          callbackUrl: SAMPLE.callbackUrl,
        },
      ]),
    );
    const pruning = batch(now);
    await untilPrunerWaits(db);
    // Well past the batch's 50 ms limit for callbacks.
    await new Promise((r) => setTimeout(r, 300));
    await follower.commit();
    const figures = await pruning;
    expect(figures.skippedHeld).toBe(false);
    expect(figures.callbacks).toBe(old.length);
    const [actual] = await db.query<{ n: number }>('test:actual', 'SELECT count(*)::int AS n FROM callbacks WHERE subscription_id = $1', [subscriptionId]);
    expect(await count()).toBe(actual?.n);
    expect(await count()).toBe((before ?? 0) - old.length + 1);
  });
});

describe('the pause between two batches', () => {
  it('is the batch time scaled by the duty cycle, at least pauseMs', () => {
    expect(pauseAfter(30, { pauseMs: 10, dutyCycle: 0.5 })).toBe(30);
    expect(pauseAfter(30, { pauseMs: 10, dutyCycle: 0.25 })).toBe(90);
    expect(pauseAfter(4, { pauseMs: 10, dutyCycle: 0.5 })).toBe(10);
    expect(pauseAfter(30, { pauseMs: 0, dutyCycle: 1 })).toBe(0);
  });

  it('follows the configured pacing, else none while the backend runs at a lower priority, else half the time and 10 ms', () => {
    expect(pacingOf({ dutyCycle: 0.25, pauseMs: 5 }, true)).toEqual({ dutyCycle: 0.25, pauseMs: 5 });
    expect(pacingOf({}, true)).toEqual({ dutyCycle: 1, pauseMs: 0 });
    expect(pacingOf({}, false)).toEqual({ dutyCycle: 0.5, pauseMs: 10 });
  });
});

describe('the pruner of the delivery role', () => {
  it('prunes periodically, counts in /metrics, and stops after its current batch on shutdown', { timeout: 120_000 }, async () => {
    const lines: string[] = [];
    const logger = pino(
      { level: 'info' },
      new Writable({
        write(chunk, _encoding, done) {
          lines.push(...String(chunk).trim().split('\n'));
          done();
        },
      }),
    );
    // backendNice 0: at the default 19 the pruner's backend (and its autogroup) runs only on the CPU the
    // machine leaves idle (docs/operations/retention.md, "CPU priority"; test/backend-priority.test.ts tests
    // it), and a loaded test machine leaves next to none: how far the pass got in a given time, and how long its
    // batch under way held up the shutdown, then measured the machine's load (this test failed once at load 12).
    // Its priority is not what this test is about.
    const retention = { ...defaultRetention(), intervalSeconds: 1, batchSize: 50, pauseMs: 20, backendNice: 0 };
    const t = await startTestApp({ retention }, { logger });
    try {
      const db = t.app.database.db;
      const now = new Date();
      const recent = await insertCallbacks(db, { status: 'delivered', ageDays: 29, now, count: 100, attempts: 1 });
      const pending = await insertCallbacks(db, { status: 'pending', ageDays: 400, now, count: 100, attempts: 1 });
      const old = await insertCallbacks(db, { status: 'delivered', ageDays: 31, now, count: 20_000, attempts: 1 });
      // The old ones are exactly the callbacks past the delivered window: counted without sending their 20,000 ids.
      const oldLeft = async () =>
        (
          await db.query<{ n: number }>('test:old-left', `SELECT count(*)::int AS n FROM callbacks WHERE status = 'delivered' AND finished_at < $1`, [
            new Date(now.getTime() - retention.deliveredDays * DAY),
          ])
        )[0]?.n ?? -1;
      // The next pass (within a second) deletes 50 at a time, at least 20 ms apart (400 batches, 16 s or more for
      // all): stop it part way, once it has deleted 2,000, however long the machine takes to get there.
      await until('the pruner to delete 2,000 old callbacks', async () => (await oldLeft()) <= old.length - 2_000, 90_000);
      const metrics = await fetch(`${t.url}/metrics`).then((r) => r.text());
      expect(metrics).toMatch(/herald_retention_pruned_rows_total\{status="delivered",table="callbacks"\} [1-9]/);
      const stopping = performance.now();
      await t.close();
      const stopMs = performance.now() - stopping;
      expect(stopMs).toBeLessThan(3_000);
      expect(lines.some((l) => l.includes('retention: pruning stopped by shutdown'))).toBe(true);
      // The database is still there (the app closed its own pool): look with a fresh app on it.
      const again = await startTestApp({ databaseUrl: t.config.databaseUrl, retention: { ...defaultRetention(), enabled: false } });
      try {
        const db2 = again.app.database.db;
        const remaining = (await existing(db2, old)).size;
        expect(remaining).toBeGreaterThan(0);
        expect(remaining).toBeLessThan(old.length);
        expect((await existing(db2, recent)).size).toBe(recent.length);
        expect((await existing(db2, pending)).size).toBe(pending.length);
        expect(await orphanAttempts(db2)).toBe(0);
      } finally {
        await again.close();
      }
    } finally {
      await t.close();
    }
  });
});
