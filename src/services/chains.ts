/**
 * Operator actions on chain following, shared by `herald chains reset` and POST /operator/chains/.../reset.
 */
import { type ChainKey, getCursor, lockChain, resetCursor, rewindAbove } from '../store/chain-state.ts';
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
