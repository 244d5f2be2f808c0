/**
 * Chain-following state: the cursor of each (blockchain, network), the window of recent canonical
 * blocks, confirmed events waiting for confirmations, and the callbacks enqueued per block. Every
 * function that changes state is meant to run inside the follower's one transaction per block.
 *
 * Invariants kept by the follower (src/ingest/follower.ts):
 * - every block in the window links to its predecessor by parentHash, the highest is the cursor's;
 * - every pending event's block is in the canonical chain (a reorganisation deletes the orphaned ones).
 */
import type { BlockRef } from '../domain/blocks.ts';
import type { ChainKey, EventType } from '../domain/chains.ts';
import type { ConfirmationPolicy } from '../domain/confirmations.ts';
import type { BlockCallback, CallbackTargetRow, PendingEvent } from '../domain/events.ts';
import type { IndexableSubscription, SubscribedWalletKey } from '../domain/subscriptions.ts';
import { dueOrHeldSql } from './callbacks.ts';
import type { BreakerTrip } from './chain-holds.ts';
import type { Queryable } from './db.ts';
import { markRetracted, REINSTATED_CTE } from './event-stream.ts';

export interface ChainCursor {
  height: number;
  hash: string;
  state: 'following' | 'stopped';
  stopReason: string | null;
}

export interface WindowBlock {
  height: number;
  hash: string;
  parentHash: string;
  timestamp: number;
}

/** Advisory lock key space (first int4 of the two-int4 form; subscriptions.ts uses 1 and 2). */
export const LOCK_SPACE_CHAIN_FOLLOWER = 3;

/**
 * Serialises, until the transaction ends, every change of one chain's following state: two followers
 * of one chain (two processes during a takeover) apply blocks one after the other, and the second one
 * sees the cursor the first advanced.
 */
export async function lockChain(tx: Queryable, chain: ChainKey): Promise<void> {
  await tx.query('chain:lock', 'SELECT pg_advisory_xact_lock($1, hashtext($2))', [LOCK_SPACE_CHAIN_FOLLOWER, `${chain.blockchain}/${chain.network}`]);
}

/** lockChain's statement with its arguments as literals, to go with BEGIN in one round trip (Db.transaction's prelude). */
export function lockChainStatement(chain: ChainKey): string {
  const key = `${chain.blockchain}/${chain.network}`.replaceAll("'", "''");
  return `SELECT pg_advisory_xact_lock(${LOCK_SPACE_CHAIN_FOLLOWER}, hashtext('${key}'))`;
}

export async function getCursor(q: Queryable, chain: ChainKey): Promise<ChainCursor | undefined> {
  const [row] = await q.query<{ height: string; hash: string; state: 'following' | 'stopped'; stop_reason: string | null }>(
    'chain:get-cursor',
    'SELECT height, hash, state, stop_reason FROM chain_cursors WHERE blockchain = $1 AND network = $2',
    [chain.blockchain, chain.network],
  );
  return row ? { height: Number(row.height), hash: row.hash, state: row.state, stopReason: row.stop_reason } : undefined;
}

/**
 * Moves the cursor to `block` (insert or update); the chain is following. `nodeHead`: the node's head
 * seen in the same step, for the status endpoint (kept as it was when not given).
 */
export async function saveCursor(tx: Queryable, chain: ChainKey, block: Pick<BlockRef, 'height' | 'hash' | 'timestamp'>, nodeHead?: number): Promise<void> {
  await tx.query(
    'chain:save-cursor',
    `INSERT INTO chain_cursors AS c (blockchain, network, height, hash, state, block_timestamp, node_head, node_head_seen_at)
     VALUES ($1, $2, $3, $4, 'following', $5, $6, CASE WHEN $6::bigint IS NULL THEN NULL ELSE clock_timestamp() END)
     ON CONFLICT (blockchain, network) DO UPDATE SET height = EXCLUDED.height, hash = EXCLUDED.hash, updated_at = clock_timestamp(),
       state = 'following', stop_reason = NULL, block_timestamp = EXCLUDED.block_timestamp,
       node_head = coalesce(EXCLUDED.node_head, c.node_head), node_head_seen_at = coalesce(EXCLUDED.node_head_seen_at, c.node_head_seen_at)`,
    [chain.blockchain, chain.network, block.height, block.hash, block.timestamp, nodeHead ?? null],
  );
}

/** What the node said its head was, for the status endpoint (no-op before the chain has a cursor). */
export async function saveNodeHead(q: Queryable, chain: ChainKey, head: number): Promise<void> {
  await q.query(
    'chain:save-node-head',
    'UPDATE chain_cursors SET node_head = $3, node_head_seen_at = clock_timestamp() WHERE blockchain = $1 AND network = $2',
    [chain.blockchain, chain.network, head],
  );
}

export interface ChainStatusRow extends ChainKey {
  height: number;
  hash: string;
  state: 'following' | 'stopped';
  stopReason: string | null;
  nodeHead: number | null;
  nodeHeadSeenAt: Date | null;
  blockTimestamp: number | null;
  updatedAt: Date;
  /** The deep-reorganisation breaker's hold (store/chain-holds.ts), when the chain is held. */
  hold: { heldAt: Date; reason: 'reorganisation' | 'disagreement'; depth: number; breakerDepth: number; trips: BreakerTrip[] } | null;
}

/** Every chain that has been followed on this database, with its hold if it is held. */
export async function listChainStatus(q: Queryable): Promise<ChainStatusRow[]> {
  const rows = await q.query<{
    blockchain: ChainKey['blockchain'];
    network: ChainKey['network'];
    height: string;
    hash: string;
    state: 'following' | 'stopped';
    stop_reason: string | null;
    node_head: string | null;
    node_head_seen_at: Date | null;
    block_timestamp: string | null;
    updated_at: Date;
    held_at: Date | null;
    reason: 'reorganisation' | 'disagreement' | null;
    depth: number | null;
    breaker_depth: number | null;
    trips: BreakerTrip[] | null;
  }>(
    'chain:status',
    `SELECT c.blockchain, c.network, c.height, c.hash, c.state, c.stop_reason, c.node_head, c.node_head_seen_at, c.block_timestamp, c.updated_at,
       h.held_at, h.reason, h.depth, h.breaker_depth, h.trips
     FROM chain_cursors c LEFT JOIN chain_holds h ON h.blockchain = c.blockchain AND h.network = c.network
     ORDER BY c.blockchain, c.network`,
  );
  return rows.map((r) => ({
    blockchain: r.blockchain,
    network: r.network,
    height: Number(r.height),
    hash: r.hash,
    state: r.state,
    stopReason: r.stop_reason,
    nodeHead: r.node_head === null ? null : Number(r.node_head),
    nodeHeadSeenAt: r.node_head_seen_at,
    blockTimestamp: r.block_timestamp === null ? null : Number(r.block_timestamp),
    updatedAt: r.updated_at,
    hold:
      r.held_at === null
        ? null
        : { heldAt: r.held_at, reason: r.reason ?? 'reorganisation', depth: r.depth ?? 0, breakerDepth: r.breaker_depth ?? 0, trips: r.trips ?? [] },
  }));
}

/** Deletes the chain's cursor (after rewindAbove(-1) forgot its window): following starts afresh. */
export async function resetCursor(tx: Queryable, chain: ChainKey): Promise<void> {
  await tx.query('chain:reset-cursor', 'DELETE FROM chain_cursors WHERE blockchain = $1 AND network = $2', [chain.blockchain, chain.network]);
}

/** Marks the chain stopped with `reason`, keeping its cursor where it is. */
export async function stopChain(tx: Queryable, chain: ChainKey, reason: string): Promise<void> {
  await tx.query(
    'chain:stop',
    `UPDATE chain_cursors SET state = 'stopped', stop_reason = $3, updated_at = clock_timestamp() WHERE blockchain = $1 AND network = $2`,
    [chain.blockchain, chain.network, reason],
  );
}

/** The window's blocks at heights >= `fromHeight`, highest first. */
export async function windowBlocks(q: Queryable, chain: ChainKey, fromHeight: number): Promise<WindowBlock[]> {
  const rows = await q.query<{ height: string; hash: string; parent_hash: string; timestamp: string }>(
    'chain:window',
    'SELECT height, hash, parent_hash, timestamp FROM chain_blocks WHERE blockchain = $1 AND network = $2 AND height >= $3 ORDER BY height DESC',
    [chain.blockchain, chain.network, fromHeight],
  );
  return rows.map((r) => ({ height: Number(r.height), hash: r.hash, parentHash: r.parent_hash, timestamp: Number(r.timestamp) }));
}

/** The window's block at `height`, if the window holds that height. */
export async function windowBlockAt(q: Queryable, chain: ChainKey, height: number): Promise<WindowBlock | undefined> {
  const [r] = await q.query<{ height: string; hash: string; parent_hash: string; timestamp: string }>(
    'chain:window-block-at',
    'SELECT height, hash, parent_hash, timestamp FROM chain_blocks WHERE blockchain = $1 AND network = $2 AND height = $3',
    [chain.blockchain, chain.network, height],
  );
  return r ? { height: Number(r.height), hash: r.hash, parentHash: r.parent_hash, timestamp: Number(r.timestamp) } : undefined;
}

/** Callback targets of the subscriptions `ids` (those that still exist). */
export async function loadCallbackTargets(q: Queryable, ids: string[]): Promise<Map<string, CallbackTargetRow>> {
  const targets = new Map<string, CallbackTargetRow>();
  if (ids.length === 0) return targets;
  const rows = await q.query<{
    id: string;
    customer_id: string;
    event_type: EventType;
    callback_url: string;
    api_version: string;
    is_active: boolean;
    subscribed_as: string | null;
  }>(
    'chain:callback-targets',
    `SELECT id, customer_id, event_type, callback_url, api_version, is_active, coalesce(address, transaction_id) AS subscribed_as
     FROM subscriptions WHERE id = ANY ($1::uuid[])`,
    [ids],
  );
  for (const r of rows) {
    targets.set(r.id, {
      id: r.id,
      customerId: r.customer_id,
      eventType: r.event_type,
      callbackUrl: r.callback_url,
      apiVersion: r.api_version,
      isActive: r.is_active,
      subscribedAs: r.subscribed_as,
    });
  }
  return targets;
}

export async function insertPendingEvents(tx: Queryable, chain: ChainKey, events: PendingEvent[]): Promise<void> {
  if (events.length === 0) return;
  await tx.query(
    'chain:insert-pending',
    `INSERT INTO pending_events (blockchain, network, subscription_id, customer_id, block_height, block_hash, due_height, idempotency_key,
       body, callback_url, event_type, position)
     SELECT $1, $2, * FROM unnest($3::uuid[], $4::bigint[], $5::bigint[], $6::text[], $7::bigint[], $8::text[], $9::text[], $10::text[], $11::text[])
       WITH ORDINALITY
     ON CONFLICT (subscription_id, idempotency_key) DO NOTHING`,
    [
      chain.blockchain,
      chain.network,
      events.map((e) => e.subscriptionId),
      events.map((e) => e.customerId),
      events.map((e) => e.blockHeight),
      events.map((e) => e.blockHash),
      events.map((e) => e.dueHeight),
      events.map((e) => e.idempotencyKey),
      events.map((e) => e.body),
      events.map((e) => e.callbackUrl),
      events.map((e) => e.eventType),
    ],
  );
}

/**
 * Deletes and returns one subscription's pending events due at `height`, of blocks at or below
 * `maxBlockHeight` when given, in the order live following numbers them: due height, block, match order.
 * (A backfill takes its own events this way, and at its end those the follower held back for it.)
 */
export async function takeDuePendingEventsOf(
  tx: Queryable,
  chain: ChainKey,
  subscriptionId: string,
  height: number,
  maxBlockHeight?: number,
): Promise<PendingEvent[]> {
  const rows = await tx.query<PendingRow>(
    'chain:take-due-pending-of',
    `WITH taken AS (
       DELETE FROM pending_events WHERE subscription_id = $3 AND blockchain = $1 AND network = $2 AND due_height <= $4
         AND ($5::bigint IS NULL OR block_height <= $5)
       RETURNING ${PENDING_COLUMNS})
     SELECT * FROM taken ORDER BY due_height, block_height, position`,
    [chain.blockchain, chain.network, subscriptionId, height, maxBlockHeight ?? null],
  );
  return rows.map(toPendingEvent);
}

/** Deletes one subscription's pending events of blocks at or below `maxBlockHeight` (a backfill stopped for credits). */
export async function deletePendingEventsOf(tx: Queryable, chain: ChainKey, subscriptionId: string, maxBlockHeight: number): Promise<void> {
  await tx.query(
    'chain:delete-pending-of',
    'DELETE FROM pending_events WHERE subscription_id = $3 AND blockchain = $1 AND network = $2 AND block_height <= $4',
    [chain.blockchain, chain.network, subscriptionId, maxBlockHeight],
  );
}

const PENDING_COLUMNS = 'subscription_id, customer_id, block_height, block_hash, due_height, idempotency_key, body, callback_url, event_type, position';

interface PendingRow {
  subscription_id: string;
  customer_id: string;
  block_height: string;
  block_hash: string;
  due_height: string;
  idempotency_key: string;
  body: string;
  callback_url: string;
  event_type: EventType;
}

function toPendingEvent(r: PendingRow): PendingEvent {
  return {
    subscriptionId: r.subscription_id,
    customerId: r.customer_id,
    blockHeight: Number(r.block_height),
    blockHash: r.block_hash,
    dueHeight: Number(r.due_height),
    idempotencyKey: r.idempotency_key,
    body: r.body,
    callbackUrl: r.callback_url,
    eventType: r.event_type,
  };
}

/**
 * Records the follower's freshly enqueued callbacks under their block, and puts back to pending any of
 * them a reorganisation had cancelled: the chain went back to that very block (same hash, same key), so
 * the event is canonical again and its callback must still be sent.
 */
export async function recordBlockCallbacks(tx: Queryable, chain: ChainKey, callbacks: BlockCallback[]): Promise<void> {
  if (callbacks.length === 0) return;
  const params = [
    chain.blockchain,
    chain.network,
    callbacks.map((c) => c.blockHeight),
    callbacks.map((c) => c.subscriptionId),
    callbacks.map((c) => c.idempotencyKey),
  ];
  await tx.query(
    'chain:record-block-callbacks',
    `INSERT INTO chain_block_callbacks (blockchain, network, block_height, subscription_id, idempotency_key)
     SELECT $1, $2, * FROM unnest($3::bigint[], $4::uuid[], $5::text[]) ON CONFLICT DO NOTHING`,
    params,
  );
  await tx.query(
    'chain:revive-reorg-cancelled',
    `WITH revived AS (
       UPDATE callbacks c SET status = CASE WHEN c.callback_url IS NULL THEN 'cancelled' ELSE 'pending' END,
         outcome = CASE WHEN c.callback_url IS NULL THEN 'pull_only' END, finished_at = CASE WHEN c.callback_url IS NULL THEN clock_timestamp() END,
         next_attempt_at = CASE WHEN c.callback_url IS NULL THEN clock_timestamp() ELSE ${dueOrHeldSql('c.event_type', 'clock_timestamp()', '$3', '$4')} END
       FROM unnest($1::uuid[], $2::text[]) AS k (subscription_id, idempotency_key)
       WHERE c.subscription_id = k.subscription_id AND c.idempotency_key = k.idempotency_key
         AND c.status = 'cancelled' AND c.outcome = 'reorganised'
       RETURNING c.id, c.customer_id, c.stream_xid),
     ${REINSTATED_CTE}
     SELECT 1`,
    [params[3], params[4], chain.blockchain, chain.network],
  );
}

/**
 * Forgets every block above `ancestorHeight` (they left the canonical chain): their window rows, their
 * pending events (never to be sent) and, among the callbacks already enqueued for them, those not yet
 * delivered (cancelled with outcome 'reorganised'), pull-only ones too (migration 055: so that the chain
 * coming back to their block revives them as it does the others, with a reinstatement in the stream).
 * Returns what it removed.
 */
export async function rewindAbove(tx: Queryable, chain: ChainKey, ancestorHeight: number): Promise<{ pendingDeleted: number; callbacksCancelled: number }> {
  const params = [chain.blockchain, chain.network, ancestorHeight];
  // The event stream's retractions first: they read the records and blocks deleted below.
  await markRetracted(tx, chain, ancestorHeight);
  const cancelled = await tx.query(
    'chain:cancel-orphaned-callbacks',
    `UPDATE callbacks c SET status = 'cancelled', outcome = 'reorganised', finished_at = clock_timestamp()
     FROM chain_block_callbacks b
     WHERE b.blockchain = $1 AND b.network = $2 AND b.block_height > $3
       AND c.subscription_id = b.subscription_id AND c.idempotency_key = b.idempotency_key
       AND (c.status = 'pending' OR (c.status = 'cancelled' AND c.outcome = 'pull_only'))
     RETURNING c.id`,
    params,
  );
  await tx.query(
    'chain:delete-orphaned-block-callbacks',
    'DELETE FROM chain_block_callbacks WHERE blockchain = $1 AND network = $2 AND block_height > $3',
    params,
  );
  const pending = await tx.query(
    'chain:delete-orphaned-pending',
    'DELETE FROM pending_events WHERE blockchain = $1 AND network = $2 AND block_height > $3 RETURNING idempotency_key',
    params,
  );
  await tx.query('chain:delete-orphaned-blocks', 'DELETE FROM chain_blocks WHERE blockchain = $1 AND network = $2 AND height > $3', params);
  return { pendingDeleted: pending.length, callbacksCancelled: cancelled.length };
}

interface IndexableRow {
  id: string;
  customer_id: string;
  event_type: EventType;
  blockchain: ChainKey['blockchain'];
  network: ChainKey['network'];
  target: string | null;
  receive_callback_on: number | null;
  confirmation_policy: ConfirmationPolicy | null;
  amount_higher_than: string | null;
  block_height: string | null;
  is_active: boolean;
  wallet_key: SubscribedWalletKey | null;
  /** [change, index, address, derivation path] of each derived address (wallet-key subscriptions only). */
  derived: [boolean, number, string, string][] | null;
}

/**
 * A wallet-key subscription (docs/concepts/wallet-keys.md) comes with its derived addresses, read by the same
 * statement (null for every other row: the subquery runs for those rows only).
 */
const INDEXABLE_COLUMNS = `id, customer_id, event_type, blockchain, network, target, receive_callback_on, confirmation_policy, amount_higher_than, block_height,
  is_active, wallet_key, CASE WHEN wallet_key IS NOT NULL THEN (SELECT json_agg(json_build_array(x.change, x.index, x.address, x.derivation_path))
    FROM xpub_addresses x WHERE x.subscription_id = subscriptions.id) END AS derived`;

const toIndexable = (r: IndexableRow): IndexableSubscription => ({
  id: r.id,
  customerId: String(r.customer_id),
  eventType: r.event_type,
  blockchain: r.blockchain,
  network: r.network,
  target: r.target,
  receiveCallbackOn: r.receive_callback_on,
  confirmationPolicy: r.confirmation_policy,
  amountHigherThan: r.amount_higher_than === null ? null : BigInt(r.amount_higher_than),
  blockHeight: r.block_height === null ? null : Number(r.block_height),
  isActive: r.is_active,
  ...(r.wallet_key !== null && {
    walletKey: r.wallet_key,
    derived: (r.derived ?? []).map(([change, index, address, derivationPath]) => ({ change, index, address, derivationPath })),
  }),
});

/** The active subscriptions of one chain, as the matching index reads them. */
export async function loadIndexableSubscriptions(q: Queryable, chain: ChainKey): Promise<IndexableSubscription[]> {
  const rows = await q.query<IndexableRow>(
    'chain:indexable-subscriptions',
    `SELECT ${INDEXABLE_COLUMNS} FROM subscriptions WHERE blockchain = $1 AND network = $2 AND is_active`,
    [chain.blockchain, chain.network],
  );
  return rows.map(toIndexable);
}

/** The subscriptions `ids` that still exist (active or not), as the matching index reads them. */
export async function loadIndexableByIds(q: Queryable, ids: string[]): Promise<IndexableSubscription[]> {
  if (ids.length === 0) return [];
  // Planned each time: prepared while the table was small (a new database), its generic plan stayed a
  // sequential scan while a bulk import added a million rows (59 ms a read on average, a third of the
  // database's samples during the import, on the main pool beside other customers' requests).
  const rows = await q.query<IndexableRow>('chain:indexable-by-ids', `SELECT ${INDEXABLE_COLUMNS} FROM subscriptions WHERE id = ANY ($1::uuid[])`, [ids], {
    planEachTime: true,
  });
  return rows.map(toIndexable);
}

/**
 * The subscriptions of one customer and chain created in [from, to] (a bulk create's announced range,
 * read on subscriptions_listing); rows of other creates in the range come too, harmlessly.
 */
export async function loadIndexableInRange(
  q: Queryable,
  range: { customerId: string; blockchain: string; network: string; from: string; to: string },
): Promise<IndexableSubscription[]> {
  const rows = await q.query<IndexableRow>(
    'chain:indexable-in-range',
    `SELECT ${INDEXABLE_COLUMNS} FROM subscriptions
     WHERE customer_id = $1 AND blockchain = $2 AND network = $3 AND created_at BETWEEN $4::timestamptz AND $5::timestamptz`,
    [range.customerId, range.blockchain, range.network, range.from, range.to],
    { planEachTime: true }, // as loadIndexableByIds: read while a bulk import grows the table
  );
  return rows.map(toIndexable);
}

/**
 * Active TRANSACTION_MINED and BLOCK_HEIGHT_REACHED subscriptions of the chain without a callback (other
 * than one cancelled by a reorganisation): the ones an already-mined (already-reached) check may still owe
 * (read at start and whenever the change listener reconnects). Exactly one of transactionId and height is set.
 */
export async function loadUncalledMinedSubscriptions(
  q: Queryable,
  chain: ChainKey,
): Promise<{ id: string; transactionId: string | null; height: number | null }[]> {
  const rows = await q.query<{ id: string; target: string | null; block_height: string | null }>(
    'chain:uncalled-mined-subscriptions',
    `SELECT s.id, s.target, s.block_height FROM subscriptions s
     WHERE s.blockchain = $1 AND s.network = $2 AND s.is_active
       AND ((s.event_type = 'TRANSACTION_MINED' AND s.target IS NOT NULL) OR (s.event_type = 'BLOCK_HEIGHT_REACHED' AND s.block_height IS NOT NULL))
       AND NOT EXISTS (SELECT 1 FROM callbacks c WHERE c.subscription_id = s.id AND c.outcome IS DISTINCT FROM 'reorganised')`,
    [chain.blockchain, chain.network],
  );
  return rows.map((r) => ({ id: r.id, transactionId: r.target, height: r.block_height === null ? null : Number(r.block_height) }));
}

/** Which of the subscriptions `ids` have a callback, not counting those cancelled by a reorganisation. */
export async function subscriptionsWithCallbacks(q: Queryable, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await q.query<{ subscription_id: string }>(
    'chain:subscriptions-with-callbacks',
    "SELECT DISTINCT subscription_id FROM callbacks WHERE subscription_id = ANY ($1::uuid[]) AND outcome IS DISTINCT FROM 'reorganised'",
    [ids],
  );
  return new Set(rows.map((r) => r.subscription_id));
}

/** Records the chain's finalized height as the follower read it (it only moves forward). */
export async function saveFinalizedHeight(tx: Queryable, chain: ChainKey, height: number): Promise<void> {
  await tx.query(
    'chain:save-finalized',
    'UPDATE chain_cursors SET finalized_height = greatest(coalesce(finalized_height, -1), $3) WHERE blockchain = $1 AND network = $2',
    [chain.blockchain, chain.network, height],
  );
}

/** The chain's finalized height last recorded by its follower; -1 when none (no finality subscription followed yet). */
export async function readFinalizedHeight(q: Queryable, chain: ChainKey): Promise<number> {
  const [row] = await q.query<{ h: string | null }>(
    'chain:read-finalized',
    'SELECT finalized_height AS h FROM chain_cursors WHERE blockchain = $1 AND network = $2',
    [chain.blockchain, chain.network],
  );
  return row?.h == null ? -1 : Number(row.h);
}
