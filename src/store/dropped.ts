/**
 * mempool_announced and mempool_announced_spends (migration 070): the unconfirmed transactions herald
 * announced and not yet settled, and what they spent (docs/reference/events/address-coins-transaction-unconfirmed-dropped.md).
 * Every function runs inside its caller's transaction: the mempool loop's batch (announce, replaced),
 * the follower's block (mined, conflicted) or the eviction check's (evicted, ingest/evicted.ts), so the
 * decision and the DROPPED callback commit together.
 */
import type { ChainKey } from '../domain/chains.ts';
import type { Queryable } from './db.ts';

export interface Announcement {
  transactionId: string;
  subscriptionId: string;
  /** The UNCONFIRMED event type it was announced with. */
  eventType: string;
  /** The UNCONFIRMED callback's data.item (without its safety verdict). */
  item: Record<string, unknown>;
}

/** An open announcement that went away, with the transaction that took its place. */
export interface DroppedAnnouncement extends Announcement {
  byTransactionId: string;
}

/**
 * Records announcements (a transaction announced twice to one subscription keeps its first row) and the
 * claims of their transactions (`claims` may name other transactions: only the announced ones' are kept).
 */
export async function recordAnnounced(
  q: Queryable,
  chain: ChainKey,
  announced: Announcement[],
  claims: { transactionId: string; key: string }[],
  at: Date,
): Promise<void> {
  if (announced.length === 0) return;
  const ids = new Set(announced.map((a) => a.transactionId));
  const kept = claims.filter((c) => ids.has(c.transactionId));
  await q.query(
    'dropped:record-announced',
    `WITH a AS (
       INSERT INTO mempool_announced (blockchain, network, transaction_id, subscription_id, event_type, item, announced_at)
       SELECT $1, $2, t, s::uuid, e, i::jsonb, $6 FROM unnest($3::text[], $4::text[], $5::text[], $7::text[]) AS x(t, s, e, i)
       ON CONFLICT DO NOTHING
     )
     INSERT INTO mempool_announced_spends (blockchain, network, claim, transaction_id)
     SELECT $1, $2, c, t FROM unnest($8::text[], $9::text[]) AS y(c, t) ON CONFLICT DO NOTHING`,
    [
      chain.blockchain,
      chain.network,
      announced.map((a) => a.transactionId),
      announced.map((a) => a.subscriptionId),
      announced.map((a) => a.eventType),
      at,
      announced.map((a) => JSON.stringify(a.item)),
      kept.map((c) => c.key),
      kept.map((c) => c.transactionId),
    ],
  );
}

/**
 * Closes the open announcements of other transactions that share a claim with `claims` (transactions
 * taking their outpoint or nonce) and returns them, each with the first such transaction. Transactions of
 * `except` (mined ones, in a block) are closed without being returned.
 *
 * The open announcements are few and a block's claims are thousands: they are read (one statement) and
 * matched here, and only what closes is deleted (a second statement, when anything does). Joined in SQL,
 * a generic plan (the statement prepared, after five runs) compared every claim with every open one.
 */
async function takeClaimed(
  q: Queryable,
  name: string,
  chain: ChainKey,
  claims: { transactionId: string; key: string }[],
  except: readonly string[],
): Promise<DroppedAnnouncement[]> {
  if (claims.length === 0 && except.length === 0) return [];
  const open = await q.query<{ transaction_id: string; claim: string | null }>(
    `${name}:open`,
    `SELECT transaction_id, NULL AS claim FROM mempool_announced WHERE blockchain = $1 AND network = $2
     UNION ALL
     SELECT transaction_id, claim FROM mempool_announced_spends WHERE blockchain = $1 AND network = $2`,
    [chain.blockchain, chain.network],
  );
  if (open.length === 0) return [];
  const announced = new Set<string>();
  const owners = new Map<string, string[]>();
  for (const row of open) {
    if (row.claim === null) announced.add(row.transaction_id);
    else owners.set(row.claim, [...(owners.get(row.claim) ?? []), row.transaction_id]);
  }
  const mined = new Set(except);
  const closing = new Set<string>();
  for (const id of mined) if (announced.has(id)) closing.add(id);
  const takenBy = new Map<string, string>();
  for (const claim of claims) {
    for (const owner of owners.get(claim.key) ?? []) {
      if (owner === claim.transactionId || mined.has(owner) || takenBy.has(owner)) continue;
      takenBy.set(owner, claim.transactionId);
      closing.add(owner);
    }
  }
  if (closing.size === 0) return [];
  const rows = await q.query<{ transaction_id: string; subscription_id: string; event_type: string; item: Record<string, unknown> }>(
    `${name}:close`,
    `WITH gone_spends AS (
       DELETE FROM mempool_announced_spends WHERE blockchain = $1 AND network = $2 AND transaction_id = ANY ($3::text[])
     )
     DELETE FROM mempool_announced WHERE blockchain = $1 AND network = $2 AND transaction_id = ANY ($3::text[])
     RETURNING transaction_id, subscription_id::text, event_type, item`,
    [chain.blockchain, chain.network, [...closing]],
  );
  return rows
    .filter((r) => takenBy.has(r.transaction_id))
    .sort((a, b) => (a.transaction_id + a.subscription_id < b.transaction_id + b.subscription_id ? -1 : 1))
    .map((r) => ({
      transactionId: r.transaction_id,
      subscriptionId: r.subscription_id,
      eventType: r.event_type,
      item: r.item,
      byTransactionId: takenBy.get(r.transaction_id) as string,
    }));
}

/** The mempool side: open announcements that the batch's transactions replace (RBF: an outpoint; EVM: sender and nonce), closed. */
export function takeReplaced(q: Queryable, chain: ChainKey, claims: { transactionId: string; key: string }[]): Promise<DroppedAnnouncement[]> {
  return takeClaimed(q, 'dropped:take-replaced', chain, claims, []);
}

/**
 * The block side: closes the announcements of the block's transactions (mined: never dropped) and returns,
 * closed, those whose outpoints the block's transactions spend (conflicted).
 */
export function takeSettledByBlock(
  q: Queryable,
  chain: ChainKey,
  transactionIds: readonly string[],
  spends: { transactionId: string; key: string }[],
): Promise<DroppedAnnouncement[]> {
  return takeClaimed(q, 'dropped:take-block', chain, spends, transactionIds);
}

/** Deletes announcements (and their claims) made before `before`: the mempool loop's maximum age. */
export async function pruneAnnounced(q: Queryable, chain: ChainKey, before: Date): Promise<void> {
  await q.query(
    'dropped:prune',
    `WITH old AS (
       DELETE FROM mempool_announced WHERE blockchain = $1 AND network = $2 AND announced_at < $3 RETURNING transaction_id
     )
     DELETE FROM mempool_announced_spends s WHERE s.blockchain = $1 AND s.network = $2
       AND s.transaction_id IN (SELECT transaction_id FROM old)
       AND NOT EXISTS (SELECT 1 FROM mempool_announced a WHERE a.blockchain = $1 AND a.network = $2 AND a.transaction_id = s.transaction_id AND a.announced_at >= $3)`,
    [chain.blockchain, chain.network, before],
  );
}

/** An open announced transaction, as an eviction check reads it: what it spent (outpoints; EVM: `sender:nonce`). */
export interface OpenAnnounced {
  transactionId: string;
  claims: string[];
  /** Its place in the order openAnnounced lists (its first announcement's time, exact, and its id): where a next list may start. */
  position: AnnouncedPosition;
}

export interface AnnouncedPosition {
  announcedAt: string;
  transactionId: string;
}

/**
 * The chain's open announced transactions with their claims, at most `limit`, oldest announcement first,
 * after `after` when given (the eviction checks of docs/concepts/deposit-safety.md#evicted go through them
 * a list at a time). The claims are read per transaction through the spends' index on transaction_id,
 * whatever the plan thinks of the tables' sizes (a join planned on stale statistics read every spend of
 * the chain for each transaction: 25 million rows, 6 s, for 5,000 of them).
 */
export async function openAnnounced(q: Queryable, chain: ChainKey, limit: number, after?: AnnouncedPosition): Promise<OpenAnnounced[]> {
  const rows = await q.query<{ transaction_id: string; claims: string[]; at: string }>(
    'dropped:open-announced',
    `WITH a AS (
       SELECT transaction_id, min(announced_at) AS at FROM mempool_announced WHERE blockchain = $1 AND network = $2
       GROUP BY transaction_id
       HAVING $4::timestamptz IS NULL OR (min(announced_at), transaction_id) > ($4::timestamptz, $5::text)
       ORDER BY at, transaction_id LIMIT $3
     )
     SELECT a.transaction_id, a.at::text AS at,
       coalesce((SELECT array_agg(s.claim ORDER BY s.claim) FROM mempool_announced_spends s
                 WHERE s.blockchain = $1 AND s.network = $2 AND s.transaction_id = a.transaction_id), '{}') AS claims
     FROM a ORDER BY a.at, a.transaction_id`,
    [chain.blockchain, chain.network, limit, after?.announcedAt ?? null, after?.transactionId ?? null],
  );
  return rows.map((r) => ({ transactionId: r.transaction_id, claims: r.claims, position: { announcedAt: r.at, transactionId: r.transaction_id } }));
}

/**
 * Records one eviction check of `checked`: those of `missing` (in no mempool of the node) count one more
 * consecutive check (the first one's time kept), the others start again at 0. Returns, of `missing`, those
 * now missing at `minChecks` consecutive checks or more that span `spanMs` or more (the first at or before
 * `at - spanMs`): the candidates, whose proof that they are not mined the caller asks the node for.
 */
export async function recordMissingCheck(
  q: Queryable,
  chain: ChainKey,
  checked: readonly string[],
  missing: readonly string[],
  at: Date,
  minChecks: number,
  spanMs: number,
): Promise<string[]> {
  if (checked.length === 0) return [];
  const rows = await q.query<{ transaction_id: string; missing_checks: number; missing_since: Date | null }>(
    'dropped:missing-check',
    `UPDATE mempool_announced SET
       missing_checks = CASE WHEN transaction_id = ANY ($4::text[]) THEN missing_checks + 1 ELSE 0 END,
       missing_since = CASE WHEN transaction_id = ANY ($4::text[]) THEN coalesce(missing_since, $5) ELSE NULL END
     WHERE blockchain = $1 AND network = $2 AND transaction_id = ANY ($3::text[])
     RETURNING transaction_id, missing_checks, missing_since`,
    [chain.blockchain, chain.network, checked, missing, at],
  );
  const due = new Set<string>();
  const latest = at.getTime() - spanMs;
  for (const r of rows) if (r.missing_checks >= minChecks && r.missing_since !== null && r.missing_since.getTime() <= latest) due.add(r.transaction_id);
  return [...due].sort();
}

/**
 * Closes the open announcements of `transactionIds` still missing at `minChecks` consecutive checks or
 * more (an announcement the follower closed meanwhile, or one seen again in the mempool, is left alone)
 * and returns them: the caller queues their DROPPED callbacks, reason `evicted`, in the same transaction.
 */
export async function takeEvicted(q: Queryable, chain: ChainKey, transactionIds: readonly string[], minChecks: number): Promise<DroppedAnnouncement[]> {
  if (transactionIds.length === 0) return [];
  const rows = await q.query<{ transaction_id: string; subscription_id: string; event_type: string; item: Record<string, unknown> }>(
    'dropped:take-evicted',
    `WITH gone AS (
       DELETE FROM mempool_announced WHERE blockchain = $1 AND network = $2 AND transaction_id = ANY ($3::text[]) AND missing_checks >= $4
       RETURNING transaction_id, subscription_id, event_type, item
     ), gone_spends AS (
       DELETE FROM mempool_announced_spends s WHERE s.blockchain = $1 AND s.network = $2 AND s.transaction_id IN (SELECT transaction_id FROM gone)
         AND NOT EXISTS (SELECT 1 FROM mempool_announced a WHERE a.blockchain = $1 AND a.network = $2 AND a.transaction_id = s.transaction_id AND a.missing_checks < $4)
     )
     SELECT transaction_id, subscription_id::text, event_type, item FROM gone ORDER BY transaction_id, subscription_id`,
    [chain.blockchain, chain.network, transactionIds, minChecks],
  );
  return rows.map((r) => ({ transactionId: r.transaction_id, subscriptionId: r.subscription_id, eventType: r.event_type, item: r.item, byTransactionId: '' }));
}
