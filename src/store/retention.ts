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
import type { Db, Queryable } from './db.ts';

export const FINISHED_STATUSES = ['delivered', 'failed', 'cancelled'] as const;
export type FinishedStatus = (typeof FINISHED_STATUSES)[number];

/** What no batch may delete, whatever its age (see above). */
const PRUNABLE = `c.status = $1 AND c.finished_at < $2
  AND NOT EXISTS (SELECT 1 FROM chain_block_callbacks b WHERE b.subscription_id = c.subscription_id AND b.idempotency_key = c.idempotency_key)
  AND (c.event_type NOT IN ('TRANSACTION_MINED', 'BLOCK_HEIGHT_REACHED') OR NOT EXISTS (SELECT 1 FROM subscriptions s WHERE s.id = c.subscription_id))`;

export interface PrunedBatch {
  callbacks: number;
  attempts: number;
  /** finished_at of the newest callback deleted: the next batch starts there. */
  lastFinishedAt: Date | null;
}

/**
 * Deletes up to `limit` prunable callbacks of `status` finished before `before` (and at or after `from`,
 * where the previous batch stopped), with their attempts, in one statement. Rows another transaction
 * holds (a resend, a worker recording an outcome) are skipped, not waited for.
 *
 * The transaction commits without waiting for its WAL to reach the disk (synchronous_commit off, for it
 * alone): a batch lost to a crash right after its commit is deleted again by the next pass, and the
 * pruner no longer sits in a WAL flush after every batch. (Delivery's and the API's commits still wait
 * for theirs, which now also carry the pruner's WAL written before them.)
 */
export async function pruneFinishedBatch(db: Db, options: { status: FinishedStatus; before: Date; limit: number; from?: Date | null }): Promise<PrunedBatch> {
  return await db.transaction('retention:prune', async (tx) => {
    await tx.query('retention:async-commit', 'SET LOCAL synchronous_commit = off');
    return await deleteBatch(tx, options);
  });
}

async function deleteBatch(tx: Queryable, options: { status: FinishedStatus; before: Date; limit: number; from?: Date | null }): Promise<PrunedBatch> {
  const [row] = await tx.query<{ callbacks: number; attempts: number; last: Date | null }>(
    'retention:prune-batch',
    `WITH doomed AS (
       SELECT c.ctid, c.id FROM callbacks c
       WHERE ${PRUNABLE} AND c.finished_at >= $4
       ORDER BY c.finished_at LIMIT $3 FOR UPDATE OF c SKIP LOCKED),
     attempts AS (DELETE FROM callback_attempts a USING doomed d WHERE a.callback_id = d.id RETURNING 1),
     -- By ctid: the rows are locked, so it still names them, and no second index probe per row is needed.
     gone AS (DELETE FROM callbacks c USING doomed d WHERE c.ctid = d.ctid RETURNING c.finished_at)
     SELECT (SELECT count(*) FROM gone)::int AS callbacks, (SELECT count(*) FROM attempts)::int AS attempts,
       (SELECT max(finished_at) FROM gone) AS last`,
    [options.status, options.before, options.limit, options.from ?? '-infinity'],
  );
  return { callbacks: row?.callbacks ?? 0, attempts: row?.attempts ?? 0, lastFinishedAt: row?.last ?? null };
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
