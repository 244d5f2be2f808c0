/**
 * The event stream's reads and marks (docs/concepts/event-stream.md, migration 050): a customer's
 * callbacks and the retractions and reinstatements of them, in the order of the transactions that wrote
 * them, from a position on.
 */
import type { CallbackEventType, EventType } from '../domain/chains.ts';
import { STREAM_START, type StreamPosition } from '../domain/stream-cursor.ts';
import { CALLBACKS_CHANNEL } from './callbacks.ts';
import type { Queryable } from './db.ts';

export interface StreamFilters {
  referenceId?: string;
  eventType?: CallbackEventType;
  blockchain?: string;
  network?: string;
}

export interface StreamRow {
  position: StreamPosition;
  /** null: the event itself; else what happened to it. */
  mark: 'retracted' | 'reinstated' | null;
  callbackId: string;
  subscriptionId: string;
  eventType: EventType;
  idempotencyKey: string;
  /** The callback's x-callback-sequence. */
  sequence: number | null;
  /** The callback body, byte for byte as sent. */
  body: string;
  /** When the event (or the mark) was written, in Unix seconds (read as such: no Date per row). */
  createdAt: number;
  /** A mark's block (the one that left the chain, or came back). */
  block: { height: number; hash: string } | null;
}

interface Row {
  xid: string;
  rank: number;
  n: string;
  id: string;
  kind: 'retracted' | 'reinstated' | null;
  subscription_id: string;
  event_type: EventType;
  idempotency_key: string;
  sequence: string | null;
  body: string;
  created_at: string;
  block_height: string | null;
  block_hash: string | null;
}

/**
 * The filters, on the callback `c` of an entry: the chain is read from the body (data.item), which a
 * deleted subscription's callbacks keep too. Parameters $7..$10.
 */
const FILTERS = `($7::uuid IS NULL OR c.subscription_id = $7::uuid) AND ($8::text IS NULL OR c.event_type = $8::text)
  AND ($9::text IS NULL OR (c.body::jsonb #>> '{data,item,blockchain}') = $9::text)
  AND ($10::text IS NULL OR (c.body::jsonb #>> '{data,item,network}') = $10::text)`;

/**
 * The read of a page. Each branch walks its index by (customer, transaction id) and stops after `limit`
 * rows; both come out in the page's order, so the union is merged, not sorted again: the order key `o`
 * puts a transaction's marks (rank 0, by id, shifted below zero) before its callbacks (rank 1, by
 * x-callback-sequence, never negative), which is the order (stream_xid, rank, n, id) of the cursor. An
 * outer sort of the union cost more database time than the index walk itself (docs/benchmarks.md).
 * `filters`: the filter clauses, or '' for the unfiltered read (its own statement: the clauses, even
 * with null parameters, cost a fifth of the page's database time).
 */
const readSql = (filters: string) => `WITH h AS (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin)
     SELECT e.stream_xid::text AS xid, e.rank, e.n::text AS n, e.id, e.kind, e.subscription_id, e.event_type, e.idempotency_key, e.sequence,
       e.body, floor(extract(epoch FROM e.created_at))::text AS created_at, e.block_height, e.block_hash
     FROM (
       (SELECT c.stream_xid, c.sequence AS o, 1 AS rank, c.sequence AS n, c.id, NULL::text AS kind, c.subscription_id, c.event_type,
          c.idempotency_key, c.sequence, c.body, c.created_at, NULL::bigint AS block_height, NULL::text AS block_hash
        FROM callbacks c, h
        WHERE c.customer_id = $1 AND c.stream_xid IS NOT NULL AND c.stream_xid >= $2::xid8 AND c.stream_xid < h.xmin
          AND (c.stream_xid, 1, c.sequence, c.id) > ($2::xid8, $3::int, $4::bigint, $5::uuid)${filters}
        ORDER BY c.stream_xid, c.sequence, c.id LIMIT $6)
       UNION ALL
       (SELECT m.stream_xid, m.id - ${MARK_SHIFT}, 0, m.id, c.id, m.kind, c.subscription_id, c.event_type, c.idempotency_key, c.sequence,
          c.body, m.created_at, m.block_height, m.block_hash
        FROM stream_marks m JOIN callbacks c ON c.id = m.callback_id, h
        WHERE m.customer_id = $1 AND m.stream_xid >= $2::xid8 AND m.stream_xid < h.xmin
          AND (m.stream_xid, 0, m.id, m.callback_id) > ($2::xid8, $3::int, $4::bigint, $5::uuid)${filters}
        ORDER BY m.stream_xid, m.id - ${MARK_SHIFT}, c.id LIMIT $6)) e
     ORDER BY e.stream_xid, e.o, e.id LIMIT $6`;
/** 2^62: a mark's id (a bigserial) less this is below every x-callback-sequence. */
const MARK_SHIFT = '4611686018427387904';
const READ_ALL = readSql('');
const READ_FILTERED = readSql(` AND ${FILTERS}`);

/**
 * Up to `limit` entries after `after`, of transactions that have all ended (below the snapshot's xmin:
 * see migration 050), so that nothing can appear later behind the last position returned.
 */
export async function readStream(q: Queryable, customerId: string, after: StreamPosition, limit: number, filters: StreamFilters): Promise<StreamRow[]> {
  const filtered = filters.referenceId !== undefined || filters.eventType !== undefined || filters.blockchain !== undefined || filters.network !== undefined;
  const head = [customerId, after.xid, after.rank, after.n, after.entryId, limit];
  const rows = filtered
    ? await q.query<Row>('stream:read-filtered', READ_FILTERED, [
        ...head,
        filters.referenceId ?? null,
        filters.eventType ?? null,
        filters.blockchain ?? null,
        filters.network ?? null,
      ])
    : await q.query<Row>('stream:read', READ_ALL, head);
  return rows.map((r) => ({
    position: { xid: r.xid, rank: r.rank === 0 ? 0 : 1, n: r.n, entryId: r.id },
    mark: r.kind,
    callbackId: r.id,
    subscriptionId: r.subscription_id,
    eventType: r.event_type,
    idempotencyKey: r.idempotency_key,
    sequence: r.sequence === null ? null : Number(r.sequence),
    body: r.body,
    createdAt: Number(r.created_at),
    block: r.block_hash === null ? null : { height: Number(r.block_height), hash: r.block_hash },
  }));
}

/**
 * Whether the customer has entries written by transactions that ended after the reader's snapshot
 * began or are still running behind an older one: an empty read is then retried shortly instead of
 * waiting for the next announcement (which may have come already).
 *
 * Asked as "is the customer's newest position at or past the snapshot's xmin": each side is one descent
 * of its (customer, position) index, backwards, whatever the customer's share of the table. Written as
 * EXISTS (a row at or past xmin), the prepared statement's generic plan, which cannot know the customer
 * nor xmin, scanned the whole outbox for a customer with few rows once another owned most of them: 24 ms
 * at 200,000 stored callbacks, the p99 of a long-poll 429 ms at 1,000,000 (docs/benchmarks.md).
 */
export async function hasUnsettledEntries(q: Queryable, customerId: string): Promise<boolean> {
  const [row] = await q.query<{ unsettled: boolean }>(
    'stream:unsettled-newest',
    `WITH h AS (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin)
     SELECT coalesce((SELECT c.stream_xid FROM callbacks c WHERE c.customer_id = $1 AND c.stream_xid IS NOT NULL ORDER BY c.stream_xid DESC LIMIT 1) >= h.xmin, false)
       OR coalesce((SELECT m.stream_xid FROM stream_marks m WHERE m.customer_id = $1 ORDER BY m.stream_xid DESC LIMIT 1) >= h.xmin, false) AS unsettled
     FROM h`,
    [customerId],
  );
  return row?.unsettled ?? false;
}

/** The position of the newest entry retention deleted for the customer (migration 050), if any. */
export async function streamHorizon(q: Queryable, customerId: string): Promise<StreamPosition | undefined> {
  const [row] = await q.query<{ xid: string; rank: number; n: string; entry_id: string }>(
    'stream:horizon',
    'SELECT stream_xid::text AS xid, rank, n::text AS n, entry_id FROM stream_horizons WHERE customer_id = $1',
    [customerId],
  );
  return row ? { xid: row.xid, rank: row.rank === 0 ? 0 : 1, n: row.n, entryId: row.entry_id } : undefined;
}

export { STREAM_START };

/**
 * The retractions of a reorganisation, in its transaction (store/chain-state.ts rewindAbove): one mark
 * per callback recorded under a block above `ancestorHeight`, with that block's height and hash (read
 * before the window forgets them), except callbacks already retracted. Wakes long-polling readers on
 * commit.
 */
export async function markRetracted(tx: Queryable, chain: { blockchain: string; network: string }, ancestorHeight: number): Promise<number> {
  const rows = await tx.query(
    'stream:mark-retracted',
    `WITH marked AS (
       INSERT INTO stream_marks (customer_id, callback_id, kind, block_height, block_hash)
       SELECT c.customer_id, c.id, 'retracted', b.block_height, w.hash
       FROM chain_block_callbacks b
         JOIN callbacks c ON c.subscription_id = b.subscription_id AND c.idempotency_key = b.idempotency_key
         LEFT JOIN chain_blocks w ON w.blockchain = b.blockchain AND w.network = b.network AND w.height = b.block_height
       WHERE b.blockchain = $1 AND b.network = $2 AND b.block_height > $3 AND c.stream_xid IS NOT NULL
         AND NOT (c.status = 'cancelled' AND c.outcome = 'reorganised')
       ORDER BY b.block_height, c.sequence
       RETURNING id)
     SELECT pg_notify('${CALLBACKS_CHANNEL}', '') FROM (SELECT 1 FROM marked LIMIT 1) x`,
    [chain.blockchain, chain.network, ancestorHeight],
  );
  return rows.length;
}

/**
 * The SQL of a CTE that marks as reinstated the callbacks a CTE `revived` (RETURNING id, customer_id,
 * stream_xid) put back to pending: the chain came back to their block. Used inside the block's write.
 */
export const REINSTATED_CTE = `reinstated AS (
       INSERT INTO stream_marks (customer_id, callback_id, kind)
       SELECT r.customer_id, r.id, 'reinstated' FROM revived r WHERE r.stream_xid IS NOT NULL)`;
