/**
 * The windows of the extended keys wallets hold (docs/concepts/wallets.md#extended-keys-in-a-wallet), kept in the
 * block's own transaction by the follower: a derived address that gets its first ledger entry in the block
 * (a coin, token or NFT movement) is marked used at the block's height, and its key's chain is extended so
 * that gapLimit unused addresses follow the highest used (new watched addresses, counted from this block on:
 * watchedFromBlock is the block before it). The block's ledger entries are then computed again with the new
 * addresses, until the window stops growing, so that a block paying index 19 and index 38 (gap 20) counts both.
 *
 * Only blocks whose watched addresses include a derived one pay for this (the block's statement says which
 * are, store/block-apply.ts). The follower's set of watched addresses learns the new ones at the next block
 * (their ids are above its bound, wallets/watched-set.ts).
 */
import type { NormalizedBlock } from '../chains/types.ts';
import type { ChainKey } from '../domain/chains.ts';
import { deriveWindow, parseSubscribedKey, windowEnd } from '../domain/wallet-windows.ts';
import type { Queryable } from '../store/db.ts';
import type { WatchedAddress } from '../store/ledger.ts';
import { insertDerivedWalletAddresses, markKeyUses } from '../store/wallet-xpubs.ts';
import type { BlockLedger } from './ledger.ts';

/** How many times at most a block's entries are computed again after a window grew (each round at least one gapLimit further). */
const MAX_ROUNDS = 1_000;

/**
 * Marks the derived addresses `ledger` moves used and extends their windows, computing the block's ledger again
 * (`entriesOf`) with the addresses added that the block touches; returns the final ledger and watched rows.
 */
export async function keepKeyWindows(
  tx: Queryable,
  chain: ChainKey,
  block: Pick<NormalizedBlock, 'height'>,
  touched: readonly string[],
  watched: WatchedAddress[],
  first: BlockLedger,
  entriesOf: (watched: WatchedAddress[]) => Promise<BlockLedger>,
): Promise<{ ledger: BlockLedger; watched: WatchedAddress[] }> {
  let ledger = first;
  let rows = watched;
  let touchedSet: Set<string> | undefined;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const derived = new Set(rows.filter((w) => w.derived).map((w) => w.id));
    const moved = [...new Set(ledger.entries.map((e) => e.walletAddressId))].filter((id) => derived.has(id));
    if (moved.length === 0) break;
    const edges = await markKeyUses(tx, moved, block.height);
    const added: WatchedAddress[] = [];
    for (const edge of edges) {
      const end = windowEnd(edge.highestMarked, edge.key.gapLimit);
      if (end <= edge.highest) continue;
      const parsed = parseSubscribedKey(chain.blockchain, chain.network, edge.key);
      if (!parsed.ok) continue; // checked at add: a key the rules no longer take keeps the window it has
      const window = deriveWindow(parsed.key, edge.change, edge.highest + 1, end, edge.key.regtest);
      const inserted = await insertDerivedWalletAddresses(
        tx,
        { walletId: edge.walletId, xpubId: edge.xpubId, ...chain, watchedFromBlock: BigInt(block.height - 1) },
        window,
      );
      touchedSet ??= new Set(touched);
      for (const r of inserted) if (touchedSet.has(r.address)) added.push({ id: r.id, address: r.address, derived: true });
    }
    if (added.length === 0) break;
    rows = [...rows, ...added];
    ledger = await entriesOf(rows);
  }
  return { ledger, watched: rows };
}
