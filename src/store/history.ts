/**
 * The operator charts' history, bounded (7 days): chain lag per chain per minute (sampled by the API
 * role), reorganisations (one row each, by the rewind), and delivery attempts per minute by outcome
 * (added by recordOutcomes in store/callbacks.ts); plus the slowest destinations of the last hour, read
 * from the attempts themselves.
 */

import type { ChainKey } from '../domain/chains.ts';
import type { Queryable } from './db.ts';

/** How long the history tables keep a row. */
export const HISTORY_DAYS = 7;

export interface LagSample extends ChainKey {
  lagBlocks: number | null;
  lagSeconds: number | null;
}

/**
 * Records one sample per chain for `minute` (whole minute). The first sample of a minute wins: several
 * API processes sampling at once write one row, and none is ever rewritten.
 */
export async function recordLagSamples(q: Queryable, minute: Date, samples: readonly LagSample[]): Promise<void> {
  if (samples.length === 0) return;
  await q.query(
    'history:lag-samples',
    `INSERT INTO chain_lag_minutes (blockchain, network, minute, lag_blocks, lag_seconds)
     SELECT blockchain, network, $5, lag_blocks, lag_seconds FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[])
       AS s(blockchain, network, lag_blocks, lag_seconds)
     ON CONFLICT DO NOTHING`,
    [samples.map((s) => s.blockchain), samples.map((s) => s.network), samples.map((s) => s.lagBlocks), samples.map((s) => s.lagSeconds), minute],
  );
}

/** The samples of one chain since `since`, oldest first. */
export async function lagHistory(q: Queryable, chain: ChainKey, since: Date) {
  const rows = await q.query<{ minute: Date; lag_blocks: string | null; lag_seconds: string | null }>(
    'history:lag',
    'SELECT minute, lag_blocks, lag_seconds FROM chain_lag_minutes WHERE blockchain = $1 AND network = $2 AND minute >= $3 ORDER BY minute',
    [chain.blockchain, chain.network, since],
  );
  return rows.map((r) => ({
    minute: r.minute,
    lagBlocks: r.lag_blocks === null ? null : Number(r.lag_blocks),
    lagSeconds: r.lag_seconds === null ? null : Number(r.lag_seconds),
  }));
}

/** A reorganisation followed: recorded in the rewind's transaction, so it is counted exactly when it happened. */
export async function recordReorganisation(tx: Queryable, chain: ChainKey, depth: number): Promise<void> {
  await tx.query('history:reorganisation', 'INSERT INTO chain_reorganisations (blockchain, network, at, depth) VALUES ($1, $2, clock_timestamp(), $3)', [
    chain.blockchain,
    chain.network,
    depth,
  ]);
}

/** Reorganisations per chain ('blockchain/network') since `since`. */
export async function reorganisationCounts(q: Queryable, since: Date): Promise<Map<string, number>> {
  const rows = await q.query<{ blockchain: string; network: string; n: number }>(
    'history:reorganisation-counts',
    'SELECT blockchain, network, count(*)::int AS n FROM chain_reorganisations WHERE at >= $1 GROUP BY blockchain, network',
    [since],
  );
  return new Map(rows.map((r) => [`${r.blockchain}/${r.network}`, r.n]));
}

export interface AttemptsMinute {
  minute: Date;
  delivered: number;
  failed: number;
  retried: number;
}

/** Attempts per minute from `from` to `to` (whole minutes), every minute present (0 when none). */
export async function deliveryHistory(q: Queryable, from: Date, to: Date): Promise<AttemptsMinute[]> {
  const rows = await q.query<{ minute: Date; delivered: string; failed: string; retried: string }>(
    'history:delivery',
    `SELECT g.minute,
       coalesce(sum(m.attempts) FILTER (WHERE m.outcome = 'delivered'), 0) AS delivered,
       coalesce(sum(m.attempts) FILTER (WHERE m.outcome = 'failed'), 0) AS failed,
       coalesce(sum(m.attempts) FILTER (WHERE m.outcome = 'retried'), 0) AS retried
     FROM generate_series($1::timestamptz, $2::timestamptz, interval '1 minute') AS g(minute)
     LEFT JOIN delivery_minutes m ON m.minute = g.minute
     GROUP BY g.minute ORDER BY g.minute`,
    [from, to],
  );
  return rows.map((r) => ({ minute: r.minute, delivered: Number(r.delivered), failed: Number(r.failed), retried: Number(r.retried) }));
}

/** The destinations (scheme://host:port) whose attempts since `since` were slowest at the 95th percentile. */
export async function slowestDestinations(q: Queryable, since: Date, limit: number) {
  const rows = await q.query<{ destination: string; attempts: number; failures: number; p50: number; p95: number }>(
    'history:slowest-destinations',
    `SELECT c.destination, count(*)::int AS attempts, count(*) FILTER (WHERE a.error_class IS NOT NULL)::int AS failures,
       percentile_cont(0.5) WITHIN GROUP (ORDER BY a.duration_ms) AS p50, percentile_cont(0.95) WITHIN GROUP (ORDER BY a.duration_ms) AS p95
     FROM callback_attempts a JOIN callbacks c ON c.id = a.callback_id
     WHERE a.started_at >= $1
     GROUP BY c.destination ORDER BY p95 DESC, c.destination LIMIT $2`,
    [since, limit],
  );
  return rows.map((r) => ({ destination: r.destination, attempts: r.attempts, failures: r.failures, p50Ms: r.p50, p95Ms: r.p95 }));
}

/** Deletes the history rows older than `before`; returns how many. */
export async function pruneHistory(q: Queryable, before: Date): Promise<number> {
  const [row] = await q.query<{ n: number }>(
    'history:prune',
    `WITH a AS (DELETE FROM chain_lag_minutes WHERE minute < $1 RETURNING 1),
       b AS (DELETE FROM chain_reorganisations WHERE at < $1 RETURNING 1),
       c AS (DELETE FROM delivery_minutes WHERE minute < $1 RETURNING 1)
     SELECT (SELECT count(*) FROM a) + (SELECT count(*) FROM b) + (SELECT count(*) FROM c) AS n`,
    [before],
  );
  return Number(row?.n ?? 0);
}
