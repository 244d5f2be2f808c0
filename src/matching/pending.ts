/**
 * Matching of mempool transactions (docs/reference/api.md#address-coins-transactions-unconfirmed and #address-tokens-transactions-unconfirmed): the same address table and the
 * same coin rule (coins.ts: UTXO direction and amount per docs/reference/events/README.md#amount-and-direction) as the block events, for the two
 * unconfirmed kinds only. Pure and synchronous.
 *
 * Identity: one event per (transaction, subscription), and for tokens per direction as well (a transfer
 * from the address to itself is one outgoing event). The idempotency key takes the literal block hash
 * `mempool`, so it can never equal a confirmed event's key.
 */
import type { NormalizedBlock, PendingTransactions, TokenMetadata, TokenTransfer } from '../chains/types.ts';
import { formatUnits } from '../domain/amounts.ts';
import { type Blockchain, CHAINS, type Network } from '../domain/chains.ts';
import { addressCoinTransactions } from './coins.ts';
import { idempotencyKey, tokenOf, walletKeyItem } from './identity.ts';
import type { SubscriptionIndex, SubscriptionRecord } from './index.ts';
import type { Direction } from './match.ts';
import { matchXpub, type XpubCoinsMatch } from './xpub.ts';

export interface PendingCoinsMatch {
  eventType: 'ADDRESS_COINS_TRANSACTION_UNCONFIRMED';
  subscription: SubscriptionRecord;
  transactionId: string;
  address: string;
  direction: Direction;
  /** Base units. */
  amount: bigint;
}

export interface PendingTokensMatch {
  eventType: 'ADDRESS_TOKENS_TRANSACTION_UNCONFIRMED';
  subscription: SubscriptionRecord;
  transactionId: string;
  address: string;
  direction: Direction;
  transfer: TokenTransfer;
}

/** XPUB_COINS_TRANSACTION_UNCONFIRMED (docs/concepts/wallet-keys.md): one per (transaction, subscription), every address of the wallet it touches. */
export type PendingXpubMatch = XpubCoinsMatch<'XPUB_COINS_TRANSACTION_UNCONFIRMED'>;

export type PendingMatch = PendingCoinsMatch | PendingTokensMatch | PendingXpubMatch;

/** The marker that stands for the block hash in a mempool event's idempotency key. */
export const MEMPOOL_BLOCK_HASH = 'mempool';

/** Whether an unconfirmed subscription of `eventType` watches `address`. */
function watches(index: SubscriptionIndex, address: string, eventType: PendingMatch['eventType']): boolean {
  for (let slot = index.firstAddressSlot(address); slot >= 0; slot = index.nextSlot(slot)) if (index.eventTypeOf(slot) === eventType) return true;
  return false;
}

/**
 * Every unconfirmed event of `pending`: per (coin subscription, coin transaction of its address), then per
 * (token subscription, transfer from or to its address). UTXO spends must be resolved first, as for a block.
 */
export function matchPending(index: SubscriptionIndex, pending: PendingTransactions, blockchain: Blockchain): PendingMatch[] {
  if (blockchain !== index.blockchain) throw new Error(`${blockchain} transactions cannot be matched against the ${index.blockchain} index`);
  const matches: PendingMatch[] = [];
  if (!index.hasUnconfirmed) return matches;
  // coins.ts reads a block: the pending transactions stand in for one (its header is never read).
  const asBlock = { ...pending, height: 0, hash: MEMPOOL_BLOCK_HASH, parentHash: '', timestamp: 0, internalTransfers: [] } as NormalizedBlock;
  for (const c of addressCoinTransactions(asBlock, (address) => watches(index, address, 'ADDRESS_COINS_TRANSACTION_UNCONFIRMED'))) {
    for (let slot = index.firstAddressSlot(c.address); slot >= 0; slot = index.nextSlot(slot)) {
      if (index.eventTypeOf(slot) !== 'ADDRESS_COINS_TRANSACTION_UNCONFIRMED') continue;
      matches.push({ eventType: 'ADDRESS_COINS_TRANSACTION_UNCONFIRMED', subscription: index.record(slot), ...c });
    }
  }
  const tokenMatches = new Map<string, PendingTokensMatch>();
  for (const transfer of pending.tokenTransfers) {
    pushTokens(matches, tokenMatches, index, transfer, transfer.from, 'outgoing');
    if (transfer.to !== transfer.from) pushTokens(matches, tokenMatches, index, transfer, transfer.to, 'incoming');
  }
  // Wallet keys last, as in a block (match.ts).
  for (const m of matchPendingXpub(index, pending)) matches.push(m);
  return matches;
}

/** The XPUB_COINS_TRANSACTION_UNCONFIRMED matches of `pending` alone (the mempool matches them again when their windows grow). */
export function matchPendingXpub(index: SubscriptionIndex, pending: PendingTransactions): PendingXpubMatch[] {
  if (!index.hasXpubUnconfirmed) return [];
  const asBlock = { ...pending, height: 0, hash: MEMPOOL_BLOCK_HASH, parentHash: '', timestamp: 0, internalTransfers: [] } as NormalizedBlock;
  return matchXpub(index, asBlock, 'XPUB_COINS_TRANSACTION_UNCONFIRMED');
}

/**
 * One token event per (subscription, transaction, direction), as its key says: transfers of one transaction
 * that meet on the same side of a subscription's address (an Omni Send To Many from it, a receiver listed
 * twice) make one event with their amounts added when they move the same token; else the first one.
 */
function pushTokens(
  matches: PendingMatch[],
  tokenMatches: Map<string, PendingTokensMatch>,
  index: SubscriptionIndex,
  transfer: TokenTransfer,
  address: string,
  direction: Direction,
): void {
  for (let slot = index.firstAddressSlot(address); slot >= 0; slot = index.nextSlot(slot)) {
    if (index.eventTypeOf(slot) !== 'ADDRESS_TOKENS_TRANSACTION_UNCONFIRMED') continue;
    const subscription = index.record(slot);
    const key = `${subscription.id} ${transfer.transactionId} ${direction}`;
    const earlier = tokenMatches.get(key);
    if (earlier) {
      const first = earlier.transfer;
      if (first.tokenType === transfer.tokenType && first.contract === transfer.contract && first.amount !== undefined && transfer.amount !== undefined)
        earlier.transfer = { ...first, amount: first.amount + transfer.amount };
      continue;
    }
    const match: PendingTokensMatch = {
      eventType: 'ADDRESS_TOKENS_TRANSACTION_UNCONFIRMED',
      subscription,
      transactionId: transfer.transactionId,
      address,
      direction,
      transfer,
    };
    tokenMatches.set(key, match);
    matches.push(match);
  }
}

/** The key of a mempool event: (subscription, chain, transaction, direction), fixed whenever and however often the transaction is seen. */
export function pendingIdempotencyKey(match: PendingMatch, chain: { blockchain: Blockchain; network: Network }): string {
  return idempotencyKey({
    subscriptionId: match.subscription.id,
    blockchain: chain.blockchain,
    network: chain.network,
    blockHash: MEMPOOL_BLOCK_HASH,
    transactionId: match.transactionId,
    position: null,
    direction: match.eventType === 'ADDRESS_TOKENS_TRANSACTION_UNCONFIRMED' ? match.direction : null,
  });
}

const UNKNOWN_TOKEN: TokenMetadata = { name: '', symbol: '', decimals: 0 };

/**
 * The callback `data.item` (docs/reference/api.md#address-coins-transactions-unconfirmed and #address-tokens-transactions-unconfirmed; no minedInBlock). `firstSeen` is Unix
 * seconds when herald first saw the transaction in the node's mempool; `subscribedAs` the address as the
 * customer spelled it.
 */
export function pendingItem(
  match: PendingMatch,
  chain: { blockchain: Blockchain; network: Network },
  firstSeen: number,
  token?: TokenMetadata,
  subscribedAs?: string | null,
): Record<string, unknown> {
  const { blockchain, network } = chain;
  // docs/reference/events/xpub-coins-transaction-unconfirmed.md: the confirmed item's fields without minedInBlock, with firstSeenInMempoolTimestamp.
  if (match.eventType === 'XPUB_COINS_TRANSACTION_UNCONFIRMED') return { ...walletKeyItem(match, chain), firstSeenInMempoolTimestamp: firstSeen };
  const address = subscribedAs ?? match.address;
  if (match.eventType === 'ADDRESS_COINS_TRANSACTION_UNCONFIRMED') {
    const { unit, decimals } = CHAINS[blockchain];
    return {
      blockchain,
      network,
      address,
      transactionId: match.transactionId,
      amount: formatUnits(match.amount, decimals),
      unit,
      direction: match.direction,
      firstSeenInMempoolTimestamp: firstSeen,
    };
  }
  return {
    blockchain,
    network,
    address,
    transactionId: match.transactionId,
    tokenType: match.transfer.tokenType,
    token: tokenOf(match.transfer, token ?? UNKNOWN_TOKEN),
    direction: match.direction,
    firstSeenInMempoolTimestamp: firstSeen,
  };
}

/** Why an announced unconfirmed transaction went away (docs/reference/events/address-coins-transaction-unconfirmed-dropped.md). */
export type DropReason = 'replaced' | 'conflicted' | 'evicted';

/** The marker that stands for the block hash in a dropped event's idempotency key: one per (subscription, transaction). */
export const DROPPED_BLOCK_HASH = 'dropped';

/** The key of a dropped event: (subscription, chain, transaction, 'dropped'), so that a restart or a second sighting can never send it twice. */
export function droppedIdempotencyKey(subscriptionId: string, chain: { blockchain: Blockchain; network: Network }, transactionId: string): string {
  return idempotencyKey({
    subscriptionId,
    blockchain: chain.blockchain,
    network: chain.network,
    blockHash: DROPPED_BLOCK_HASH,
    transactionId,
    position: null,
    direction: null,
  });
}

/** The dropped callback's `data.item`: the unconfirmed one's, with why it went and what took its place. */
export function droppedItem(announced: Record<string, unknown>, reason: DropReason, replacedByTransactionId?: string): Record<string, unknown> {
  const { safety: _safety, ...item } = announced;
  return { ...item, reason, ...(replacedByTransactionId !== undefined && { replacedByTransactionId }) };
}
