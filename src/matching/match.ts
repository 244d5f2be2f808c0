/**
 * Matching: one normalised block and the index of one chain's active subscriptions -> the events they
 * subscribed to. Pure and synchronous: no I/O, no clock; the same block and index give the same
 * matches, in block order (the block itself (BLOCK_MINED, BLOCK_HEIGHT_REACHED), then transactions,
 * then token transfers, then internal transfers, then token transfers again for the token amount event;
 * subscriptions of one target in the order they were indexed). matchRevertedBlock gives the BLOCK_REVERTED
 * matches of a block a reorganisation drops.
 *
 * The token amount event (CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER) compares whole
 * tokens after the token's decimals, which a node lookup tells: matching gives the candidates of the
 * transfer's contract (dropping those no decimals could make reach the amount), and the caller keeps a
 * candidate when tokenAmountReached() says so once it knows the decimals.
 *
 * Building the callbacks (loading the rest of each subscription, keys, items, bodies) and deciding when
 * they are due (confirmationsDue) come after, in the caller.
 */
import type { InternalTransfer, NormalizedBlock, TokenTransfer } from '../chains/types.ts';
import type { Blockchain } from '../domain/chains.ts';
import { coinTransactions, type KeyOf } from './coins.ts';
import type { SubscriptionIndex, SubscriptionRecord } from './index.ts';
import { matchXpub, type XpubCoinsMatch } from './xpub.ts';

export type Direction = 'incoming' | 'outgoing';

/**
 * What tells one event of a subscription in a block from another (with the subscription, chain and
 * block hash it makes the idempotency key): the transaction (null for the block events, whose block
 * hash alone tells them apart); the transfer's position in the block (`log:<logIndex>` for token
 * transfers, `op:<operationId>` for internal transfers, null for a mined transaction and the block
 * events); the direction of a token transfer.
 */
export interface ItemIdentity {
  transactionId: string | null;
  position: string | null;
  direction: Direction | null;
}

export interface TransactionMinedMatch {
  eventType: 'TRANSACTION_MINED';
  subscription: SubscriptionRecord;
  identity: ItemIdentity;
  transactionId: string;
}

export interface TokenTransferMatch {
  eventType: 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED' | 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION';
  subscription: SubscriptionRecord;
  identity: ItemIdentity;
  /** The subscribed address (the transfer's sender when outgoing, its recipient when incoming). */
  address: string;
  /** A transfer from the address to itself is outgoing (docs/reference/events/README.md). */
  direction: Direction;
  transfer: TokenTransfer;
}

export interface InternalTransferMatch {
  eventType: 'CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER';
  subscription: SubscriptionRecord;
  identity: ItemIdentity;
  transfer: InternalTransfer;
}

/** An event of the block itself: its callback item is the block's height, hash and timestamp. */
export interface BlockMatch {
  eventType: 'BLOCK_MINED' | 'BLOCK_HEIGHT_REACHED' | 'BLOCK_REVERTED';
  subscription: SubscriptionRecord;
  identity: ItemIdentity;
}

/** docs/reference/api.md#address-internal-transactions-confirmed: an internal transfer to or from the subscribed address. */
export interface AddressInternalMatch {
  eventType: 'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED' | 'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED_EACH_CONFIRMATION';
  subscription: SubscriptionRecord;
  identity: ItemIdentity;
  /** The subscribed address (the frame's sender when outgoing, its recipient when incoming). */
  address: string;
  /** A frame from the address to itself is outgoing. */
  direction: Direction;
  transfer: InternalTransfer;
}

/** docs/reference/api.md#tokens-transfers-for-specific-amount: a transfer of the subscribed contract; a candidate until tokenAmountReached() says yes. */
export interface TokenAmountMatch {
  eventType: 'CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER';
  subscription: SubscriptionRecord;
  identity: ItemIdentity;
  transfer: TokenTransfer;
}

/** A native-coin transaction of a watched address (see coins.ts for direction and amount). */
export interface AddressCoinsMatch {
  eventType: 'ADDRESS_COINS_TRANSACTION_CONFIRMED' | 'ADDRESS_COINS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION';
  subscription: SubscriptionRecord;
  identity: ItemIdentity;
  transactionId: string;
  /** The subscribed address (normalised). */
  address: string;
  direction: Direction;
  /** Base units. */
  amount: bigint;
}

/** A native-coin transaction whose amount is at or above the subscription's threshold. */
export interface CoinsAmountMatch {
  eventType: 'CONFIRMED_COINS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER';
  subscription: SubscriptionRecord;
  identity: ItemIdentity;
  transactionId: string;
  /** Base units. */
  amount: bigint;
}

export type Match =
  | XpubCoinsMatch
  | TransactionMinedMatch
  | TokenTransferMatch
  | InternalTransferMatch
  | BlockMatch
  | AddressInternalMatch
  | TokenAmountMatch
  | AddressCoinsMatch
  | CoinsAmountMatch;

const BLOCK_IDENTITY: ItemIdentity = Object.freeze({ transactionId: null, position: null, direction: null });

/**
 * Every event of `block` that an indexed subscription asked for: one match per (subscription, mined
 * transaction), per (subscription, token transfer touching its address), per (subscription, internal
 * transfer with amount >= its threshold, compared exactly in base units). `blockchain` must be the
 * index's: a block of another chain is a wiring mistake, and throws.
 */
export function matchBlock(index: SubscriptionIndex, block: NormalizedBlock, blockchain: Blockchain): Match[] {
  if (blockchain !== index.blockchain) throw new Error(`a ${blockchain} block cannot be matched against the ${index.blockchain} index`);
  const matches: Match[] = [];
  const { transactionIds, tokenTransfers, internalTransfers, coinMovements } = block;
  const outputs = block.utxo?.outputs ?? [];

  // Every key of the block is looked up first, table by table, all at once (see TargetTable.firstOfEach:
  // the lookups' cache misses overlap); the loops below then read the slots in block order.
  const transactionSlots = new Int32Array(transactionIds.length);
  index.firstTransactionSlots(transactionIds, transactionIds.length, transactionSlots);
  // The addresses: each token transfer's sender and recipient, each internal transfer's, each coin movement's and UTXO output's.
  // (None when no address subscription is indexed: all -1, the addresses not even gathered.)
  const addresses: string[] = [];
  const internalAt = 2 * tokenTransfers.length;
  const coinsAt = internalAt + 2 * internalTransfers.length;
  const addressSlots = new Int32Array(coinsAt + coinMovements.length + outputs.length);
  if (index.hasAddressSubscriptions) {
    for (const transfer of tokenTransfers) addresses.push(transfer.from, transfer.to);
    for (const transfer of internalTransfers) addresses.push(transfer.from, transfer.to);
    for (const movement of coinMovements) addresses.push(movement.address);
    for (const output of outputs) addresses.push(output.address);
    index.firstAddressSlots(addresses, addresses.length, addressSlots);
  } else addressSlots.fill(-1);
  const contracts = tokenTransfers.map((transfer) => transfer.contract);
  const contractSlots = new Int32Array(contracts.length);
  index.firstContractSlots(contracts, contracts.length, contractSlots);

  for (let slot = index.firstBlockSlot(); slot >= 0; slot = index.nextSlot(slot))
    matches.push({ eventType: 'BLOCK_MINED', subscription: index.record(slot), identity: BLOCK_IDENTITY });
  for (let slot = index.firstHeightSlot(block.height); slot >= 0; slot = index.nextSlot(slot))
    matches.push({ eventType: 'BLOCK_HEIGHT_REACHED', subscription: index.record(slot), identity: BLOCK_IDENTITY });

  for (let t = 0; t < transactionIds.length; t++) {
    const transactionId = transactionIds[t] as string;
    for (let slot = transactionSlots[t] as number; slot >= 0; slot = index.nextSlot(slot)) {
      matches.push({
        eventType: 'TRANSACTION_MINED',
        subscription: index.record(slot, transactionId),
        identity: { transactionId, position: null, direction: null },
        transactionId,
      });
    }
  }

  for (let t = 0; t < tokenTransfers.length; t++) {
    const transfer = tokenTransfers[t] as TokenTransfer;
    const from = addressSlots[2 * t] as number;
    if (from >= 0) pushTokenMatches(matches, index, from, transfer, transfer.from, 'outgoing');
    if (transfer.to === transfer.from) continue;
    const to = addressSlots[2 * t + 1] as number;
    if (to >= 0) pushTokenMatches(matches, index, to, transfer, transfer.to, 'incoming');
  }

  for (let t = 0; t < internalTransfers.length; t++) {
    const transfer = internalTransfers[t] as InternalTransfer;
    const from = addressSlots[internalAt + 2 * t] as number;
    if (from >= 0) pushInternalMatches(matches, index, from, transfer, transfer.from, 'outgoing');
    if (transfer.to !== transfer.from) {
      const to = addressSlots[internalAt + 2 * t + 1] as number;
      if (to >= 0) pushInternalMatches(matches, index, to, transfer, transfer.to, 'incoming');
    }
    const n = index.thresholdsAtMost(transfer.amount);
    for (let i = 0; i < n; i++) {
      const slot = index.thresholdSlotAt(i);
      if (slot < 0) continue;
      matches.push({
        eventType: 'CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER',
        subscription: index.record(slot),
        identity: { transactionId: transfer.parentTransactionId, position: `op:${transfer.operationId}`, direction: null },
        transfer,
      });
    }
  }

  for (let t = 0; t < tokenTransfers.length; t++) {
    const first = contractSlots[t] as number;
    if (first < 0) continue;
    const transfer = tokenTransfers[t] as TokenTransfer;
    // A candidate is a subscription whose whole tokens some decimals could make the transfer reach: an
    // NFT counts as 1, and base units are never fewer than whole tokens. `units` is that most, also as
    // a number: Number() rounds to nearest, never across an integer below 2^53, so it compares exactly
    // with the small amounts kept in the slots (no bigint comparison, no read of an amount kept elsewhere).
    const units = isNonFungible(transfer) ? 1n : (transfer.amount as bigint);
    const approxUnits = Number(units);
    for (let slot = first; slot >= 0; slot = index.nextSlot(slot)) {
      const small = index.smallTokenAmountOf(slot);
      if (small >= 0 ? small > approxUnits : index.tokenAmountOf(slot) > units) continue;
      matches.push({
        eventType: 'CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER',
        subscription: index.record(slot, transfer.contract),
        identity: { transactionId: transfer.transactionId, position: `log:${transfer.logIndex}`, direction: null },
        transfer,
      });
    }
  }
  // The key of a coin entry (movement, then output) is its address's first coin slot.
  // (Skipped when nothing could match: an index of wallet keys alone has no address subscription.)
  if (index.hasAddressSubscriptions || index.hasCoinThresholds)
    pushCoinMatches(matches, index, block, (_address, entry) => index.coinSlotFrom(addressSlots[coinsAt + entry] as number));
  // Wallet keys last (docs/concepts/wallet-keys.md): one match per transaction and subscription, however many of its addresses.
  if (index.hasXpub) for (const m of matchXpub(index, block)) matches.push(m);
  return matches;
}

const isNonFungible = (transfer: TokenTransfer): boolean =>
  transfer.tokenType === 'ERC-721' || transfer.tokenType === 'TRC-721' || transfer.amount === undefined;

/**
 * docs/reference/api.md#settled-request-fields: whether the transfer of a token amount match reaches the subscribed whole
 * tokens, compared exactly in base units after the token's `decimals`; an ERC-721/TRC-721 transfer
 * counts as 1 whatever its decimals.
 */
export function tokenAmountReached(match: TokenAmountMatch, decimals: number): boolean {
  const whole = match.subscription.amountHigherThan ?? 0n;
  if (isNonFungible(match.transfer)) return whole <= 1n;
  return (match.transfer.amount as bigint) >= whole * 10n ** BigInt(decimals);
}

/**
 * Coin events (after the other kinds): per (ADDRESS_COINS subscription, coin transaction of its
 * address), then per (coin-amount subscription, transaction with amount >= its threshold). `block`'s
 * coinMovements must have the ledger's spends resolved (wallets/ledger.ts resolveSpends).
 */
function pushCoinMatches(matches: Match[], index: SubscriptionIndex, block: NormalizedBlock, keyOf: KeyOf): void {
  const coins = coinTransactions(block, keyOf, index.hasCoinThresholds);
  for (const [i, c] of coins.addresses.entries()) {
    for (let slot = coins.keys[i] as number; slot >= 0; slot = index.nextSlot(slot)) {
      const eventType = index.eventTypeOf(slot);
      if (eventType !== 'ADDRESS_COINS_TRANSACTION_CONFIRMED' && eventType !== 'ADDRESS_COINS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION') continue;
      matches.push({
        eventType,
        subscription: index.record(slot, c.address),
        identity: { transactionId: c.transactionId, position: null, direction: c.direction },
        transactionId: c.transactionId,
        address: c.address,
        direction: c.direction,
        amount: c.amount,
      });
    }
  }
  for (const t of coins.amounts) {
    const n = index.coinThresholdsAtMost(t.amount);
    for (let i = 0; i < n; i++) {
      const slot = index.coinThresholdSlotAt(i);
      if (slot < 0) continue;
      matches.push({
        eventType: 'CONFIRMED_COINS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER',
        subscription: index.record(slot),
        identity: { transactionId: t.transactionId, position: null, direction: null },
        transactionId: t.transactionId,
        amount: t.amount,
      });
    }
  }
}

/** The matches of a block that a reorganisation drops: one BLOCK_REVERTED match per indexed subscription of it. */
export function matchRevertedBlock(index: SubscriptionIndex): BlockMatch[] {
  const matches: BlockMatch[] = [];
  for (let slot = index.firstRevertedSlot(); slot >= 0; slot = index.nextSlot(slot))
    matches.push({ eventType: 'BLOCK_REVERTED', subscription: index.record(slot), identity: BLOCK_IDENTITY });
  return matches;
}

/**
 * The confirmations a match's block must reach before its callback is due: a mined transaction at
 * once (1, the block itself), as the block events; a token event at the subscription's receiveCallbackOn, or
 * `chainDefault` when it asked for none; an internal transfer at `chainDefault`.
 */
export function confirmationsDue(match: Match, chainDefault: number): number {
  switch (match.eventType) {
    case 'TRANSACTION_MINED':
      return 1;
    case 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED':
      return match.subscription.receiveCallbackOn ?? chainDefault;
    // Each-confirmation events: the last confirmation reported (callbacks go out at 1, 2, ... this).
    case 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION':
      return match.subscription.receiveCallbackOn ?? chainDefault;
    case 'CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER':
      return chainDefault;
    case 'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED':
    case 'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED_EACH_CONFIRMATION':
      return match.subscription.receiveCallbackOn ?? chainDefault;
    // docs/reference/api.md#settled-when-events-fire: at the chain's confirmations, as the internal amount event.
    case 'CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER':
    case 'ADDRESS_COINS_TRANSACTION_CONFIRMED':
    case 'ADDRESS_COINS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION':
    case 'XPUB_COINS_TRANSACTION_CONFIRMED':
      return match.subscription.receiveCallbackOn ?? chainDefault;
    // docs/reference/api.md#settled-when-events-fire: at the chain's confirmations, like the internal amount event.
    case 'CONFIRMED_COINS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER':
      return chainDefault;
    // docs/reference/api.md#settled-when-events-fire: when the block is applied (its first confirmation).
    case 'BLOCK_MINED':
    case 'BLOCK_HEIGHT_REACHED':
    case 'BLOCK_REVERTED':
      return 1;
  }
}

function pushTokenMatches(matches: Match[], index: SubscriptionIndex, first: number, transfer: TokenTransfer, address: string, direction: Direction): void {
  const position = `log:${transfer.logIndex}`;
  for (let slot = first; slot >= 0; slot = index.nextSlot(slot)) {
    // The address table serves every address kind: token transfers match the token ones.
    const eventType = index.eventTypeOf(slot);
    if (eventType !== 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED' && eventType !== 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION') continue;
    matches.push({
      eventType,
      subscription: index.record(slot, address),
      identity: { transactionId: transfer.transactionId, position, direction },
      address,
      direction,
      transfer,
    });
  }
}

function pushInternalMatches(
  matches: Match[],
  index: SubscriptionIndex,
  first: number,
  transfer: InternalTransfer,
  address: string,
  direction: Direction,
): void {
  const position = `op:${transfer.operationId}`;
  for (let slot = first; slot >= 0; slot = index.nextSlot(slot)) {
    const eventType = index.eventTypeOf(slot);
    if (eventType !== 'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED' && eventType !== 'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED_EACH_CONFIRMATION') continue;
    matches.push({
      eventType,
      subscription: index.record(slot, address),
      identity: { transactionId: transfer.parentTransactionId, position, direction },
      address,
      direction,
      transfer,
    });
  }
}
