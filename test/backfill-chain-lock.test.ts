/**
 * A backfill's batch takes the chain's lock (the live follower's) only where it meets live following:
 * blocks still in the follower's window, and the batch that ends the job (it hands the subscription's
 * held live events over). A batch of older blocks goes through while a live block holds the lock, so the
 * live block never waits for the batch's writes and commit (`npm run bench -- backfill`); the others wait.
 * On a real database, the lock held by a transaction of its own as the follower's step holds it.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { BlockJob } from '../src/domain/block-jobs.ts';
import type { ChainKey } from '../src/domain/chains.ts';
import { type BatchResult, createBlockJob, writeJobBatch } from '../src/store/block-jobs.ts';
import { lockChain, saveCursor } from '../src/store/chain-state.ts';
import { createDb, type Db } from '../src/store/db.ts';
import { insertUnlessTwin } from '../src/store/subscriptions.ts';
import { startTestApp, type TestApp } from './harness.ts';
import { ethereumSubscription } from './support/subscription-rows.ts';

const CHAIN: ChainKey = { blockchain: 'ethereum', network: 'mainnet' };
const HEAD = 1000;
/** The follower's window in these batches: blocks 996..1000 are in it. */
const WINDOW = 5;

let t: TestApp;
let db: Db;
let follower: Db;
let customerId: string;

beforeAll(async () => {
  t = await startTestApp();
  db = t.app.database.db;
  follower = createDb(t.app.database.url, { poolSize: 1 });
  customerId = (await t.customer()).id;
  await db.transaction('test:cursor', (tx) => saveCursor(tx, CHAIN, { height: HEAD, hash: `0x${'a'.repeat(64)}`, timestamp: 1_700_000_000 }, HEAD));
}, 60_000);

afterAll(async () => {
  await follower?.close();
  await t?.close();
});

/** A BLOCK_MINED subscription with a backfill job of blocks 1..toHeight. */
async function backfillJob(toHeight: number): Promise<BlockJob> {
  const subscription = await insertUnlessTwin(db, customerId, ethereumSubscription({ eventType: 'BLOCK_MINED', target: null }));
  if (!subscription) throw new Error('subscription not inserted');
  return await db.transaction('test:job', (tx) =>
    createBlockJob(tx, { id: randomUUID(), kind: 'backfill', customerId, subscriptionId: subscription.id, chain: CHAIN, fromHeight: 1, toHeight }),
  );
}

/** Writes the batch of blocks after+1..through (no callbacks) while a live step holds the chain's lock; whether it finished before the step let go. */
async function whileLiveStepHoldsTheLock(job: BlockJob, after: number, through: number): Promise<{ beforeRelease: boolean; result: BatchResult }> {
  let release: () => void = () => undefined;
  let locked: () => void = () => undefined;
  const isLocked = new Promise<void>((resolve) => {
    locked = resolve;
  });
  const step = follower.transaction('test:live-step', async (tx) => {
    await lockChain(tx, CHAIN);
    locked();
    await new Promise<void>((resolve) => {
      release = resolve;
    });
  });
  await isLocked;
  const blocks = Array.from({ length: through - after }, (_, i) => ({ height: after + 1 + i, hash: `0x${String(after + 1 + i).padStart(64, '0')}` }));
  let done = false;
  const batch = writeJobBatch(db, { job, after, through, blocks, callbacks: [], costPerCallback: 0n, window: WINDOW, now: new Date() }).finally(() => {
    done = true;
  });
  await Promise.race([batch, new Promise((resolve) => setTimeout(resolve, 500))]);
  const beforeRelease = done;
  release();
  await step;
  return { beforeRelease, result: await batch };
}

it('a batch of blocks below the follower’s window does not wait for a live block holding the chain’s lock', async () => {
  const job = await backfillJob(HEAD);
  const { beforeRelease, result } = await whileLiveStepHoldsTheLock(job, 0, 200);
  expect(result).toEqual({ kind: 'written', queued: 0, finished: false });
  expect(beforeRelease).toBe(true);
});

it('a batch reaching into the window waits for the live block, and so does the batch that ends a backfill below it', async () => {
  const windowJob = await backfillJob(HEAD);
  const intoWindow = await whileLiveStepHoldsTheLock(windowJob, 0, HEAD - WINDOW + 1);
  expect(intoWindow.result).toEqual({ kind: 'written', queued: 0, finished: false });
  expect(intoWindow.beforeRelease).toBe(false);

  const deepJob = await backfillJob(300);
  expect((await whileLiveStepHoldsTheLock(deepJob, 0, 200)).beforeRelease).toBe(true);
  const last = await whileLiveStepHoldsTheLock({ ...deepJob, processedHeight: 200 }, 200, 300);
  expect(last.result).toEqual({ kind: 'written', queued: 0, finished: true });
  expect(last.beforeRelease).toBe(false);
});
