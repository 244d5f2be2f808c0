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
import { childKey } from '../domain/child-keys.ts';
import type { SubscribedWalletKey } from '../domain/subscriptions.ts';
import type { WalletKey } from '../domain/wallet-keys.ts';
import { deriveWindow, parseSubscribedKey, windowEnd } from '../domain/wallet-windows.ts';
import type { Queryable } from '../store/db.ts';
import type { WatchedAddress } from '../store/ledger.ts';
import { insertKeyRows, type KeyRow, type KeyWindowEdge, markKeyUses } from '../store/wallet-xpubs.ts';
import type { BlockLedger } from './ledger.ts';

/** How many times at most a block's entries are computed again after a window grew (each round at least one gapLimit further). */
const MAX_ROUNDS = 1_000;

/**
 * Each chain of a key as a key of its own, by chain, key and branch: the key parsed (its base58 text and point
 * decoded) and the branch's node derived once, its one branch with no steps left and its paths unchanged
 * (`origin` is the branch's path prefix). A block's extensions derive the new addresses' children only.
 */
const branchKeys = new Map<string, WalletKey | null>();
const MAX_BRANCH_KEYS = 20_000;

function branchKey(chain: ChainKey, key: SubscribedWalletKey, change: boolean): WalletKey | undefined {
  const id = `${chain.blockchain}/${chain.network}/${key.field}/${key.derivation ?? ''}/${change ? 1 : 0}/${key.text}`;
  let found = branchKeys.get(id);
  if (found === undefined) {
    found = null;
    const result = parseSubscribedKey(chain.blockchain, chain.network, key);
    const branch = result.ok ? result.key.branches.find((b) => b.change === (change ? 1 : 0)) : undefined;
    if (result.ok && branch) {
      const k = result.key;
      let node = { publicKey: k.publicKey, chainCode: k.chainCode };
      for (const step of branch.steps) node = childKey(node.publicKey, node.chainCode, step);
      found = {
        blockchain: k.blockchain,
        network: k.network,
        scriptType: k.scriptType,
        extendedKey: k.extendedKey,
        origin: [k.origin ?? 'm', ...branch.steps].join('/'),
        branches: [{ change: branch.change, steps: [] }],
        publicKey: node.publicKey,
        chainCode: node.chainCode,
        // deriveWindow reads publicKey and chainCode only; this branch key is never given to deriveAddress.
        get hd(): never {
          throw new Error('a branch key has no HDKey');
        },
      };
    }
    if (branchKeys.size >= MAX_BRANCH_KEYS) branchKeys.clear();
    branchKeys.set(id, found);
  }
  return found ?? undefined;
}

/** Derives and watches what each chain named in `edges` lacks of its window, counted from `watchedFromBlock` (one insert for all); returns the rows added. */
async function extend(
  tx: Queryable,
  chain: ChainKey,
  edges: readonly KeyWindowEdge[],
  watchedFromBlock: bigint | null,
): Promise<{ id: string; address: string }[]> {
  const rows: KeyRow[] = [];
  for (const edge of edges) {
    const end = windowEnd(edge.highestMarked, edge.key.gapLimit);
    if (end <= edge.highest) continue;
    // Checked at add: a key the rules no longer take (or a chain it does not have) keeps the window it has.
    const key = branchKey(chain, edge.key, edge.change);
    if (!key) continue;
    for (const r of deriveWindow(key, edge.change, edge.highest + 1, end, edge.key.regtest)) rows.push({ ...r, walletId: edge.walletId, xpubId: edge.xpubId });
  }
  return await insertKeyRows(tx, chain, watchedFromBlock, rows);
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
