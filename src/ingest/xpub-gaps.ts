/**
 * The gap window of wallet-key subscriptions kept in the block's own transaction (docs/concepts/wallet-keys.md):
 * the derived addresses a block's matches touch are marked used (first seen at this height), and each chain
 * whose window is now short of gapLimit unused addresses beyond the highest used is extended: derived,
 * stored, and added to the matching index at once, so the next block is matched against them.
 *
 * The index learns the new addresses before the transaction commits. A rollback (the block is tried again)
 * leaves them watched, which is harmless: the retry computes the same window, and a restart reloads it from
 * the table.
 */
import type { ChainKey } from '../domain/chains.ts';
import { deriveWindow, parseSubscribedKey, windowEnd } from '../domain/wallet-windows.ts';
import type { SubscriptionIndex } from '../matching/index.ts';
import type { Match } from '../matching/match.ts';
import type { Queryable } from '../store/db.ts';
import { clearUsedAbove, insertDerivedAddresses, markUsed } from '../store/xpub-addresses.ts';

/** Marks the used addresses of `matches` and extends the windows they open; returns how many addresses were added. */
export async function keepXpubGaps(tx: Queryable, index: SubscriptionIndex, chain: ChainKey, matches: readonly Match[], height: number): Promise<number> {
  const uses: { subscriptionId: string; change: boolean; index: number }[] = [];
  for (const m of matches) {
    if (m.eventType !== 'XPUB_COINS_TRANSACTION_CONFIRMED') continue;
    for (const a of m.addresses) uses.push({ subscriptionId: m.subscription.id, change: a.change, index: a.index });
  }
  if (uses.length === 0) return 0;
  const edges = await markUsed(tx, uses, height);
  let added = 0;
  for (const [subscriptionId, chains] of edges) {
    const key = index.walletKeyOf(subscriptionId);
    if (!key) continue;
    const parsed = parseSubscribedKey(chain.blockchain, chain.network, key);
    if (!parsed.ok) continue; // checked at create: a key the rules no longer take keeps the window it has
    for (const edge of chains) {
      const end = windowEnd(edge.highestUsed, key.gapLimit);
      if (end <= edge.highest) continue;
      const rows = deriveWindow(parsed.key, edge.change, edge.highest + 1, end, key.regtest);
      added += await insertDerivedAddresses(tx, subscriptionId, rows);
      index.addDerived(subscriptionId, rows);
    }
  }
  return added;
}

/** A reorganisation back to `ancestorHeight`: the used flags of the dropped blocks are cleared; the window stays. */
export async function forgetXpubUsesAbove(tx: Queryable, chain: ChainKey, ancestorHeight: number): Promise<number> {
  return await clearUsedAbove(tx, chain, ancestorHeight);
}
