/**
 * mempool_announced and mempool_announced_spends (migration 070): the unconfirmed transactions herald
 * announced and not yet settled, and what they spent (docs/reference/events/address-coins-transaction-unconfirmed-dropped.md).
 * Every function runs inside its caller's transaction: the mempool loop's batch (announce, replaced) or
 * the follower's block (mined, conflicted), so the decision and the DROPPED callback commit together.
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
