/**
 * The deep-reorganisation breaker's state (migration 051; docs/concepts/confirmations-and-reorganisations.md#the-deep-reorganisation-breaker):
 * a chain_holds row per held chain, and the held callbacks themselves, which are ordinary pending rows of
 * the outbox due at 'infinity' and out of the event stream (stream_xid NULL). Holding is a state of the
 * chain that every producer of the chain's confirmed callbacks reads in its own transaction (all of them
 * run under the chain's lock, as the trip and the release do), not a second queue: delivery's claim walks
 * the due rows of its index only, so held rows cost it nothing, and a paused subscription's rows stay as
 * they were.
 *
 * Invariants:
 * - a pending callback due at 'infinity' is a held confirmed callback of a chain with a chain_holds row;
 * - the release makes every one of them due in its transaction, which also deletes the row.
 */
import type { ChainKey } from '../domain/chains.ts';
import { CALLBACKS_CHANNEL, HELD_TYPES_SQL } from './callbacks.ts';
import type { Queryable } from './db.ts';

/** One trip of the breaker: what the follower found. */
export interface BreakerTrip {
  at: string;
  reason: 'reorganisation' | 'disagreement';
  /** Blocks rewound (or claimed to be replaced) below the cursor. */
  depth: number;
  /** The common ancestor: the highest block the node and herald agreed on. */
  ancestorHeight: number;
  ancestorHash: string | null;
  /** The blocks involved: herald's (orphaned) and the node's (new) hash at each height above the ancestor, lowest first; a hash unknown is null. */
  blocks: { height: number; orphanedHash: string; newHash: string | null }[];
  /** The follower's own words (the nodes' disagreement). */
  detail: string | null;
}

export interface ChainHold extends ChainKey {
  heldAt: Date;
  reason: BreakerTrip['reason'];
  depth: number;
  breakerDepth: number;
  /** Oldest first. */
  trips: BreakerTrip[];
}

/** At most this many trips are kept per hold (a node disagreeing at every step trips again and again). */
const MAX_TRIPS = 20;

interface HoldRow {
  blockchain: ChainKey['blockchain'];
  network: ChainKey['network'];
  held_at: Date;
  reason: BreakerTrip['reason'];
  depth: number;
  breaker_depth: number;
  trips: BreakerTrip[];
}

function holdOf(r: HoldRow): ChainHold {
  return { blockchain: r.blockchain, network: r.network, heldAt: r.held_at, reason: r.reason, depth: r.depth, breakerDepth: r.breaker_depth, trips: r.trips };
}

/**
 * Trips the breaker, in the caller's transaction under the chain's lock: writes (or adds to) the chain's
 * hold and holds the chain's confirmed callbacks already queued and not yet sent. One sent at this very
 * moment (claimed, in flight) cannot be called back; its retry, if any, stays held (recordOutcomes). The
 * same trip again (a node disagreeing at every step) is not added twice. Returns the hold and how many
 * queued callbacks it held now.
 */
export async function tripBreaker(tx: Queryable, chain: ChainKey, trip: BreakerTrip, breakerDepth: number): Promise<{ hold: ChainHold; held: number }> {
  const [existing] = await tx.query<HoldRow>('holds:read-for-trip', 'SELECT * FROM chain_holds WHERE blockchain = $1 AND network = $2 FOR UPDATE', [
    chain.blockchain,
    chain.network,
  ]);
  let row: HoldRow | undefined;
  if (!existing) {
    [row] = await tx.query<HoldRow>(
      'holds:insert',
      `INSERT INTO chain_holds (blockchain, network, held_at, reason, depth, breaker_depth, trips) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *`,
      [chain.blockchain, chain.network, trip.at, trip.reason, trip.depth, breakerDepth, JSON.stringify([trip])],
    );
  } else {
    const last = existing.trips.at(-1);
    const same = last && last.reason === trip.reason && last.depth === trip.depth && last.ancestorHeight === trip.ancestorHeight;
    if (same) return { hold: holdOf(existing), held: 0 };
    const trips = [...existing.trips, trip].slice(-MAX_TRIPS);
    [row] = await tx.query<HoldRow>(
      'holds:add-trip',
      `UPDATE chain_holds SET depth = greatest(depth, $3), reason = CASE WHEN $3 > depth THEN $4 ELSE reason END, trips = $5
       WHERE blockchain = $1 AND network = $2 RETURNING *`,
      [chain.blockchain, chain.network, trip.depth, trip.reason, JSON.stringify(trips)],
    );
  }
  const held = await tx.query(
    'holds:hold-queued',
    `UPDATE callbacks c SET next_attempt_at = 'infinity'
     FROM subscriptions s
     WHERE s.id = c.subscription_id AND s.blockchain = $1 AND s.network = $2
       AND c.status = 'pending' AND c.next_attempt_at <> 'infinity' AND c.event_type = ANY (${HELD_TYPES_SQL})
     RETURNING c.id`,
    [chain.blockchain, chain.network],
  );
  return { hold: holdOf(row as HoldRow), held: held.length };
}

export async function getHold(q: Queryable, chain: ChainKey): Promise<ChainHold | undefined> {
  const [row] = await q.query<HoldRow>('holds:get', 'SELECT * FROM chain_holds WHERE blockchain = $1 AND network = $2', [chain.blockchain, chain.network]);
  return row && holdOf(row);
}

/** Every held chain, with how many callbacks each holds now. */
export async function listHolds(q: Queryable): Promise<(ChainHold & { heldCallbacks: number })[]> {
  const rows = await q.query<HoldRow & { held_callbacks: number }>(
    'holds:list',
    `SELECT h.*, (SELECT count(*)::int FROM callbacks c JOIN subscriptions s ON s.id = c.subscription_id
                   WHERE c.status = 'pending' AND c.next_attempt_at = 'infinity' AND s.blockchain = h.blockchain AND s.network = h.network) AS held_callbacks
     FROM chain_holds h ORDER BY h.blockchain, h.network`,
  );
  return rows.map((r) => ({ ...holdOf(r), heldCallbacks: r.held_callbacks }));
}

/**
 * Releases a held chain, in the caller's transaction under the chain's lock: deletes its hold, makes its
 * held callbacks due now and puts those never streamed into the event stream at this transaction's
 * position, and wakes the workers when it commits. Undefined when the chain was not held.
 */
export async function releaseHold(tx: Queryable, chain: ChainKey, now: Date): Promise<{ hold: ChainHold; released: number } | undefined> {
  const [row] = await tx.query<HoldRow>('holds:delete', 'DELETE FROM chain_holds WHERE blockchain = $1 AND network = $2 RETURNING *', [
    chain.blockchain,
    chain.network,
  ]);
  if (!row) return undefined;
  const released = await tx.query(
    'holds:release-callbacks',
    `UPDATE callbacks c SET next_attempt_at = $3, stream_xid = coalesce(c.stream_xid, pg_current_xact_id())
     FROM subscriptions s
     WHERE c.status = 'pending' AND c.next_attempt_at = 'infinity' AND s.id = c.subscription_id AND s.blockchain = $1 AND s.network = $2
     RETURNING c.id`,
    [chain.blockchain, chain.network, now],
  );
  await tx.query('callbacks:notify', `SELECT pg_notify('${CALLBACKS_CHANNEL}', '')`);
  return { hold: holdOf(row), released: released.length };
}
