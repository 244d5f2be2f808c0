/**
 * Operator actions on chain following, shared by `herald chains reset`/`release` and POST /operator/chains/.../reset and .../release.
 */

import type { ChainKey } from '../domain/chains.ts';
import { type ChainHold, getHold, listHolds, releaseHold } from '../store/chain-holds.ts';
import { getCursor, lockChain, resetCursor, rewindAbove } from '../store/chain-state.ts';
import type { Db } from '../store/db.ts';
import { takeOrphanedEntries } from '../store/ledger.ts';

export interface ChainReset {
  /** The cursor forgotten; undefined when the chain had no following state. */
  cursor?: { height: number; state: string };
  pendingDeleted: number;
  callbacksCancelled: number;
}

/**
 * Forgets where a chain's following stands (cursor, window, events waiting for confirmations, unsent
 * callbacks of those blocks), in one transaction under the chain's lock: a running ingest process
 * starts again at the configured startHeight or the node head. Events of the blocks skipped are not sent.
 */
export async function resetChain(db: Db, chain: ChainKey): Promise<ChainReset> {
  return await db.transaction('chains:reset', async (tx) => {
    await lockChain(tx, chain);
    const cursor = await getCursor(tx, chain);
    const rewound = await rewindAbove(tx, chain, -1);
    // Ledger entries of those blocks: confirmed ones stay counted, the others are never confirmed now.
    await takeOrphanedEntries(tx, chain, -1);
    await resetCursor(tx, chain);
    return {
      ...(cursor && { cursor: { height: cursor.height, state: cursor.state } }),
      pendingDeleted: rewound.pendingDeleted,
      callbacksCancelled: rewound.callbacksCancelled,
    };
  });
}

export interface ChainRelease {
  /** The hold released; undefined when the chain was not held. */
  hold?: ChainHold;
  /** Held callbacks made due now. */
  callbacksReleased: number;
}

/**
 * Releases a chain held by the deep-reorganisation breaker (docs/concepts/confirmations-and-reorganisations.md#the-deep-reorganisation-breaker),
 * shared by `herald chains release` and POST /operator/chains/.../release: in one transaction under the
 * chain's lock, its hold is deleted and its held confirmed callbacks are made due now (those whose events
 * left the chain were cancelled by the rewinds meanwhile). Following never stopped, so nothing else changes.
 */
export async function releaseChain(db: Db, chain: ChainKey, now = new Date()): Promise<ChainRelease> {
  return await db.transaction('chains:release', async (tx) => {
    await lockChain(tx, chain);
    const released = await releaseHold(tx, chain, now);
    return released ? { hold: released.hold, callbacksReleased: released.released } : { callbacksReleased: 0 };
  });
}

/** The chain's hold, if it is held. */
export async function chainHold(db: Db, chain: ChainKey): Promise<ChainHold | undefined> {
  return await getHold(db, chain);
}

/** Every held chain with how many callbacks it holds (`herald chains holds`, the operator's chain view). */
export async function chainHolds(db: Db) {
  return await listHolds(db);
}
