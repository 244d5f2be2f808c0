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

/**
 * An entry of a page as the statement gives it (no object of its own: a page is a thousand of them, and
 * each allocation showed in the stream's profile, docs/benchmarks.md). Its position is (xid, rank, n, id).
 */
export interface StreamRow {
  /** The writing transaction's id, as decimal text. */
  xid: string;
  /** 0: a mark (a retraction or reinstatement); 1: an event. */
  rank: number;
  /** The mark's number or the event's x-callback-sequence, as decimal text. */
  n: string;
  /** The callback's id. */
  id: string;
  event_type: EventType;
  /** The callback body, byte for byte as sent. */
  body: string;
  /** `,"sequence":S,"createdAt":T`: the entry's fields after the body's own (createdAt in Unix seconds, of the event or the mark). */
  x: string;
  /** A mark: `["retracted"|"reinstated", subscriptionId, idempotencyKey, blockHeight, blockHash]` (JSON text; the block's null when unknown); null for an event. */
  mark: string | null;
}

/**
 * The filters, on the callback `c` of an entry: the chain is read from the body (data.item), which a
 * deleted subscription's callbacks keep too. Parameters $7..$10.
 */
const FILTERS = `($7::uuid IS NULL OR c.subscription_id = $7::uuid) AND ($8::text IS NULL OR c.event_type = $8::text)
  AND ($9::text IS NULL OR (c.body::jsonb #>> '{data,item,blockchain}') = $9::text)
  AND ($10::text IS NULL OR (c.body::jsonb #>> '{data,item,network}') = $10::text)`;

/**
 * The read of a page, its charge and the retention check, in one statement: one round trip a page (the
 * debit alone was a sixth of a page's time, the horizon's lookup another: docs/benchmarks.md, the event
 * stream).
 *
 * - `live`: the cursor is not before the customer's horizon (the newest entry retention deleted); when
 *   it is, the page is empty, nothing is charged and `z_*` give the horizon (410 with it).
 * - `page`: each branch walks its index by (customer, transaction id) and stops after `limit` rows; both
 *   come out in the page's order, so the union is merged, not sorted again: the order key `o` puts a
 *   transaction's marks (rank 0, by id, shifted below zero) before its callbacks (rank 1, by
 *   x-callback-sequence, never negative), which is the order (stream_xid, rank, n, id) of the cursor. An
 *   outer sort of the union cost more database time than the index walk itself.
 * - `d`, `u`: the debit of the entries returned (up to limit - 1: the last row only tells whether there
 *   is more) at the price given, and its usage row, only when there is something to charge. A read has
 *   nothing durable of its own: its commit does not wait for the WAL flush (CreditCharger.charge says
 *   why that is safe for a read).
 * The page's rows come first, in its order (checked by the caller), then one row whose `meta` says the rest.
 * `filters`: the filter clauses, or '' for the unfiltered read (its own statement: the clauses, even
 * with null parameters, cost a fifth of the page's database time); `price` and `endpoint`: the numbers
 * of their parameters.
 */
const pageSql = (filters: string, price: number, endpoint: number) => `WITH h AS (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin),
     z AS (SELECT stream_xid, rank, n, entry_id FROM stream_horizons WHERE customer_id = $1),
     live AS (SELECT NOT EXISTS (SELECT 1 FROM z WHERE (z.stream_xid, z.rank, z.n, z.entry_id) > ($2::xid8, $3::int, $4::bigint, $5::uuid)) AS ok),
     page AS (
     SELECT e.stream_xid, e.o, e.stream_xid::text AS xid, e.rank, e.n::text AS n, e.id, e.kind, e.subscription_id, e.event_type, e.idempotency_key, e.sequence,
       e.body, floor(extract(epoch FROM e.created_at))::text AS created_at, e.block_height, e.block_hash
     FROM (
       (SELECT c.stream_xid, c.sequence AS o, 1 AS rank, c.sequence AS n, c.id, NULL::text AS kind, c.subscription_id, c.event_type,
          c.idempotency_key, c.sequence, c.body, c.created_at, NULL::bigint AS block_height, NULL::text AS block_hash
        FROM callbacks c, h
        WHERE c.customer_id = $1 AND c.stream_xid IS NOT NULL AND c.stream_xid >= $2::xid8 AND c.stream_xid < h.xmin
          AND (c.stream_xid, 1, c.sequence, c.id) > ($2::xid8, $3::int, $4::bigint, $5::uuid)${filters} AND (SELECT ok FROM live)
        ORDER BY c.stream_xid, c.sequence, c.id LIMIT $6)
       UNION ALL
       (SELECT m.stream_xid, m.id - ${MARK_SHIFT}, 0, m.id, c.id, m.kind, c.subscription_id, c.event_type, c.idempotency_key, c.sequence,
          c.body, m.created_at, m.block_height, m.block_hash
        FROM stream_marks m JOIN callbacks c ON c.id = m.callback_id, h
        WHERE m.customer_id = $1 AND m.stream_xid >= $2::xid8 AND m.stream_xid < h.xmin
          AND (m.stream_xid, 0, m.id, m.callback_id) > ($2::xid8, $3::int, $4::bigint, $5::uuid)${filters} AND (SELECT ok FROM live)
        ORDER BY m.stream_xid, m.id - ${MARK_SHIFT}, c.id LIMIT $6)) e
     ORDER BY e.stream_xid, e.o, e.id LIMIT $6),
     cost AS (SELECT least(count(*), $6 - 1) * $${price}::bigint AS c FROM page),
     d AS (UPDATE customers SET credits = credits - cost.c FROM cost WHERE id = $1 AND cost.c > 0 AND credits >= cost.c RETURNING credits),
     u AS (
       INSERT INTO credit_usage AS u (customer_id, day, endpoint, requests, credits)
       SELECT $1, (now() AT TIME ZONE 'UTC')::date, $${endpoint}::text, 1, cost.c FROM cost WHERE EXISTS (SELECT 1 FROM d)
       ON CONFLICT (customer_id, day, endpoint) DO UPDATE SET requests = u.requests + EXCLUDED.requests, credits = u.credits + EXCLUDED.credits
       RETURNING day)
     SELECT NULL::text AS meta, p.xid, p.rank, p.n, p.id, p.event_type, p.body,
       ',"sequence":' || coalesce(p.sequence::text, 'null') || ',"createdAt":' || p.created_at AS x,
       CASE WHEN p.kind IS NOT NULL THEN json_build_array(p.kind, p.subscription_id, p.idempotency_key, p.block_height, p.block_hash)::text END AS mark
     FROM page p
     UNION ALL
     SELECT json_build_object('live', (SELECT ok FROM live), 'horizon', (SELECT json_build_array(z.stream_xid::text, z.rank, z.n::text, z.entry_id) FROM z),
         'cost', (SELECT c FROM cost)::text, 'credits', coalesce((SELECT credits FROM d), (SELECT credits FROM customers WHERE id = $1), 0)::text,
         'debited', EXISTS (SELECT 1 FROM d), 'day', (SELECT min(day)::text FROM u), 'commitMode', set_config('synchronous_commit', 'off', true))::text,
       NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL`;
/** 2^62: a mark's id (a bigserial) less this is below every x-callback-sequence. */
const MARK_SHIFT = '4611686018427387904';
const READ_ALL = pageSql('', 7, 8);
const READ_FILTERED = pageSql(` AND ${FILTERS}`, 11, 12);

export interface StreamPage {
  /** The entries after `after`, up to `limit` (the caller asks one more than it returns). */
  rows: StreamRow[];
  /** Undefined when the page was read; else the horizon `after` is before (nothing read, nothing charged). */
  expiredAt?: StreamPosition;
  /** What the page cost: charged when `paid` (or nothing was owed), else the balance did not cover it. */
  cost: bigint;
  paid: boolean;
  /** The balance after the debit (before it, when nothing was debited). */
  available: bigint;
  /** The UTC day the usage was recorded under, when something was charged. */
  usageDay?: string;
}

interface Meta {
  live: boolean;
  horizon: [string, number, string, string] | null;
  cost: string;
  credits: string;
  debited: boolean;
  day: string | null;
}

/**
 * Up to `limit` entries after `after`, of transactions that have all ended (below the snapshot's xmin:
 * see migration 050), so that nothing can appear later behind the last position returned; charged at
 * `pricePerEntry` for each entry but the `limit`-th in the same statement (see pageSql).
 */
export async function readStreamPage(
  q: Queryable,
  customerId: string,
  after: StreamPosition,
  limit: number,
  filters: StreamFilters,
  charge: { pricePerEntry: bigint; endpoint: string },
): Promise<StreamPage> {
  const filtered = filters.referenceId !== undefined || filters.eventType !== undefined || filters.blockchain !== undefined || filters.network !== undefined;
  const head = [customerId, after.xid, after.rank, after.n, after.entryId, limit];
  const price = [String(charge.pricePerEntry), charge.endpoint];
  const rows = filtered
    ? await q.query<StreamRow & { meta: string | null }>('stream:page-filtered', READ_FILTERED, [
        ...head,
        filters.referenceId ?? null,
        filters.eventType ?? null,
        filters.blockchain ?? null,
        filters.network ?? null,
        ...price,
      ])
    : await q.query<StreamRow & { meta: string | null }>('stream:page', READ_ALL, [...head, ...price]);
  const meta = JSON.parse(rows.pop()?.meta ?? 'null') as Meta | null;
  if (!meta) throw new Error('the stream page statement gave no meta row');
  const cost = BigInt(meta.cost);
  const page: StreamPage = { rows: [], cost, paid: meta.debited || cost === 0n, available: BigInt(meta.credits), ...(meta.day && { usageDay: meta.day }) };
  if (!meta.live && meta.horizon) {
    const [xid, rank, n, entryId] = meta.horizon;
    page.expiredAt = { xid, rank: rank === 0 ? 0 : 1, n, entryId };
    return page;
  }
  // Append hands the page over in its order, before the meta row; sorted should a plan ever differ.
  if (!inOrder(rows)) rows.sort(compareRows);
  page.rows = rows;
  return page;
}

/** The position of a row. */
export function rowPosition(row: StreamRow): StreamPosition {
  return { xid: row.xid, rank: row.rank === 0 ? 0 : 1, n: row.n, entryId: row.id };
}

/** Decimal texts without leading zeros, compared as the numbers they are (no BigInt per row). */
function compareDecimal(a: string, b: string): number {
  if (a.length !== b.length) return a.length - b.length;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Stream order: (xid, rank, n, id). */
function compareRows(a: StreamRow, b: StreamRow): number {
  return compareDecimal(a.xid, b.xid) || a.rank - b.rank || compareDecimal(a.n, b.n) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

function inOrder(rows: readonly StreamRow[]): boolean {
  for (let i = 1; i < rows.length; i++) if (compareRows(rows[i - 1] as StreamRow, rows[i] as StreamRow) >= 0) return false;
  return true;
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
