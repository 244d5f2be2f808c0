/**
 * The callback queue's depth and the age of its oldest due callback, for the queue gauges of /metrics and
 * the console's delivery page (docs/reference/metrics.md, "How exact the queue gauges are").
 *
 * Counting every due callback at each read cost 340-627 ms of PostgreSQL beside 1,000,000 callbacks due for
 * one receiver that is down, in each process scraped, every scrape. A read now costs what a claim's
 * destination list costs (one probe of the claims' index per destination with pending callbacks) plus at
 * most QUEUE_EXACT_PER_DESTINATION index entries per destination:
 *   - the oldest due callback is exact: each destination's first entry in the claims' index
 *     (destination, next_attempt_at) is its oldest;
 *   - a destination with fewer than QUEUE_EXACT_PER_DESTINATION callbacks due is counted exactly;
 *   - a destination with more is counted whole by a recount pass (queue_depth_counts, migration 095) that
 *     runs in one process at a time, set off by a read that finds the last pass older than a minute and
 *     than RECOUNT_COST_RATIO times the last pass's duration: at most about 0.5 % of one PostgreSQL core
 *     whatever the backlog's size. Between passes the destination counts as the larger of the last pass's
 *     figure and the cap.
 */

import { PENDING_DESTINATIONS } from './callbacks.ts';
import type { Db } from './db.ts';

/** A destination with this many callbacks due or more is counted by the recount pass, not by each read. */
export const QUEUE_EXACT_PER_DESTINATION = 1_000;
/** A recount pass runs at most once a minute... */
export const RECOUNT_MIN_INTERVAL_MS = 60_000;
/** ...and at most once per this many times the last pass's duration. */
export const RECOUNT_COST_RATIO = 200;
/** The advisory lock (space, key) that keeps the recount to one process at a time. */
const LOCK_SPACE_QUEUE_RECOUNT = 4;

export interface QueueStats {
  /** Callbacks due now (pending, not dormant, due at or before now): exact below the cap per destination, see above. */
  due: number;
  /** Seconds since the oldest due callback was due, 0 when none is (exact). */
  oldestDueSeconds: number;
}

export interface QueueStatsOptions {
  /** Called when a recount pass this read set off fails (the figures stay those of the last pass). */
  onRecountError?: (error: unknown) => void;
}

const recounts = new WeakMap<Db, Promise<void>>();

/** Inactive subscriptions' callbacks (dormant, migration 084) and chain-held ones (due at 'infinity') are not due. */
export async function queueStats(db: Db, now: Date, options: QueueStatsOptions = {}): Promise<QueueStats> {
  const [row] = await db.query<{ oldest: Date | null; due: string; capped: string[]; recount: boolean }>(
    'callbacks:queue-stats',
    // The destinations with pending callbacks by a skip scan of the claims' index, as a claim lists them
    // (store/callbacks.ts, claimDue), each with its oldest; then its due callbacks, up to the cap, by a
    // range of the same index.
    `WITH RECURSIVE ${PENDING_DESTINATIONS},
     due AS (
       SELECT d.destination, d.first_due, k.n FROM dests d CROSS JOIN LATERAL (
         SELECT count(*)::int AS n FROM (
           SELECT FROM callbacks c WHERE c.destination = d.destination AND c.status = 'pending' AND NOT c.dormant AND c.next_attempt_at <= $1
           LIMIT $2) x) k
       WHERE d.first_due <= $1),
     last AS (SELECT counted_at, pass_ms FROM queue_depth_counts ORDER BY counted_at DESC LIMIT 1)
     SELECT min(d.first_due) AS oldest,
       coalesce(sum(CASE WHEN d.n < $2 THEN d.n ELSE greatest(d.n, q.due) END), 0)::bigint AS due,
       coalesce(array_agg(d.destination) FILTER (WHERE d.n >= $2), '{}') AS capped,
       NOT EXISTS (SELECT FROM last WHERE last.counted_at > $1::timestamptz - greatest($3::float8, last.pass_ms * $4::float8) * interval '1 millisecond') AS recount
     FROM due d LEFT JOIN queue_depth_counts q ON q.destination = d.destination`,
    [now, QUEUE_EXACT_PER_DESTINATION, RECOUNT_MIN_INTERVAL_MS, RECOUNT_COST_RATIO],
  );
  if (row && row.capped.length > 0 && row.recount && !recounts.has(db)) {
    const pass = recountQueueDepth(db, row.capped, now)
      .then(
        () => undefined,
        (error: unknown) => options.onRecountError?.(error),
      )
      .finally(() => recounts.delete(db));
    recounts.set(db, pass);
  }
  return {
    due: Number(row?.due ?? 0),
    oldestDueSeconds: row?.oldest ? Math.max(0, (now.getTime() - row.oldest.getTime()) / 1000) : 0,
  };
}

/** The recount pass a read set off in this process, if one is running (tests wait for it). */
export function queueRecountRunning(db: Db): Promise<void> | undefined {
  return recounts.get(db);
}

/**
 * Counts the due callbacks of each destination, and replaces the last pass's figures with them. One process
 * at a time (an advisory lock taken without waiting: a process that finds it taken leaves the pass to the
 * holder); the pass is skipped if another process's pass made it not due meanwhile. Returns false when it
 * did not count.
 */
export async function recountQueueDepth(db: Db, destinations: readonly string[], now: Date): Promise<boolean> {
  return await db.transaction('callbacks:queue-recount', async (tx) => {
    const [lock] = await tx.query<{ ok: boolean; due: boolean }>(
      'callbacks:queue-recount-lock',
      `SELECT pg_try_advisory_xact_lock($1, 0) AS ok,
         NOT EXISTS (SELECT FROM (SELECT counted_at, pass_ms FROM queue_depth_counts ORDER BY counted_at DESC LIMIT 1) last
           WHERE last.counted_at > $2::timestamptz - greatest($3::float8, last.pass_ms * $4::float8) * interval '1 millisecond') AS due`,
      [LOCK_SPACE_QUEUE_RECOUNT, now, RECOUNT_MIN_INTERVAL_MS, RECOUNT_COST_RATIO],
    );
    if (!lock?.ok || !lock.due) return false;
    const started = performance.now();
    // One statement for them all, planned at each run: an index-only range of the claims' index per
    // destination once the outbox is vacuumed, a sequential scan when most of it is not yet (there an index
    // scan visits the table row by row in index order: 974-1,086 ms for 1,000,000 against 597-795 ms for the
    // sequential scan, bench/queue-stats.ts on a loaded machine, 2026-12-03).
    const counts = await tx.query<{ destination: string; due: string }>(
      'callbacks:queue-recount-count',
      `SELECT c.destination, count(*) AS due FROM callbacks c
       WHERE c.destination = ANY ($1::text[]) AND c.status = 'pending' AND NOT c.dormant AND c.next_attempt_at <= $2
       GROUP BY c.destination`,
      [destinations, now],
      { planEachTime: true },
    );
    const passMs = Math.ceil(performance.now() - started);
    await tx.query('callbacks:queue-recount-clear', 'DELETE FROM queue_depth_counts');
    await tx.query(
      'callbacks:queue-recount-store',
      `INSERT INTO queue_depth_counts (destination, due, counted_at, pass_ms)
       SELECT d, n, $3, $4 FROM unnest($1::text[], $2::bigint[]) AS x(d, n)`,
      [counts.map((c) => c.destination), counts.map((c) => c.due), now, passMs],
    );
    return true;
  });
}
