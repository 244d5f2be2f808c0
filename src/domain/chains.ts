/**
 * The chains vocabulary: which blockchains and networks exist, which endpoint accepts which, their
 * native unit and the address family that validates their addresses. No I/O.
 *
 * Glossary
 * - blockchain: one of the eleven chain names of the contract (`bitcoin`, `ethereum`, ...).
 * - network: `mainnet` or the chain's one test network (`testnet`, `goerli`, `mordor`, `nile`).
 * - family: the address/transaction-id format and node dialect shared by several chains.
 * - unit: the ticker of the native coin; `decimals` converts base units (satoshi, wei, drop, sun).
 */

export const BLOCKCHAINS = [
  'bitcoin',
  'bitcoin-cash',
  'litecoin',
  'dogecoin',
  'dash',
  'ethereum',
  'ethereum-classic',
  'xrp',
  'binance-smart-chain',
  'zcash',
  'tron',
] as const;
export type Blockchain = (typeof BLOCKCHAINS)[number];

export const NETWORKS = ['mainnet', 'testnet', 'mordor', 'nile', 'goerli'] as const;
export type Network = (typeof NETWORKS)[number];

export type ChainFamily = 'utxo' | 'evm' | 'tron' | 'xrp';

export interface ChainInfo {
  family: ChainFamily;
  /** The networks this blockchain takes; the first is always mainnet. */
  networks: readonly Network[];
  unit: string;
  /** Decimal places between the base unit and `unit`. */
  decimals: number;
}

export const CHAINS: Readonly<Record<Blockchain, ChainInfo>> = {
  bitcoin: { family: 'utxo', networks: ['mainnet', 'testnet'], unit: 'BTC', decimals: 8 },
  'bitcoin-cash': { family: 'utxo', networks: ['mainnet', 'testnet'], unit: 'BCH', decimals: 8 },
  litecoin: { family: 'utxo', networks: ['mainnet', 'testnet'], unit: 'LTC', decimals: 8 },
  dogecoin: { family: 'utxo', networks: ['mainnet', 'testnet'], unit: 'DOGE', decimals: 8 },
  dash: { family: 'utxo', networks: ['mainnet', 'testnet'], unit: 'DASH', decimals: 8 },
  zcash: { family: 'utxo', networks: ['mainnet', 'testnet'], unit: 'ZEC', decimals: 8 },
  xrp: { family: 'xrp', networks: ['mainnet', 'testnet'], unit: 'XRP', decimals: 6 },
  ethereum: { family: 'evm', networks: ['mainnet', 'goerli'], unit: 'ETH', decimals: 18 },
  'ethereum-classic': { family: 'evm', networks: ['mainnet', 'mordor'], unit: 'ETC', decimals: 18 },
  'binance-smart-chain': { family: 'evm', networks: ['mainnet', 'testnet'], unit: 'BNB', decimals: 18 },
  tron: { family: 'tron', networks: ['mainnet', 'nile'], unit: 'TRX', decimals: 6 },
};

export const EVENT_TYPES = [
  'TRANSACTION_MINED',
  'ADDRESS_TOKENS_TRANSACTION_CONFIRMED',
  'CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER',
  'BLOCK_MINED',
  'BLOCK_HEIGHT_REACHED',
  'BLOCK_REVERTED',
  'ADDRESS_TOKENS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION',
  'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED',
  'CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER',
  'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED_EACH_CONFIRMATION',
  'ADDRESS_COINS_TRANSACTION_CONFIRMED',
  'CONFIRMED_COINS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER',
  'ADDRESS_COINS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION',
  'ADDRESS_COINS_TRANSACTION_UNCONFIRMED',
  'ADDRESS_TOKENS_TRANSACTION_UNCONFIRMED',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** Which blockchains each subscription endpoint accepts (contract section 2; CATALOGUE.md section 2.0 and 7.1). */
export const EVENT_BLOCKCHAINS: Readonly<Record<EventType, readonly Blockchain[]>> = {
  TRANSACTION_MINED: BLOCKCHAINS,
  ADDRESS_TOKENS_TRANSACTION_CONFIRMED: ['bitcoin', 'ethereum', 'ethereum-classic', 'binance-smart-chain', 'tron'],
  CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER: ['ethereum', 'ethereum-classic', 'binance-smart-chain', 'tron'],
  BLOCK_MINED: BLOCKCHAINS,
  BLOCK_HEIGHT_REACHED: BLOCKCHAINS,
  // On xrp accepted but never fired: herald follows validated ledgers only, which do not revert.
  BLOCK_REVERTED: BLOCKCHAINS,
  ADDRESS_TOKENS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION: ['bitcoin', 'ethereum', 'ethereum-classic', 'binance-smart-chain', 'tron'],
  ADDRESS_INTERNAL_TRANSACTION_CONFIRMED: ['ethereum', 'ethereum-classic', 'binance-smart-chain', 'tron'],
  CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER: ['ethereum', 'ethereum-classic', 'binance-smart-chain', 'tron'],
  ADDRESS_INTERNAL_TRANSACTION_CONFIRMED_EACH_CONFIRMATION: ['ethereum', 'ethereum-classic', 'binance-smart-chain', 'tron'],
  ADDRESS_COINS_TRANSACTION_CONFIRMED: BLOCKCHAINS,
  CONFIRMED_COINS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER: BLOCKCHAINS,
  ADDRESS_COINS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION: BLOCKCHAINS,
  // CATALOGUE.md section 2.0: not xrp nor tron (their nodes' pending pools are not read; see the README).
  ADDRESS_COINS_TRANSACTION_UNCONFIRMED: [
    'bitcoin',
    'bitcoin-cash',
    'litecoin',
    'dogecoin',
    'dash',
    'zcash',
    'ethereum',
    'ethereum-classic',
    'binance-smart-chain',
  ],
  // Omni (bitcoin) has no mempool reader: Omni Core tells an Omni transfer's details of mined transactions only.
  ADDRESS_TOKENS_TRANSACTION_UNCONFIRMED: ['ethereum', 'ethereum-classic'],
};

/**
 * Event types fired from the chain's mempool (CATALOGUE.md sections 2.3 and 2.7) by ingest/mempool.ts,
 * once per (transaction, subscription) when the transaction is first seen unconfirmed; never from a block.
 */
export const UNCONFIRMED_EVENTS: ReadonlySet<EventType> = new Set(['ADDRESS_COINS_TRANSACTION_UNCONFIRMED', 'ADDRESS_TOKENS_TRANSACTION_UNCONFIRMED']);

/**
 * Event types that send one callback at every confirmation from 1 to the subscription's count
 * (CATALOGUE.md sections 2.2, 2.5, 2.6), each with its current and target count and its own key.
 */
export const EACH_CONFIRMATION_EVENTS: ReadonlySet<EventType> = new Set([
  'ADDRESS_TOKENS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION',
  'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED_EACH_CONFIRMATION',
  'ADDRESS_COINS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION',
]);

export function isBlockchain(value: string): value is Blockchain {
  return (BLOCKCHAINS as readonly string[]).includes(value);
}

export function isNetwork(value: string): value is Network {
  return (NETWORKS as readonly string[]).includes(value);
}

export function isMainnet(network: Network): boolean {
  return network === 'mainnet';
}

export function supportsNetwork(blockchain: Blockchain, network: Network): boolean {
  return CHAINS[blockchain].networks.includes(network);
}
