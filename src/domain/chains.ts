/**
 * The chains vocabulary: which blockchains and networks exist, which endpoint accepts which, their
 * native unit and the address family that validates their addresses. No I/O.
 *
 * Glossary
 * - blockchain: one of the eleven chain names of the contract (`bitcoin`, `ethereum`, ...).
 * - network: `mainnet` or one of the chain's test networks (`testnet`, `sepolia`, `hoodi`, `goerli`, `mordor`,
 *   `nile`); `networkChains` says which chain each label names.
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

export const NETWORKS = ['mainnet', 'testnet', 'mordor', 'nile', 'sepolia', 'hoodi', 'goerli'] as const;
export type Network = (typeof NETWORKS)[number];

/** One followed chain: a blockchain on one of its networks (the unit of following, cursors and locks). */
export interface ChainKey {
  blockchain: Blockchain;
  network: Network;
}

export type ChainFamily = 'utxo' | 'evm' | 'tron' | 'xrp';

/**
 * The chain a network label names: what a node behind that label must be (docs/reference/chains.md "Blockchains and networks"). The
 * identifiers are those the chain's nodes tell about themselves, for checking a node against its label.
 */
export interface NetworkChain {
  /** The chain in words, as the networks table of docs/reference/chains.md names it. */
  name: string;
  /**
   * The EIP-155 chain id: EVM `eth_chainId`; on Tron the chain id of java-tron's JSON-RPC `eth_chainId`
   * (the last four bytes of the genesis block id).
   */
  chainId?: number;
  /** XRP Ledger: the network id (`server_info` `network_id`; 0 is the main network). */
  networkId?: number;
  /** Bitcoin family: the `chain` that `getblockchaininfo` answers. */
  nodeChain?: 'main' | 'test';
  /** The hash of block 0 as the node prints it (`getblockhash 0`; Tron's genesis `blockID`). */
  genesisHash?: string;
  /** Set on a label kept for existing clients although its chain has shut down: when, and what to use instead. */
  shutDown?: string;
}

export interface ChainInfo {
  family: ChainFamily;
  /** The networks this blockchain takes; the first is always mainnet. */
  networks: readonly Network[];
  /** The chain each of those networks names. */
  networkChains: Readonly<Partial<Record<Network, NetworkChain>>>;
  unit: string;
  /** Decimal places between the base unit and `unit`. */
  decimals: number;
}

/** A chain's entry: its networks are the labels of `networkChains`, in that order (mainnet first). */
function chain(family: ChainFamily, unit: string, decimals: number, networkChains: Partial<Record<Network, NetworkChain>>): ChainInfo {
  return { family, unit, decimals, networks: Object.keys(networkChains) as Network[], networkChains };
}

const BITCOIN_MAINNET_GENESIS = '000000000019d6689c085ae165831e934ff763ae46a2a6c172b3f1b60a8ce26f';
const BITCOIN_TESTNET3_GENESIS = '000000000933ea01ad0ee984209779baaec3ced90fa3f408719526f8d77f4943';

export const CHAINS: Readonly<Record<Blockchain, ChainInfo>> = {
  bitcoin: chain('utxo', 'BTC', 8, {
    mainnet: { name: 'Bitcoin', nodeChain: 'main', genesisHash: BITCOIN_MAINNET_GENESIS },
    testnet: { name: 'Bitcoin testnet3', nodeChain: 'test', genesisHash: BITCOIN_TESTNET3_GENESIS },
  }),
  'bitcoin-cash': chain('utxo', 'BCH', 8, {
    // Bitcoin Cash split from Bitcoin at block 478559: the same genesis blocks.
    mainnet: { name: 'Bitcoin Cash', nodeChain: 'main', genesisHash: BITCOIN_MAINNET_GENESIS },
    testnet: { name: 'Bitcoin Cash testnet3', nodeChain: 'test', genesisHash: BITCOIN_TESTNET3_GENESIS },
  }),
  litecoin: chain('utxo', 'LTC', 8, {
    mainnet: { name: 'Litecoin', nodeChain: 'main', genesisHash: '12a765e31ffd4059bada1e25190f6e98c99d9714d334efa41a195a7e7e04bfe2' },
    testnet: { name: 'Litecoin testnet4', nodeChain: 'test', genesisHash: '4966625a4b2851d9fdee139e56211a0d88575f59ed816ff5e6a63deb4e3e29a0' },
  }),
  dogecoin: chain('utxo', 'DOGE', 8, {
    mainnet: { name: 'Dogecoin', nodeChain: 'main', genesisHash: '1a91e3dace36e2be3bf030a65679fe821aa1d6ef92e7c9902eb318182c355691' },
    testnet: { name: 'Dogecoin testnet3', nodeChain: 'test', genesisHash: 'bb0a78264637406b6360aad926284d544d7049f45189db5664f3c4d07350559e' },
  }),
  dash: chain('utxo', 'DASH', 8, {
    mainnet: { name: 'Dash', nodeChain: 'main', genesisHash: '00000ffd590b1485b3caadc19b22e6379c733355108f107a430458cdf3407ab6' },
    testnet: { name: 'Dash testnet', nodeChain: 'test', genesisHash: '00000bafbc94add76cb75e2ec92894837288a481e5c005f6563d91623bf8bc2c' },
  }),
  zcash: chain('utxo', 'ZEC', 8, {
    mainnet: { name: 'Zcash', nodeChain: 'main', genesisHash: '00040fe8ec8471911baa1db1266ea15dd06b4a8a5c453883c000b031973dce08' },
    testnet: { name: 'Zcash testnet', nodeChain: 'test', genesisHash: '05a60a92d99d85997cce3b87616c089f6124d7342af37106edc76126334a2c38' },
  }),
  xrp: chain('xrp', 'XRP', 6, {
    mainnet: { name: 'XRP Ledger', networkId: 0 },
    testnet: { name: 'XRP Ledger Testnet', networkId: 1 },
  }),
  ethereum: chain('evm', 'ETH', 18, {
    mainnet: { name: 'Ethereum', chainId: 1 },
    sepolia: { name: 'Ethereum Sepolia', chainId: 11155111 },
    hoodi: { name: 'Ethereum Hoodi', chainId: 560048 },
    goerli: { name: 'Ethereum Goerli', chainId: 5, shutDown: 'shut down in 2024; kept for existing clients: use sepolia or hoodi' },
  }),
  'ethereum-classic': chain('evm', 'ETC', 18, {
    mainnet: { name: 'Ethereum Classic', chainId: 61 },
    mordor: { name: 'Ethereum Classic Mordor', chainId: 63 },
  }),
  'binance-smart-chain': chain('evm', 'BNB', 18, {
    mainnet: { name: 'BNB Smart Chain', chainId: 56 },
    testnet: { name: 'BNB Smart Chain testnet (Chapel)', chainId: 97 },
  }),
  tron: chain('tron', 'TRX', 6, {
    mainnet: { name: 'TRON', chainId: 0x2b6653dc, genesisHash: '00000000000000001ebf88508a03865c71d452e25f4d51194196a1d22b6653dc' },
    nile: { name: 'TRON Nile testnet', chainId: 0xcd8690dc, genesisHash: '0000000000000000d698d4192c56cb6be724a558448e2684802de4d6cd8690dc' },
  }),
};

/**
 * The blockchains the Callback Data address read serves (docs/reference/api.md#settled-statuses-chains-and-prices: every chain but tron),
 * and so those whose subscribed addresses herald watches for its wallet ledger (services/subscribed-addresses.ts).
 */
export const ADDRESS_READ_BLOCKCHAINS: readonly Blockchain[] = BLOCKCHAINS.filter((c) => c !== 'tron');

/**
 * The chains an extended public key or descriptor can be subscribed on (docs/concepts/wallet-keys.md): the Bitcoin
 * family (zcash transparent addresses only), and the account chains' BIP44 account keys (receive chain only); not xrp.
 */
export const XPUB_BLOCKCHAINS: readonly Blockchain[] = [
  'bitcoin',
  'bitcoin-cash',
  'litecoin',
  'dogecoin',
  'dash',
  'zcash',
  'ethereum',
  'ethereum-classic',
  'binance-smart-chain',
  'tron',
];

/**
 * The chains whose wallet keys are also followed in the mempool (XPUB_COINS_TRANSACTION_UNCONFIRMED): those of
 * ADDRESS_COINS_TRANSACTION_UNCONFIRMED among the wallet-key chains, the Bitcoin family and the EVM chains (their
 * pending pools: chains/evm/mempool.ts). Not tron: its node's pending pool is not read (docs/concepts/subscriptions.md).
 */
export const XPUB_UNCONFIRMED_BLOCKCHAINS: readonly Blockchain[] = XPUB_BLOCKCHAINS.filter((blockchain) => blockchain !== 'tron');

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
  'XPUB_COINS_TRANSACTION_CONFIRMED',
  'XPUB_COINS_TRANSACTION_UNCONFIRMED',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** Which blockchains each subscription endpoint accepts (docs/reference/api.md#endpoints-at-a-glance; docs/reference/api.md#settled-statuses-chains-and-prices and #reverted-block). */
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
  // docs/reference/api.md#settled-statuses-chains-and-prices: not xrp nor tron (their nodes' pending pools are not read; see docs/concepts/subscriptions.md).
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
  // bitcoin: Omni transfers from Omni Core's omni_listpendingtransactions (chains/utxo/omni.ts).
  ADDRESS_TOKENS_TRANSACTION_UNCONFIRMED: ['bitcoin', 'ethereum', 'ethereum-classic'],
  // docs/concepts/wallet-keys.md: the Bitcoin family (zcash transparent addresses only) and the account chains' BIP44 account keys; not xrp.
  XPUB_COINS_TRANSACTION_CONFIRMED: XPUB_BLOCKCHAINS,
  // From the mempool following of the same chains (ingest/mempool.ts).
  XPUB_COINS_TRANSACTION_UNCONFIRMED: XPUB_UNCONFIRMED_BLOCKCHAINS,
};

/**
 * Event types fired from the chain's mempool (docs/reference/api.md#address-coins-transactions-unconfirmed and #address-tokens-transactions-unconfirmed) by ingest/mempool.ts,
 * once per (transaction, subscription) when the transaction is first seen unconfirmed; never from a block.
 */
export const UNCONFIRMED_EVENTS: ReadonlySet<EventType> = new Set([
  'ADDRESS_COINS_TRANSACTION_UNCONFIRMED',
  'ADDRESS_TOKENS_TRANSACTION_UNCONFIRMED',
  'XPUB_COINS_TRANSACTION_UNCONFIRMED',
]);

/**
 * The callback an unconfirmed subscription receives when a transaction it was told about goes away without
 * being mined (docs/reference/events/address-coins-transaction-unconfirmed-dropped.md): not subscription
 * types of their own, sent on the UNCONFIRMED subscriptions (src/ingest/dropped.ts).
 */
export const DROPPED_EVENTS = {
  ADDRESS_COINS_TRANSACTION_UNCONFIRMED: 'ADDRESS_COINS_TRANSACTION_UNCONFIRMED_DROPPED',
  ADDRESS_TOKENS_TRANSACTION_UNCONFIRMED: 'ADDRESS_TOKENS_TRANSACTION_UNCONFIRMED_DROPPED',
  XPUB_COINS_TRANSACTION_UNCONFIRMED: 'XPUB_COINS_TRANSACTION_UNCONFIRMED_DROPPED',
} as const;
export type DroppedEventType = (typeof DROPPED_EVENTS)[keyof typeof DROPPED_EVENTS];
export const DROPPED_EVENT_TYPES: readonly DroppedEventType[] = Object.values(DROPPED_EVENTS);
/** What a callback's `data.event` can be: a subscription's event type, or a dropped event of an unconfirmed subscription. */
export type CallbackEventType = EventType | DroppedEventType;
/** Every callback's event type: the subscriptions' and the dropped ones (the `webhooks` of the OpenAPI document). */
export const CALLBACK_EVENT_TYPES: readonly CallbackEventType[] = [...EVENT_TYPES, ...DROPPED_EVENT_TYPES];

/**
 * Event types that send one callback at every confirmation from 1 to the subscription's count
 * (docs/reference/api.md#address-coins-transactions-confirmed-each-confirmation, #address-internal-transactions-confirmed-each-confirmation and #address-tokens-transactions-confirmed-each-confirmation), each with its current and target count and its own key.
 */
export const EACH_CONFIRMATION_EVENTS: ReadonlySet<EventType> = new Set([
  'ADDRESS_TOKENS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION',
  'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED_EACH_CONFIRMATION',
  'ADDRESS_COINS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION',
]);

/**
 * The deep-reorganisation breaker's depth per blockchain when the chain entry gives no reorgBreakerDepth
 * (docs/reference/configuration.md#the-deep-reorganisation-breaker says why each): a reorganisation deeper than
 * this holds the chain's confirmed callbacks until an operator releases it.
 */
export const DEFAULT_REORG_BREAKER_DEPTH: Readonly<Record<Blockchain, number>> = {
  bitcoin: 3,
  'bitcoin-cash': 6,
  litecoin: 6,
  dogecoin: 10,
  dash: 3,
  zcash: 6,
  ethereum: 2,
  'ethereum-classic': 20,
  'binance-smart-chain': 2,
  tron: 2,
  xrp: 1,
};

/**
 * Event types whose item carries the safety verdict `safety` (docs/concepts/deposit-safety.md): every event that moves
 * coins or tokens; not TRANSACTION_MINED nor the block events.
 */
export const SAFETY_EVENTS: ReadonlySet<EventType> = new Set([
  'ADDRESS_TOKENS_TRANSACTION_CONFIRMED',
  'ADDRESS_TOKENS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION',
  'ADDRESS_TOKENS_TRANSACTION_UNCONFIRMED',
  'CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER',
  'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED',
  'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED_EACH_CONFIRMATION',
  'CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER',
  'ADDRESS_COINS_TRANSACTION_CONFIRMED',
  'ADDRESS_COINS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION',
  'ADDRESS_COINS_TRANSACTION_UNCONFIRMED',
  'CONFIRMED_COINS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER',
  'XPUB_COINS_TRANSACTION_CONFIRMED',
  'XPUB_COINS_TRANSACTION_UNCONFIRMED',
]);

/**
 * The confirmed events: those whose callback waits for the block's confirmations (receiveCallbackOn,
 * confirmationsCount or the chain's), i.e. the events with a safety verdict but the unconfirmed ones. They
 * are what the deep-reorganisation breaker holds while a chain is held
 * (docs/concepts/confirmations-and-reorganisations.md#the-deep-reorganisation-breaker); the block events,
 * TRANSACTION_MINED (one confirmation, the block itself) and the unconfirmed events are not held.
 */
export const HELD_EVENTS: ReadonlySet<EventType> = new Set([...SAFETY_EVENTS].filter((e) => !UNCONFIRMED_EVENTS.has(e)));

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

/** The chain a (blockchain, network) label names; undefined when the blockchain does not take that network. */
export function networkChain(blockchain: Blockchain, network: Network): NetworkChain | undefined {
  return CHAINS[blockchain].networkChains[network];
}

/** The networks a blockchain takes, for a sentence: "mainnet or testnet", "mainnet, sepolia, hoodi or goerli". */
export function networksText(blockchain: Blockchain): string {
  const networks = CHAINS[blockchain].networks;
  const last = networks.at(-1) ?? '';
  return networks.length > 1 ? `${networks.slice(0, -1).join(', ')} or ${last}` : last;
}
