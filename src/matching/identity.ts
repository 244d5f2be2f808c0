/**
 * What a match becomes in its callback: the idempotency key (docs/reference/events/README.md) and the `data.item`
 * of each event. Pure functions of the match, the block and looked-up token metadata, so that a
 * retry, a resend or a rebuild after a crash gives the same key and the same item.
 */
import { createHash } from 'node:crypto';
import type { InternalTransfer, TokenMetadata, TokenTransfer } from '../chains/types.ts';
import { formatUnits } from '../domain/amounts.ts';
import type { BlockRef } from '../domain/blocks.ts';
import { type Blockchain, CHAINS, type Network } from '../domain/chains.ts';
import type { Direction, Match } from './match.ts';
import type { XpubCoinsMatch, XpubEventType } from './xpub.ts';

export interface ChainRef {
  blockchain: Blockchain;
  network: Network;
}

/** The identity of one callback: one subscription, one event, one block. */
export interface IdempotencyParts {
  subscriptionId: string;
  blockchain: Blockchain;
  network: Network;
  blockHash: string;
  /** Null for the block events (BLOCK_MINED, BLOCK_HEIGHT_REACHED, BLOCK_REVERTED): the block hash tells them apart. */
  transactionId: string | null;
  /** `log:<logIndex>`, `op:<operationId>`, or null for a mined transaction and the block events. */
  position: string | null;
  direction: Direction | null;
  /**
   * Each-confirmation events only: the confirmation this callback reports (1 to the subscription's
   * count), so each gets its own key. Absent for every other event (their keys are unchanged by it).
   */
  confirmation?: number;
}

/** Versions the encoding: changing it would change every key, so it never changes silently. */
const KEY_DOMAIN = 'herald/idempotency-key/v1';

/**
 * 64 lower-case hex: SHA-256 of the parts, each as `<UTF-8 byte length>:<value>` in a fixed order
 * (length prefixes make the encoding unambiguous whatever the values contain; null is an absent
 * field, encoded as `-`, which no length prefix can be mistaken for). Values are taken as they are:
 * ids and hashes arrive normalised by the chain adapter, so one event always spells them the same way.
 */
export function idempotencyKey(parts: IdempotencyParts): string {
  const hash = createHash('sha256');
  for (const value of [
    KEY_DOMAIN,
    parts.subscriptionId,
    parts.blockchain,
    parts.network,
    parts.blockHash,
    parts.transactionId,
    parts.position,
    parts.direction,
  ]) {
    hash.update(value === null ? '-' : `${Buffer.byteLength(value)}:${value}`);
  }
  if (parts.confirmation !== undefined) hash.update(`confirmation:${parts.confirmation}`);
  return hash.digest('hex');
}

/** The idempotency key of `match` in `block` on `chain` (of its `confirmation`-th callback, for an each-confirmation event). */
export function matchIdempotencyKey(match: Match, chain: ChainRef, block: Pick<BlockRef, 'hash'>, confirmation?: number): string {
  return idempotencyKey({
    subscriptionId: match.subscription.id,
    blockchain: chain.blockchain,
    network: chain.network,
    blockHash: block.hash,
    ...match.identity,
    ...(confirmation !== undefined && { confirmation }),
  });
}

/**
 * The item of the callback of an each-confirmation event at confirmation `current` of `target`
 * (docs/reference/api.md#address-coins-transactions-confirmed-each-confirmation, #address-internal-transactions-confirmed-each-confirmation and #address-tokens-transactions-confirmed-each-confirmation): the event's item with the two counts.
 */
export function eachConfirmationItem(item: Record<string, unknown>, current: number, target: number): Record<string, unknown> {
  return { ...item, currentConfirmations: current, targetConfirmations: target };
}

const UNKNOWN_TOKEN: TokenMetadata = { name: '', symbol: '', decimals: 0 };

/** The item of an internal-transfer event, about `address`: the transfer and its amount in the chain's coin. */
function internalTransferItem(transfer: InternalTransfer, address: string, minedInBlock: BlockRef, chain: ChainRef): Record<string, unknown> {
  const { unit, decimals } = CHAINS[chain.blockchain];
  return {
    blockchain: chain.blockchain,
    network: chain.network,
    address,
    minedInBlock,
    parentTransactionId: transfer.parentTransactionId,
    operationId: transfer.operationId,
    amount: formatUnits(transfer.amount, decimals),
    unit,
  };
}

/**
 * The item of a wallet-key event (docs/reference/events/xpub-coins-transaction-confirmed.md and
 * xpub-coins-transaction-unconfirmed.md): the key as subscribed, every address of the wallet the
 * transaction touched; minedInBlock for the confirmed event only.
 */
export function walletKeyItem(match: XpubCoinsMatch<XpubEventType>, chain: ChainRef, minedInBlock?: BlockRef): Record<string, unknown> {
  const { unit, decimals } = CHAINS[chain.blockchain];
  const item: Record<string, unknown> = { blockchain: chain.blockchain, network: chain.network, [match.walletKey.field]: match.walletKey.text };
  item.transactionId = match.transactionId;
  if (minedInBlock) item.minedInBlock = minedInBlock;
  item.direction = match.direction;
  item.amount = formatUnits(match.amount, decimals);
  item.unit = unit;
  if (match.fee !== null) item.fee = formatUnits(match.fee, decimals);
  item.addresses = match.addresses.map((a) => ({
    address: a.address,
    derivationPath: a.derivationPath,
    change: a.change,
    received: formatUnits(a.received, decimals),
    sent: formatUnits(a.sent, decimals),
  }));
  return item;
}

/**
 * The `data.item` of the callback of `match`, per docs/reference/events/README.md. `subscribedAs` is the subscription's
 * transaction id or address as the customer spelled it (e.g. a checksummed EVM address, a Tron 41-hex
 * address): the item echoes that spelling, so a client comparing strings finds its own; matching and the
 * idempotency key use the normalised form, which names the same thing.
 */
export function callbackItem(match: Match, block: BlockRef, chain: ChainRef, token?: TokenMetadata, subscribedAs?: string | null): Record<string, unknown> {
  const minedInBlock = { height: block.height, hash: block.hash, timestamp: block.timestamp };
  const { blockchain, network } = chain;
  switch (match.eventType) {
    case 'TRANSACTION_MINED':
      return { blockchain, network, transactionId: subscribedAs ?? match.transactionId, minedInBlock };
    case 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED':
    case 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION': {
      const { transfer } = match;
      return {
        blockchain,
        network,
        address: subscribedAs ?? match.address,
        minedInBlock,
        transactionId: transfer.transactionId,
        tokenType: transfer.tokenType,
        token: tokenOf(match.transfer, token ?? UNKNOWN_TOKEN),
        direction: match.direction,
      };
    }
    case 'CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER':
      return internalTransferItem(match.transfer, match.transfer.to, minedInBlock, chain);
    // docs/reference/api.md#address-internal-transactions-confirmed: unit is the chain's native symbol in upper case (#settled-callback-contents).
    case 'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED':
    case 'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED_EACH_CONFIRMATION':
      return { ...internalTransferItem(match.transfer, subscribedAs ?? match.address, minedInBlock, chain), direction: match.direction };
    // docs/reference/api.md#tokens-transfers-for-specific-amount and #settled-callback-contents: no address or direction; tron sends its TRC-20/TRC-721 objects.
    case 'CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER': {
      const { transfer } = match;
      return {
        blockchain,
        network,
        transactionId: transfer.transactionId,
        minedInBlock,
        tokenType: transfer.tokenType,
        token: tokenOf(transfer, token ?? UNKNOWN_TOKEN),
      };
    }
    // docs/reference/api.md#address-coins-transactions-confirmed and #coins-transactions-for-specific-amount.
    case 'ADDRESS_COINS_TRANSACTION_CONFIRMED':
    case 'ADDRESS_COINS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION': {
      const { unit, decimals } = CHAINS[blockchain];
      return {
        blockchain,
        network,
        address: subscribedAs ?? match.address,
        minedInBlock,
        transactionId: match.transactionId,
        amount: formatUnits(match.amount, decimals),
        unit,
        direction: match.direction,
      };
    }
    case 'CONFIRMED_COINS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER': {
      const { unit, decimals } = CHAINS[blockchain];
      return { blockchain, network, transactionId: match.transactionId, minedInBlock, amount: formatUnits(match.amount, decimals), unit };
    }
    // docs/reference/events/xpub-coins-transaction-confirmed.md: the key as subscribed, every address of the wallet touched.
    case 'XPUB_COINS_TRANSACTION_CONFIRMED':
      return walletKeyItem(match, chain, minedInBlock);
    // docs/reference/api.md#block-height-reached, #block-mined and #reverted-block: flat, the block itself (for BLOCK_REVERTED the dropped one).
    case 'BLOCK_MINED':
    case 'BLOCK_HEIGHT_REACHED':
    case 'BLOCK_REVERTED':
      return { blockchain, network, height: block.height, hash: block.hash, timestamp: block.timestamp };
  }
}

export function tokenOf(transfer: TokenTransfer, meta: TokenMetadata): Record<string, string> {
  switch (transfer.tokenType) {
    case 'ERC-721':
    case 'TRC-721':
      return { name: meta.name, symbol: meta.symbol, tokenId: transfer.tokenId ?? '', contractAddress: transfer.contract };
    case 'OMNI':
      return {
        name: meta.name,
        propertyId: transfer.contract,
        transactionType: meta.transactionType ?? 'Simple Send',
        createdByTransactionId: meta.createdByTransactionId ?? '',
        amount: formatUnits(transfer.amount ?? 0n, meta.decimals),
      };
    default:
      return {
        name: meta.name,
        symbol: meta.symbol,
        decimals: String(meta.decimals),
        amount: formatUnits(transfer.amount ?? 0n, meta.decimals),
        contractAddress: transfer.contract,
      };
  }
}
