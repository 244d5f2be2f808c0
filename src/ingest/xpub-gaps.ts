/**
 * The gap window of wallet-key subscriptions kept in the block's own transaction (docs/concepts/wallet-keys.md):
 * the derived addresses a block's matches touch are marked used (first seen at this height), and each chain
 * whose window is now short of gapLimit unused addresses beyond the highest used is extended: derived,
 * stored, and added to the matching index at once. The block is then matched again against the grown
 * window, until it stops growing, so that a block paying index 19 and index 38 (gap 20) is caught whole.
 * The unconfirmed subscriptions' windows move with the blocks too (their used flags are the confirmed
 * chain's), and the mempool widens them ahead of the blocks (extendForPending).
 *
 * The index learns the new addresses before the transaction commits. A rollback (the block is tried again)
 * leaves them watched, which is harmless: the retry computes the same window, and a restart reloads it from
 * the table.
 */
import type { NormalizedBlock } from '../chains/types.ts';
import type { ChainKey } from '../domain/chains.ts';
import { deriveWindow, parseSubscribedKey, windowEnd } from '../domain/wallet-windows.ts';
import type { SubscriptionIndex } from '../matching/index.ts';
import type { Match } from '../matching/match.ts';
import { matchXpub, type XpubCoinsMatch, type XpubEventType } from '../matching/xpub.ts';
import type { Queryable } from '../store/db.ts';
import { clearUsedAbove, highestDerived, insertDerivedAddresses, markUsed, type WindowEdge } from '../store/xpub-addresses.ts';

/** How many times at most a block is matched again after its window grew (each round at least one gapLimit further). */
const MAX_ROUNDS = 1_000;

type Use = { subscriptionId: string; change: boolean; index: number };

const usesOf = (matches: readonly XpubCoinsMatch<XpubEventType>[]): Use[] =>
  matches.flatMap((m) => m.addresses.map((a) => ({ subscriptionId: m.subscription.id, change: a.change, index: a.index })));

/**
 * Marks the used addresses of the block's wallet-key matches and extends the windows they open, matching the
 * block again while they grow; returns `matches` with its wallet-key matches replaced by those of the final
 * window (the other matches unchanged, in their order).
 */
export async function keepXpubGaps(
  tx: Queryable,
  index: SubscriptionIndex,
  chain: ChainKey,
  block: NormalizedBlock,
  matches: readonly Match[],
  height: number,
): Promise<Match[]> {
  let confirmed = matches.filter((m): m is XpubCoinsMatch => m.eventType === 'XPUB_COINS_TRANSACTION_CONFIRMED');
  // The unconfirmed subscriptions' used flags come from the blocks as well (nothing is called back for them here).
  const unconfirmedOf = () => (index.hasXpubUnconfirmed ? matchXpub(index, block, 'XPUB_COINS_TRANSACTION_UNCONFIRMED') : []);
  let unconfirmed = unconfirmedOf();
  let grown = false;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const uses = [...usesOf(confirmed), ...usesOf(unconfirmed)];
    if (uses.length === 0) break;
    const added = await extend(tx, index, chain, await markUsed(tx, uses, height));
    if (added === 0) break;
    grown = true;
    confirmed = matchXpub(index, block);
    unconfirmed = unconfirmedOf();
  }
  if (!grown) return matches as Match[];
  return [...matches.filter((m) => m.eventType !== 'XPUB_COINS_TRANSACTION_CONFIRMED'), ...confirmed];
}

/** Derives, stores and indexes what each chain named in `edges` lacks of its window; returns how many addresses were added. */
async function extend(tx: Queryable, index: SubscriptionIndex, chain: ChainKey, edges: Map<string, WindowEdge[]>): Promise<number> {
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

/**
 * The mempool's part (ingest/mempool.ts, in its batch's transaction): an unconfirmed transaction paying a
 * derived address of an unconfirmed subscription widens that chain's window to gapLimit addresses beyond it,
 * without marking anything used (used means seen in a block), so that a second payment further out is seen
 * in the mempool too. Returns how many addresses were added; the window never shrinks, so a transaction that
 * is never mined leaves them watched, as a reorganisation does.
 */
export async function extendForPending(
  tx: Queryable,
  index: SubscriptionIndex,
  chain: ChainKey,
  matches: readonly XpubCoinsMatch<'XPUB_COINS_TRANSACTION_UNCONFIRMED'>[],
): Promise<number> {
  const uses = usesOf(matches);
  if (uses.length === 0) return 0;
  const edges = await highestDerived(tx, [...new Set(uses.map((u) => u.subscriptionId))]);
  for (const [subscriptionId, chains] of edges) {
    for (const edge of chains) {
      for (const u of uses) if (u.subscriptionId === subscriptionId && u.change === edge.change) edge.highestUsed = Math.max(edge.highestUsed, u.index);
    }
  }
  return await extend(tx, index, chain, edges);
}

/** A reorganisation back to `ancestorHeight`: the used flags of the dropped blocks are cleared; the window stays. */
export async function forgetXpubUsesAbove(tx: Queryable, chain: ChainKey, ancestorHeight: number): Promise<number> {
  return await clearUsedAbove(tx, chain, ancestorHeight);
}
