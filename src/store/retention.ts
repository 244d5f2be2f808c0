/**
 * Retention of the callback log: finished callbacks (delivered, failed, cancelled) older than their
 * status's window are deleted with their attempts, a small batch per statement (one short transaction),
 * oldest first. Pending callbacks are never touched.
 *
 * A finished callback is kept, whatever its age, while:
 * - it is still recorded under a block of a chain's window (chain_block_callbacks): a reorganisation
 *   that returns to that block revives the callbacks it cancelled, and the outbox's idempotency (one
 *   callback per subscription and key) is what keeps a delivered one from being sent again when the
 *   block is applied anew;
 * - it belongs to an existing TRANSACTION_MINED or BLOCK_HEIGHT_REACHED subscription: the already-mined
 *   check (src/ingest/already-mined.ts) calls back every such subscription that has no callback, so
 *   deleting its callback would send it again. A deleted subscription's are pruned as any other.
 */
import { type Db, DbError, type Queryable } from './db.ts';

export const FINISHED_STATUSES = ['delivered', 'failed', 'cancelled'] as const;
export type FinishedStatus = (typeof FINISHED_STATUSES)[number];

/** What no batch may delete, whatever its age (see above). */
const PRUNABLE = `c.status = $1 AND c.finished_at < $2
  AND NOT EXISTS (SELECT 1 FROM chain_block_callbacks b WHERE b.subscription_id = c.subscription_id AND b.idempotency_key = c.idempotency_key)
  AND (c.event_type NOT IN ('TRANSACTION_MINED', 'BLOCK_HEIGHT_REACHED') OR NOT EXISTS (SELECT 1 FROM subscriptions s WHERE s.id = c.subscription_id))`;

export interface PrunedBatch {
  callbacks: number;
  attempts: number;
  /** Prunable callbacks the batch found (at most `limit`): fewer means nothing older is left. */
  found: number;
  /** finished_at of the newest callback found: the next batch starts there. */
  lastFinishedAt: Date | null;
  /** A row another transaction held made the batch give up waiting and run again, skipping held rows. */
  skippedHeld: boolean;
}

interface BatchOptions {
  status: FinishedStatus;
  before: Date;
  limit: number;
  from?: Date | null;
  /** The longest wait for a held callback before the batch runs again skipping held rows (default BATCH_LOCK_TIMEOUT_MS). */
  lockWaitMs?: number;
}

/**
 * How long a batch waits for a row another transaction holds before it gives up and runs again as a
 * batch that skips held rows. Far shorter than deadlock_timeout (1 s by default): a transaction that
 * waits for a row the batch has already deleted while the batch waits for one of its rows finds the
 * batch gone (rolled back, its locks released) before a deadlock check would roll back either side.
 */
export const BATCH_LOCK_TIMEOUT_MS = 50;

/**
 * Deletes up to `limit` prunable callbacks of `status` finished before `before` (and at or after `from`,
 * where the previous batch stopped), with their attempts, in one statement.
 *
 * The batch deletes the rows it found without locking them first: a row lock (FOR UPDATE) is a second
 * write of each row and a second WAL record, about a third of the batch's CPU (measured: 7.0 against
 * 8.5-12 µs per callback with its attempt). The delete re-checks status and finished_at on the row as it
 * is when it gets it, so a callback resent or revived meanwhile is left alone. A row another transaction
 * holds (a resend, a recovery, rare on callbacks this old) makes the delete wait, for at most
 * BATCH_LOCK_TIMEOUT_MS: then the batch is rolled back and runs again the old way, locking its rows with
 * FOR UPDATE SKIP LOCKED, which never waits. Delivery's workers never hold these rows (they claim pending
 * callbacks only).
 *
 * The transaction commits without waiting for its WAL to reach the disk (synchronous_commit off, for it
 * alone): a batch lost to a crash right after its commit is deleted again by the next pass, and the
 * pruner no longer sits in a WAL flush after every batch. (Delivery's and the API's commits still wait
 * for theirs, which now also carry the pruner's WAL written before them.)
 */
export async function pruneFinishedBatch(db: Db, options: BatchOptions): Promise<PrunedBatch> {
  try {
    return await runBatch(db, options, 'wait-briefly');
  } catch (error) {
    if (!(error instanceof DbError && error.sqlstate === LOCK_NOT_AVAILABLE)) throw error;
    return { ...(await runBatch(db, options, 'skip-locked')), skippedHeld: true };
  }
}

const LOCK_NOT_AVAILABLE = '55P03';

async function runBatch(db: Db, options: BatchOptions, mode: 'wait-briefly' | 'skip-locked'): Promise<PrunedBatch> {
  return await db.transaction('retention:prune', async (tx) => {
    await tx.query('retention:async-commit', 'SET LOCAL synchronous_commit = off');
    // The counters' trigger lifts this limit for its own statements (migration 027): only the wait for
    // a callback is cut short.
    const waitMs = Math.max(1, Math.round(options.lockWaitMs ?? BATCH_LOCK_TIMEOUT_MS));
    if (mode === 'wait-briefly') await tx.query('retention:lock-timeout', `SET LOCAL lock_timeout = ${waitMs}`);
    return await deleteBatch(tx, options, mode);
  });
}

/** Found by the index callbacks_finished, oldest first; deleted by ctid (no second index probe per row). */
const FIND = `SELECT c.ctid, c.finished_at FROM callbacks c
  WHERE ${PRUNABLE} AND c.finished_at >= $4
  ORDER BY c.finished_at LIMIT $3`;

/** The attempts of the callbacks deleted, by one index scan over their ids; then the figures. */
const ATTEMPTS_AND_FIGURES = `attempts AS (DELETE FROM callback_attempts a WHERE a.callback_id = ANY (ARRAY(SELECT id FROM gone)) RETURNING 1)
  SELECT (SELECT count(*) FROM gone)::int AS callbacks, (SELECT count(*) FROM attempts)::int AS attempts,
    (SELECT count(*) FROM found)::int AS found, (SELECT max(finished_at) FROM found) AS last`;

const BATCH_SQL = {
  // The status and age are checked again on each row as the delete gets it (a row changed since the
  // statement began is re-read): one changed meanwhile is no longer deleted.
  'wait-briefly': `WITH found AS (${FIND}),
    gone AS (DELETE FROM callbacks c WHERE c.ctid = ANY (ARRAY(SELECT ctid FROM found)) AND c.status = $1 AND c.finished_at < $2 RETURNING c.id),
    ${ATTEMPTS_AND_FIGURES}`,
  // The rows are locked first, those another transaction holds skipped: locked, the ctids still name them.
  'skip-locked': `WITH found AS (${FIND} FOR UPDATE OF c SKIP LOCKED),
    gone AS (DELETE FROM callbacks c WHERE c.ctid = ANY (ARRAY(SELECT ctid FROM found)) RETURNING c.id),
    ${ATTEMPTS_AND_FIGURES}`,
};

async function deleteBatch(tx: Queryable, options: BatchOptions, mode: 'wait-briefly' | 'skip-locked'): Promise<PrunedBatch> {
  const [row] = await tx.query<{ callbacks: number; attempts: number; found: number; last: Date | null }>(`retention:prune-batch-${mode}`, BATCH_SQL[mode], [
    options.status,
    options.before,
    options.limit,
    options.from ?? '-infinity',
  ]);
  return { callbacks: row?.callbacks ?? 0, attempts: row?.attempts ?? 0, found: row?.found ?? 0, lastFinishedAt: row?.last ?? null, skippedHeld: false };
}

/** How many callbacks (and their attempts) pruning `status` before `before` would delete now. */
export async function countPrunable(db: Db, status: FinishedStatus, before: Date): Promise<{ callbacks: number; attempts: number }> {
  const [row] = await db.query<{ callbacks: number; attempts: number }>(
    'retention:count',
    `SELECT count(*)::int AS callbacks, coalesce(sum((SELECT count(*) FROM callback_attempts a WHERE a.callback_id = c.id)), 0)::int AS attempts
     FROM callbacks c WHERE ${PRUNABLE}`,
    [status, before],
  );
  return { callbacks: row?.callbacks ?? 0, attempts: row?.attempts ?? 0 };
}
