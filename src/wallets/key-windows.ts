/**
 * The windows of the extended keys wallets hold (docs/concepts/wallets.md#extended-keys-in-a-wallet): gapLimit unused
 * derived addresses watched beyond the highest used, per chain of the key. An address becomes used
 *
 * - in the block's own transaction (the follower, keepKeyWindows): a derived address that gets its first ledger
 *   entry in the block (a coin, token or NFT movement) is used at the block's height, and its key's chain is
 *   extended at once (new watched addresses, counted from this block on: watchedFromBlock is the block before
 *   it). The block's ledger entries are then computed again with the new addresses, until the window stops
 *   growing, so that a block paying index 19 and index 38 (gap 20) counts both;
 * - when its opening balance is read (wallets/openings.ts, useOpenings): an address the window reached after it
 *   had been paid (an out-of-order deposit beyond the window, a key whose past use the node could not tell) holds
 *   coins at its watchedFromBlock: used there, and the window extended from it (the new addresses counted from the
 *   chain's last processed block, as an added address is; their openings are read at the next run, and so on).
 *
 * Only blocks whose watched addresses include a derived one pay for this (the block's statement says which
 * are, store/block-apply.ts). The follower's set of watched addresses learns the new ones at the next block
 * (their ids are above its bound, wallets/watched-set.ts). The caller holds the chain's lock.
 */
import type { NormalizedBlock } from '../chains/types.ts';
import type { ChainKey } from '../domain/chains.ts';
import { deriveWindow, parseSubscribedKey, windowEnd } from '../domain/wallet-windows.ts';
import type { Queryable } from '../store/db.ts';
import type { WatchedAddress } from '../store/ledger.ts';
import { insertDerivedWalletAddresses, type KeyWindowEdge, markKeyUses } from '../store/wallet-xpubs.ts';
import type { BlockLedger } from './ledger.ts';

/** How many times at most a block's entries are computed again after a window grew (each round at least one gapLimit further). */
const MAX_ROUNDS = 1_000;

/** Derives and watches what each chain named in `edges` lacks of its window, counted from `watchedFromBlock`; returns the rows added. */
async function extend(
  tx: Queryable,
  chain: ChainKey,
  edges: readonly KeyWindowEdge[],
  watchedFromBlock: bigint | null,
): Promise<{ id: string; address: string }[]> {
  const added: { id: string; address: string }[] = [];
  for (const edge of edges) {
    const end = windowEnd(edge.highestMarked, edge.key.gapLimit);
    if (end <= edge.highest) continue;
    const parsed = parseSubscribedKey(chain.blockchain, chain.network, edge.key);
    if (!parsed.ok) continue; // checked at add: a key the rules no longer take keeps the window it has
    const window = deriveWindow(parsed.key, edge.change, edge.highest + 1, end, edge.key.regtest);
    added.push(...(await insertDerivedWalletAddresses(tx, { walletId: edge.walletId, xpubId: edge.xpubId, ...chain, watchedFromBlock }, window)));
  }
  return added;
}

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
    const edges = await markKeyUses(
      tx,
      moved.map((walletAddressId) => ({ walletAddressId, height: block.height })),
    );
    touchedSet ??= new Set(touched);
    const added: WatchedAddress[] = [];
    for (const r of await extend(tx, chain, edges, BigInt(block.height - 1))) {
      if (touchedSet.has(r.address)) added.push({ id: r.id, address: r.address, derived: true });
    }
    if (added.length === 0) break;
    rows = [...rows, ...added];
    ledger = await entriesOf(rows);
  }
  return { ledger, watched: rows };
}

/**
 * Openings just recorded (in the openings' transaction, under the chain's lock): the derived addresses among
 * `held` (a positive opening balance) are used at their watchedFromBlock, and their windows extended, the new
 * addresses watched from `cursorHeight` (the chain's last processed block). Returns how many addresses were added.
 */
export async function useOpenings(
  tx: Queryable,
  chain: ChainKey,
  held: readonly { walletAddressId: string; height: number }[],
  cursorHeight: number | null,
): Promise<number> {
  const edges = await markKeyUses(tx, held);
  if (edges.length === 0) return 0;
  return (await extend(tx, chain, edges, cursorHeight === null ? null : BigInt(cursorHeight))).length;
}
