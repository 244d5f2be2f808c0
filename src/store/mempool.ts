/**
 * mempool_seen and mempool_status (migration 021): the mempool loop's persisted seen-set (bounded by age
 * and count) and its state for the status endpoint.
 */

import type { ChainKey } from '../domain/chains.ts';
import type { Queryable } from './db.ts';

/** The newest `limit` seen transactions of the chain: id -> first seen (Unix seconds). */
export async function loadSeen(q: Queryable, chain: ChainKey, limit: number): Promise<Map<string, number>> {
  const rows = await q.query<{ transaction_id: string; seen: string }>(
    'mempool:load-seen',
    `SELECT transaction_id, extract(epoch FROM first_seen_at)::bigint AS seen FROM mempool_seen
     WHERE blockchain = $1 AND network = $2 ORDER BY first_seen_at DESC LIMIT $3`,
    [chain.blockchain, chain.network, limit],
  );
  return new Map(rows.map((r) => [r.transaction_id, Number(r.seen)]));
}

/** Records transactions as seen (already recorded ones keep their first time). */
export async function recordSeen(q: Queryable, chain: ChainKey, ids: string[], firstSeen: Date): Promise<void> {
  if (ids.length === 0) return;
  await q.query(
    'mempool:record-seen',
    `INSERT INTO mempool_seen (blockchain, network, transaction_id, first_seen_at)
     SELECT $1, $2, id, $4 FROM unnest($3::text[]) AS id ON CONFLICT DO NOTHING`,
    [chain.blockchain, chain.network, ids, firstSeen],
  );
}

/**
 * Records the conflict keys of newly seen transactions (the first claimer of a key keeps it) and returns
 * the transactions that reuse a key another transaction claimed first: replacements, which fire nothing.
 */
export async function claimConflicts(
  q: Queryable,
  chain: ChainKey,
  conflicts: { transactionId: string; key: string }[],
  firstSeen: Date,
): Promise<Set<string>> {
  if (conflicts.length === 0) return new Set();
  // One statement: earlier claims by other transactions (the replaced ones), then this batch's claims.
  // Within the batch the first listed claimer wins as well.
  const rows = await q.query<{ transaction_id: string }>(
    'mempool:claim-conflicts',
    `WITH input AS (
       SELECT DISTINCT ON (claim) claim, transaction_id FROM unnest($3::text[], $4::text[]) WITH ORDINALITY AS t(claim, transaction_id, n) ORDER BY claim, n
     ), taken AS (
       SELECT i.transaction_id FROM input i JOIN mempool_claims c ON c.blockchain = $1 AND c.network = $2 AND c.claim = i.claim AND c.transaction_id <> i.transaction_id
     ), inserted AS (
       INSERT INTO mempool_claims (blockchain, network, claim, transaction_id, first_seen_at) SELECT $1, $2, claim, transaction_id, $5 FROM input
       ON CONFLICT DO NOTHING
     ), within AS (
       SELECT t.transaction_id FROM unnest($3::text[], $4::text[]) AS t(claim, transaction_id) JOIN input i ON i.claim = t.claim AND i.transaction_id <> t.transaction_id
     )
     SELECT transaction_id FROM taken UNION SELECT transaction_id FROM within`,
    [chain.blockchain, chain.network, conflicts.map((c) => c.key), conflicts.map((c) => c.transactionId), firstSeen],
  );
  return new Set(rows.map((r) => r.transaction_id));
}

/** Deletes the seen transactions first seen before `before`, and all but the newest `keep`. Returns how many went. */
export async function pruneSeen(q: Queryable, chain: ChainKey, before: Date, keep: number): Promise<number> {
  const old = await q.query('mempool:prune-old', 'DELETE FROM mempool_seen WHERE blockchain = $1 AND network = $2 AND first_seen_at < $3 RETURNING 1', [
    chain.blockchain,
    chain.network,
    before,
  ]);
  const over = await q.query(
    'mempool:prune-count',
    `DELETE FROM mempool_seen WHERE blockchain = $1 AND network = $2 AND first_seen_at <= (
       SELECT first_seen_at FROM mempool_seen WHERE blockchain = $1 AND network = $2 ORDER BY first_seen_at DESC OFFSET $3 LIMIT 1)
     RETURNING 1`,
    [chain.blockchain, chain.network, keep],
  );
  await q.query('mempool:prune-claims', 'DELETE FROM mempool_claims WHERE blockchain = $1 AND network = $2 AND first_seen_at < $3', [
    chain.blockchain,
    chain.network,
    before,
  ]);
  return old.length + over.length;
}

export interface MempoolStatusRow {
  blockchain: string;
  network: string;
  method: string;
  state: 'following' | 'failing' | 'idle';
  lastPolledAt: Date | null;
  backlog: number;
  transactionsSeen: number;
  callbacksFired: number;
  error: string | null;
  updatedAt: Date;
}

export async function saveMempoolStatus(q: Queryable, row: MempoolStatusRow): Promise<void> {
  await q.query(
    'mempool:save-status',
    `INSERT INTO mempool_status (blockchain, network, method, state, last_polled_at, backlog, transactions_seen, callbacks_fired, error, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
     ON CONFLICT (blockchain, network) DO UPDATE SET method = EXCLUDED.method, state = EXCLUDED.state, last_polled_at = EXCLUDED.last_polled_at,
       backlog = EXCLUDED.backlog, transactions_seen = EXCLUDED.transactions_seen, callbacks_fired = EXCLUDED.callbacks_fired,
       error = EXCLUDED.error, updated_at = EXCLUDED.updated_at`,
    [row.blockchain, row.network, row.method, row.state, row.lastPolledAt, row.backlog, row.transactionsSeen, row.callbacksFired, row.error, row.updatedAt],
  );
}

export async function listMempoolStatus(q: Queryable): Promise<MempoolStatusRow[]> {
  const rows = await q.query<Record<string, unknown>>(
    'mempool:list-status',
    'SELECT blockchain, network, method, state, last_polled_at, backlog, transactions_seen, callbacks_fired, error, updated_at FROM mempool_status',
  );
  return rows.map((r) => ({
    blockchain: r.blockchain as string,
    network: r.network as string,
    method: r.method as string,
    state: r.state as MempoolStatusRow['state'],
    lastPolledAt: (r.last_polled_at as Date | null) ?? null,
    backlog: Number(r.backlog),
    transactionsSeen: Number(r.transactions_seen),
    callbacksFired: Number(r.callbacks_fired),
    error: (r.error as string | null) ?? null,
    updatedAt: r.updated_at as Date,
  }));
}
