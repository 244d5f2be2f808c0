/**
 * Backfill and replay jobs (docs/guides/recover-and-replay.md "Backfill and replay"): one row per request, worked through by the
 * ingest role of the subscription's chain (src/ingest/block-jobs.ts), which fetches and evaluates the
 * blocks outside any transaction and hands each batch here.
 *
 * A batch is ONE transaction: lock the job (the batch is dropped if another runner moved it meanwhile),
 * lock the chain (the subscription's sequence counter is written only under it, and the window's hashes
 * are compared under it), charge, queue, move processed_height. So a crash repeats no batch and loses
 * none, and nothing is ever queued unpaid.
 *
 * Backfill: its events go through pending_events like a confirmed event's, and are taken in the order
 * live following numbers them (due height, block, match order) as far as processed_height. Events due
 * above to_height (the height at creation) are live following's: they wait with the live events the
 * follower holds back for a backfilling subscription (follower.ts), and the last batch releases them
 * all, under the chain's lock, in block order, after every backfilled one: the subscription's
 * x-callback-sequence then follows block order across the hand-over.
 *
 * Replay: events due at or below the chain's processed height are queued again with their live keys:
 * a key not in the outbox (pruned, never sent) is inserted, one delivered or failed is put back in the
 * queue as a resend (same row, body and sequence number, a new retry series), one still pending is left
 * to its retries, one cancelled is left cancelled.
 */

import type { BlockJob, BlockJobKind, BlockJobState } from '../domain/block-jobs.ts';
import type { Blockchain, ChainKey, Network } from '../domain/chains.ts';
import { FINALIZED_DUE_HEIGHT } from '../domain/confirmations.ts';
import type { PendingEvent } from '../domain/events.ts';
import { callbackOfEvent } from '../domain/events.ts';
import { CALLBACKS_CHANNEL, dueOrHeldSql, enqueueCallbacks } from './callbacks.ts';
import {
  deletePendingEventsOf,
  getCursor,
  insertPendingEvents,
  lockChain,
  readFinalizedHeight,
  recordBlockCallbacks,
  takeDuePendingEventsOf,
  windowBlocks,
} from './chain-state.ts';
import { creditBalance, debitCredits } from './customers.ts';
import type { Db, Queryable } from './db.ts';

interface BlockJobRow {
  id: string;
  kind: BlockJobKind;
  customer_id: string;
  subscription_id: string;
  blockchain: Blockchain;
  network: Network;
  from_height: string;
  to_height: string;
  processed_height: string;
  state: BlockJobState;
  queued: number;
  credits_consumed: string;
  created_at: Date;
  finished_at: Date | null;
}

function toJob(r: BlockJobRow): BlockJob {
  return {
    id: r.id,
    kind: r.kind,
    customerId: String(r.customer_id),
    subscriptionId: r.subscription_id,
    blockchain: r.blockchain,
    network: r.network,
    fromHeight: Number(r.from_height),
    toHeight: Number(r.to_height),
    processedHeight: Number(r.processed_height),
    state: r.state,
    queued: r.queued,
    creditsConsumed: BigInt(r.credits_consumed),
    createdAt: r.created_at,
    finishedAt: r.finished_at,
  };
}

/** `creditsConsumed`: what its creation charged (a replay's blocks), counted in the job's total. */
export async function createBlockJob(
  tx: Queryable,
  job: {
    id: string;
    kind: BlockJobKind;
    customerId: string;
    subscriptionId: string;
    chain: ChainKey;
    fromHeight: number;
    toHeight: number;
    creditsConsumed?: bigint;
  },
): Promise<BlockJob> {
  const [row] = await tx.query<BlockJobRow>(
    'block-jobs:create',
    `INSERT INTO block_jobs (id, kind, customer_id, subscription_id, blockchain, network, from_height, to_height, processed_height, credits_consumed)
     VALUES ($1, $2, $3, $4, $5, $6, $7::bigint, $8::bigint, $7::bigint - 1, $9) RETURNING *`,
    [
      job.id,
      job.kind,
      job.customerId,
      job.subscriptionId,
      job.chain.blockchain,
      job.chain.network,
      job.fromHeight,
      job.toHeight,
      String(job.creditsConsumed ?? 0n),
    ],
  );
  return toJob(row as BlockJobRow);
}

/**
 * Blocks the customer has waiting in the running jobs of `chain` (what each has left of its range).
 * Locks the customer's row first: two job creations of one customer count one after the other, so
 * together they cannot pass the cap that each alone respects.
 */
export async function lockQueuedBlocks(tx: Queryable, customerId: string, chain: ChainKey): Promise<number> {
  await tx.query('block-jobs:lock-customer', 'SELECT 1 FROM customers WHERE id = $1 FOR UPDATE', [customerId]);
  const [row] = await tx.query<{ blocks: string }>(
    'block-jobs:queued-blocks',
    `SELECT coalesce(sum(to_height - processed_height), 0) AS blocks FROM block_jobs
     WHERE customer_id = $1 AND blockchain = $2 AND network = $3 AND state = 'running'`,
    [customerId, chain.blockchain, chain.network],
  );
  return Number(row?.blocks ?? 0);
}

/** A job of the customer's; undefined when there is none with that id. */
export async function getBlockJob(q: Queryable, customerId: string, kind: BlockJobKind, id: string): Promise<BlockJob | undefined> {
  const [row] = await q.query<BlockJobRow>('block-jobs:get', 'SELECT * FROM block_jobs WHERE customer_id = $1 AND kind = $2 AND id = $3', [
    customerId,
    kind,
    id,
  ]);
  return row ? toJob(row) : undefined;
}

/** The subscriptions of `chain` with a running backfill: the follower holds their live events back (read under the chain's lock). */
export async function runningBackfills(q: Queryable, chain: ChainKey): Promise<string[]> {
  const rows = await q.query<{ subscription_id: string }>(
    'block-jobs:running-backfills',
    `SELECT subscription_id FROM block_jobs WHERE blockchain = $1 AND network = $2 AND kind = 'backfill' AND state = 'running'`,
    [chain.blockchain, chain.network],
  );
  return rows.map((r) => r.subscription_id);
}

/** Whether the subscription has a running job (of `kind` when given). */
export async function hasRunningJob(q: Queryable, subscriptionId: string, kind?: BlockJobKind): Promise<boolean> {
  const rows = await q.query(
    'block-jobs:has-running',
    `SELECT 1 FROM block_jobs WHERE subscription_id = $1 AND state = 'running' AND ($2::text IS NULL OR kind = $2) LIMIT 1`,
    [subscriptionId, kind ?? null],
  );
  return rows.length > 0;
}

/**
 * Each customer's next job on `chain`: of its running jobs whose subscription is active, backfills
 * before replays, oldest first. The runner gives these turns round-robin between customers
 * (ingest/block-jobs.ts); a job of an inactive subscription waits, without holding up the customer's others.
 */
export async function nextJobPerCustomer(q: Queryable, chain: ChainKey): Promise<BlockJob[]> {
  const rows = await q.query<BlockJobRow>(
    'block-jobs:next-per-customer',
    `SELECT DISTINCT ON (j.customer_id) j.* FROM block_jobs j JOIN subscriptions s ON s.id = j.subscription_id
     WHERE j.blockchain = $1 AND j.network = $2 AND j.state = 'running' AND s.is_active
     ORDER BY j.customer_id, j.kind, j.created_at`,
    [chain.blockchain, chain.network],
  );
  return rows.map(toJob);
}

export interface JobBatch {
  job: BlockJob;
  /** processed_height the batch was evaluated after: the batch is dropped if the job moved since. */
  after: number;
  /** The last block evaluated (after + 1 .. through). */
  through: number;
  /** The blocks evaluated (for the window check): height and hash. */
  blocks: { height: number; hash: string }[];
  /** Their callbacks, in block order and within a block in the order evaluate() gave. */
  callbacks: PendingEvent[];
  costPerCallback: bigint;
  /** The follower's window (blocks a reorganisation may still replace). */
  window: number;
  now: Date;
}

/**
 * - written: the batch is in; `finished` when it ended the job.
 * - raced: another runner moved the job (or it ended, or its subscription is gone): drop the batch.
 * - paused: the subscription is inactive: nothing written, try again later.
 * - unsettled: a block of the batch is not (or no longer) the one the chain's window holds, or the chain
 *   has not processed it: a reorganisation is under way; fetch again later.
 */
export type BatchResult = { kind: 'written'; queued: number; finished: boolean } | { kind: 'raced' | 'paused' | 'unsettled' };

export async function writeJobBatch(db: Db, batch: JobBatch): Promise<BatchResult> {
  const { job } = batch;
  const chain = { blockchain: job.blockchain, network: job.network };
  return await db.transaction(`block-jobs:${job.kind}-batch`, async (tx) => {
    const [locked] = await tx.query<{ processed_height: string; is_active: boolean }>(
      'block-jobs:lock',
      `SELECT j.processed_height, s.is_active FROM block_jobs j JOIN subscriptions s ON s.id = j.subscription_id
       WHERE j.id = $1 AND j.state = 'running' FOR UPDATE OF j FOR KEY SHARE OF s`,
      [job.id],
    );
    if (!locked || Number(locked.processed_height) !== batch.after) return { kind: 'raced' as const };
    if (!locked.is_active) return { kind: 'paused' as const };
    // The chain's lock (the follower's) only where the batch meets live following: blocks still in the
    // follower's window (compared with it, their callbacks recorded under their block) and the backfill's
    // end (it hands the subscription's held live events over). A batch of blocks below the window that
    // does not end the job touches nothing the follower writes (the follower holds back the events of a
    // backfilling subscription, and a reorganisation never reaches below its window), and holding the
    // lock through the batch's writes and commit made a live block arriving meanwhile wait for all of it
    // (every batch of a backfill that matches often).
    const handsOver = job.kind === 'backfill' && batch.through >= job.toHeight;
    let chainLocked = false;
    const lockedCursor = async () => {
      await lockChain(tx, chain);
      chainLocked = true;
      return await getCursor(tx, chain);
    };
    const seen = await getCursor(tx, chain);
    const meetsWindow = !seen || batch.through >= seen.height - batch.window + 1;
    const cursor = handsOver || meetsWindow ? await lockedCursor() : seen;
    if (!cursor || batch.through > cursor.height) return { kind: 'unsettled' as const };
    const windowLow = cursor.height - batch.window + 1;
    const recent = batch.blocks.filter((b) => b.height >= windowLow);
    if (recent.length > 0) {
      const ours = new Map((await windowBlocks(tx, chain, recent[0]?.height ?? windowLow)).map((b) => [b.height, b.hash]));
      if (recent.some((b) => ours.has(b.height) && ours.get(b.height) !== b.hash)) return { kind: 'unsettled' as const };
    }

    let due: PendingEvent[];
    if (job.kind === 'backfill') {
      await insertPendingEvents(tx, chain, batch.callbacks);
      due = await takeDuePendingEventsOf(tx, chain, job.subscriptionId, Math.min(batch.through, job.toHeight), job.toHeight);
    } else {
      // Events waiting for finality (FINALIZED_DUE_HEIGHT): due when their block is at or below the finalized height the follower recorded.
      const finalized = batch.callbacks.some((c) => c.dueHeight === FINALIZED_DUE_HEIGHT) ? await readFinalizedHeight(tx, chain) : -1;
      due = batch.callbacks.filter((c) => c.dueHeight <= cursor.height || (c.dueHeight === FINALIZED_DUE_HEIGHT && c.blockHeight <= finalized));
    }
    const { queue, requeue } = job.kind === 'replay' ? await splitReplay(tx, job.subscriptionId, due) : { queue: due, requeue: [] };

    // Charge, then act: what the balance covers, in order; the rest is not queued.
    const count = queue.length + requeue.length;
    const per = batch.costPerCallback;
    const affordable = per === 0n || count === 0 ? count : Math.min(count, Number((await creditBalance(tx, job.customerId)) / per));
    const cost = per * BigInt(affordable);
    if (
      cost > 0n &&
      !(await debitCredits(tx, job.customerId, cost, [{ endpoint: job.kind === 'replay' ? 'replays' : 'backfills', requests: 0, credits: cost }])).ok
    )
      throw new Error('credits changed under the batch; retrying');
    const outOfCredits = affordable < count;
    // In the order they fall due: the queue and the resends are taken in that order until the credits end.
    const wanted = new Set([...queue, ...requeue]);
    const paid = new Set(due.filter((c) => wanted.has(c)).slice(0, affordable));
    const toQueue = queue.filter((c) => paid.has(c));
    const toRequeue = requeue.filter((c) => paid.has(c));
    const inserted = await enqueue(tx, chain, toQueue, windowLow);
    const resent = await resend(tx, chain, job.subscriptionId, toRequeue, batch.now);
    const queued = inserted + resent;

    const finished = outOfCredits || batch.through >= job.toHeight;
    if (job.kind === 'backfill' && finished) {
      // A backfill out of credits hands over too: the lock now if its blocks did not need it (the cursor read again under it).
      const handOverCursor = (chainLocked ? cursor : await lockedCursor()) ?? cursor;
      // The backfill's own events not paid for are dropped; live following's (held back, and those due above to_height) go out now.
      if (outOfCredits) await deletePendingEventsOf(tx, chain, job.subscriptionId, job.toHeight);
      await enqueue(tx, chain, await takeDuePendingEventsOf(tx, chain, job.subscriptionId, handOverCursor.height), handOverCursor.height - batch.window + 1);
    }
    const state = outOfCredits ? 'out_of_credits' : finished ? 'done' : 'running';
    await tx.query(
      'block-jobs:advance',
      `UPDATE block_jobs SET processed_height = $2, queued = queued + $3, credits_consumed = credits_consumed + $4, state = $5, updated_at = $6,
         finished_at = CASE WHEN $5 = 'running' THEN NULL ELSE $6::timestamptz END
       WHERE id = $1`,
      [job.id, batch.through, queued, String(cost), state, batch.now],
    );
    return { kind: 'written' as const, queued, finished };
  });
}

/** Queues `events` (new keys only), recording those of the window's blocks so that a reorganisation cancels them if unsent. */
async function enqueue(tx: Queryable, chain: ChainKey, events: PendingEvent[], windowLow: number): Promise<number> {
  if (events.length === 0) return 0;
  const callbacks = events.map(callbackOfEvent);
  const inserted = await enqueueCallbacks(tx, callbacks, new Date(), { chain });
  await recordBlockCallbacks(
    tx,
    chain,
    events
      .filter((e) => e.blockHeight >= windowLow)
      .map((e) => ({ blockHeight: e.blockHeight, subscriptionId: e.subscriptionId, idempotencyKey: e.idempotencyKey })),
  );
  return inserted;
}

/** A replay's due events: keys not in the outbox (to insert), and keys delivered or failed (to send again); the rest left alone. */
async function splitReplay(tx: Queryable, subscriptionId: string, due: PendingEvent[]): Promise<{ queue: PendingEvent[]; requeue: PendingEvent[] }> {
  if (due.length === 0) return { queue: [], requeue: [] };
  const rows = await tx.query<{ idempotency_key: string; status: string }>(
    'block-jobs:replay-known',
    'SELECT idempotency_key, status FROM callbacks WHERE subscription_id = $1 AND idempotency_key = ANY ($2::text[]) FOR UPDATE',
    [subscriptionId, due.map((c) => c.idempotencyKey)],
  );
  const status = new Map(rows.map((r) => [r.idempotency_key, r.status]));
  const seen = new Set<string>();
  const queue: PendingEvent[] = [];
  const requeue: PendingEvent[] = [];
  for (const c of due) {
    if (seen.has(c.idempotencyKey)) continue;
    seen.add(c.idempotencyKey);
    const s = status.get(c.idempotencyKey);
    if (s === undefined) queue.push(c);
    else if (s === 'delivered' || s === 'failed') requeue.push(c);
  }
  return { queue, requeue };
}

/** Puts delivered or failed callbacks back in the queue, due now, as a resend does (same row: body, key and sequence number). */
async function resend(tx: Queryable, chain: ChainKey, subscriptionId: string, events: PendingEvent[], now: Date): Promise<number> {
  if (events.length === 0) return 0;
  // A held chain's confirmed events are sent again on its release, as its new ones (store/chain-holds.ts).
  const rows = await tx.query(
    'block-jobs:resend',
    `UPDATE callbacks SET status = 'pending', next_attempt_at = ${dueOrHeldSql('event_type', '$3::timestamptz', '$4', '$5')}, series_start = attempts,
       finished_at = NULL, outcome = NULL
     WHERE subscription_id = $1 AND idempotency_key = ANY ($2::text[]) AND status IN ('delivered', 'failed') RETURNING id`,
    [subscriptionId, events.map((e) => e.idempotencyKey), now, chain.blockchain, chain.network],
  );
  if (rows.length > 0) await tx.query('callbacks:notify', `SELECT pg_notify('${CALLBACKS_CHANNEL}', '')`);
  return rows.length;
}

/** A batch with no callbacks and no window block need not lock the chain: progress only (a long backfill of quiet blocks). */
export async function advanceQuietBatch(db: Db, job: BlockJob, after: number, through: number, now: Date): Promise<boolean> {
  // Committed without waiting for its WAL to reach the disk (set_config in the statement, for its own
  // implicit transaction only, as a read's charge does: store/customers.ts debitCredits): an advance lost
  // to a crash only makes the job evaluate these blocks again (they matched nothing). A backfill of a quiet
  // range does one a second (ingest/block-jobs.ts), and no live block's transaction queues behind a flush
  // of theirs. One round trip, not four (BEGIN, SET LOCAL, UPDATE, COMMIT).
  const rows = await db.query(
    'block-jobs:advance-quiet',
    `UPDATE block_jobs SET processed_height = $3, updated_at = $4 WHERE id = $1 AND state = 'running' AND processed_height = $2 AND $3 < to_height
     RETURNING id, set_config('synchronous_commit', 'off', true)`,
    [job.id, after, through, now],
  );
  return rows.length > 0;
}
