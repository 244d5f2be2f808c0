/**
 * The normalised block every chain adapter produces and everything after it (ingest, matching,
 * ledger) consumes: one shape for all families, so reorganisation handling, matching and the ledger
 * are written once. Amounts are bigint base units; addresses and transaction ids are in the
 * normalised form of src/domain/addresses.ts (EVM lower-case 0x, Tron base58, UTXO as validated).
 */

import type { BlockDetails, BlockSelector, TransactionDetails } from './details.ts';

export type { AddressAmount, BlockDetails, BlockSelector, EvmBlockFields, TransactionDetails, UnitAmount } from './details.ts';

import type { BlockRef } from '../domain/blocks.ts';

export { NodeReadError } from './details.ts';

export interface TokenTransfer {
  transactionId: string;
  /** Position of the transfer in the block (EVM log index), for the event's identity. */
  logIndex: number;
  tokenType: 'ERC-20' | 'ERC-721' | 'BEP-20' | 'TRC-20' | 'TRC-721' | 'OMNI';
  /** Contract address (EVM, Tron) or Omni property id. */
  contract: string;
  from: string;
  to: string;
  /** Fungible: amount in base units; NFT: undefined. */
  amount?: bigint;
  /** NFT: the token id (decimal string); fungible: undefined. */
  tokenId?: string;
}

export interface InternalTransfer {
  /** The transaction the frame belongs to. */
  parentTransactionId: string;
  /** The frame's position in the call tree, e.g. call_0_2. */
  operationId: string;
  from: string;
  to: string;
  /** Native coin, base units (> 0). */
  amount: bigint;
}

export interface CoinMovement {
  transactionId: string;
  address: string;
  /** Positive: received; negative: spent (fees included). */
  delta: bigint;
}

/** An output of a UTXO-chain transaction paid to an address (outpoint `txid:vout`). */
export interface UtxoOutput {
  transactionId: string;
  outpoint: string;
  address: string;
  /** Base units. */
  value: bigint;
}

/** An input of a UTXO-chain transaction and the output it spends. */
export interface UtxoSpend {
  transactionId: string;
  /** The spent output, `txid:vout`. */
  outpoint: string;
}

export interface NormalizedBlock extends BlockRef {
  parentHash: string;
  transactionIds: string[];
  tokenTransfers: TokenTransfer[];
  internalTransfers: InternalTransfer[];
  coinMovements: CoinMovement[];
  /**
   * UTXO chains only. coinMovements then hold what the block itself tells (outputs received, inputs
   * spending outputs of earlier transactions of the same block); the ledger resolves `spends` against its
   * own record of watched outputs (`outputs` of earlier blocks and the opening's unspent outputs).
   * `resolvedSpends`: the other inputs, whose spent output the adapter resolved (getblock verbosity 3's
   * `prevout`, its own prevouts, an output of the same block); moved nothing more, read only to see which
   * announced unconfirmed transactions the block conflicts with (src/ingest/dropped.ts). Absent: none, or
   * not told (a block built without it; a conflict through such an input then goes unseen).
   */
  utxo?: { outputs: UtxoOutput[]; spends: UtxoSpend[]; resolvedSpends?: UtxoSpend[] };
  /**
   * Every address of coinMovements and utxo.outputs (more do no harm, nor do duplicates), when the adapter
   * has that list at no cost (the block workers' compact form lists each address once). The
   * follower then sends it as it is to the watched-address lookup instead of collecting the addresses of
   * thousands of movements and outputs on the main thread. Whoever adds movements keeps it complete.
   */
  addresses?: readonly string[];
  /**
   * Transactions of the block that failed (EVM receipt status 0, Tron contractRet not SUCCESS, XRP tec…
   * results): their fee still moves, so a coin event may name them; its safety verdict says `failed`
   * (src/matching/safety.ts). Absent: none.
   */
  failedTransactionIds?: string[];
  /**
   * EVM chains: each transaction's sender and nonce, `sender:nonce` (lower-case sender, decimal nonce: the
   * key of PendingTransactions.conflicts), failed transactions included (they use their nonce too). Read
   * only to see which announced unconfirmed transactions the block conflicts with (src/ingest/dropped.ts).
   * Absent: none, or another chain.
   */
  nonces?: { transactionId: string; key: string }[];
  /** XRP: Payments with the tfPartialPayment flag (safety verdict `partial-payment`). Absent: none. */
  partialPaymentIds?: string[];
  /**
   * Account chains (EVM, Tron): the fee of each transaction that paid one and the address that paid it (it
   * is in that address's coin movement too), for the wallet-key callbacks' `fee` (src/matching/xpub.ts).
   * Absent: not told (the Bitcoin family, whose fee follows from inputs and outputs; XRP).
   */
  fees?: TransactionFee[];
}

/** The fee a transaction of an account chain paid, and its payer. */
export interface TransactionFee {
  transactionId: string;
  payer: string;
  /** Base units, > 0. */
  amount: bigint;
}

/**
 * Transactions read from a node's mempool (MempoolReader.readPending), normalised as a block's are: the
 * same coin movements (UTXO: spends not resolved here are in `utxo.spends`, for the ledger's record) and
 * the token transfers an unmined transaction shows (EVM: decoded from the calldata of direct
 * transfer/transferFrom calls; `logIndex` is 0). Every transaction listed was unconfirmed when read.
 */
export interface PendingTransactions {
  transactionIds: string[];
  coinMovements: CoinMovement[];
  tokenTransfers: TokenTransfer[];
  utxo?: { outputs: UtxoOutput[]; spends: UtxoSpend[] };
  /**
   * What a replacement of each transaction would share with it (UTXO: every outpoint it spends, `txid:vout`;
   * EVM: `sender:nonce`): a later transaction with one of these keys replaces it (RBF) and fires nothing.
   */
  conflicts: { transactionId: string; key: string }[];
  /**
   * Bitcoin family: the transactions that signal BIP125 replaceability (an input's nSequence below
   * 0xfffffffe), the safety verdict's `rbf` (src/matching/safety.ts). Absent: none.
   */
  replaceableTransactionIds?: string[];
}

/**
 * A node's pending-transaction API (ChainAdapter.mempool): node-facing only; the loop, the seen-set and
 * matching live in ingest. Every method may throw (node down): the loop retries with backoff.
 */
export interface MempoolReader {
  /**
   * Ids of transactions that entered the node's mempool since the last call (at the first call: all of
   * them). May repeat ids already given (the caller keeps a seen-set); never misses one still pending.
   */
  newTransactionIds(): Promise<string[]>;
  /** The transactions of `ids` still unconfirmed; those mined meanwhile, dropped or unknown are left out. */
  readPending(ids: string[]): Promise<PendingTransactions>;
  /** How the reader learns of new transactions, for the status ('getrawmempool polling', 'pending transaction filter'). */
  readonly method: string;
  /**
   * Push readers (ZMQ rawtx, WebSocket newPendingTransactions): calls `onNews` when new ids wait (or a gap
   * in the push asks for a poll), so the loop runs a round at once instead of at its next poll. Returns the
   * function that stops. The push connection opens at the first newTransactionIds, not here.
   */
  watch?(onNews: () => void): () => void;
  /** Closes the push connection (the adapter's close calls it). */
  close?(): Promise<void>;
  /**
   * Eviction checks (docs/concepts/deposit-safety.md#evicted): of `ids`, those the node answers as in
   * none of its mempool (Bitcoin family: `getmempoolentry` "not in mempool", mined ones included; EVM:
   * `eth_getTransactionByHash` null, so never a mined one). Any other answer, or a node error, throws.
   */
  missing?(ids: string[]): Promise<string[]>;
  /**
   * The proof that transactions gone from the mempool are not mined, at one tip of the node: of
   * `candidates` (each with its claims: outpoints `txid:vout`; EVM `sender:nonce`), those still missing
   * and (Bitcoin family) one of whose outpoints is in the node's confirmed UTXO set (`gettxout <txid> <n>
   * false`), or (EVM) whose sender's nonce at that tip is at most the transaction's. The tip's hash is
   * read before and after: undefined when it moved meanwhile (nothing proven; try again later).
   */
  provenUnmined?(candidates: { transactionId: string; claims: string[] }[]): Promise<{ tip: string; unmined: string[] } | undefined>;
}

/**
 * A token's metadata, looked up elsewhere (contract calls, Omni property info). When it cannot be
 * found, pass nothing: the item then says name and symbol '' and decimals 0 (amount in base units),
 * which is true, rather than a guess.
 */
export interface TokenMetadata {
  name: string;
  symbol: string;
  /** Fungible tokens: decimal places of `amount`. OMNI: 8 for a divisible property, 0 for an indivisible one. */
  decimals: number;
  /** OMNI: the transaction that created the property. */
  createdByTransactionId?: string;
  /** OMNI: the Omni transaction type of the transfer; 'Simple Send' when not given. */
  transactionType?: string;
}

export type { StoredTokenMetadata, TokenMetadataCache, TokenMetadataKey } from '../domain/token-metadata.ts';

/**
 * The one contract between a chain family's node client and chain following (ARCHITECTURE.md,
 * convention 1): RPC and normalisation only. Reorganisation handling, matching and the ledger live
 * once, in ingest; an adapter never decides what an event is.
 *
 * Every method may throw (node down, slow, garbage): callers retry with backoff and never skip.
 */

/** Where a transaction sits on the node's canonical chain. */
export interface TransactionLocation {
  height: number;
  hash: string;
}

/** An unspent output of an address (UTXO chains). */
export interface UnspentOutput {
  /** `txid:vout`. */
  outpoint: string;
  /** Base units. */
  value: bigint;
  /** Height of the block that created it. */
  height: number;
}

/** The unspent outputs of an address after a block, read from the node's UTXO set at its tip. */
export interface UnspentOutputs {
  outputs: UnspentOutput[];
  /** The node's tip when it read its UTXO set. */
  tipHeight: number;
}

/** A node's own account of its state (ChainAdapter.getNodeHealth): one cheap round of calls. */
export interface NodeHealth {
  /** The node's best block (as getHead and getBlockHash would tell it). */
  height: number;
  hash: string;
  /**
   * Why the node is not in step with its network although it answers (catching up, initial block
   * download, not synced with its peers), in words for the operator; absent when it is.
   */
  syncing?: string;
}

/**
 * What a node says it is (ChainAdapter.getNodeIdentity), compared with the chain's expected identity
 * (src/domain/chain-identity.ts) by src/chains/node-identity.ts.
 */
export interface NodeIdentity {
  /** EVM: eth_chainId in decimal; Bitcoin family: getblockchaininfo.chain; Tron: its genesis block id; XRP: server_info's network_id ('0' when it prints none). */
  chainId: string;
  /** Bitcoin family: the hash of block 0. */
  genesisHash?: string;
}

/** Whether the follower may rewind to a common ancestor (ChainAdapter.checkReorganisation). */
export type ReorganisationVerdict = { act: true } | { act: false; reason: string };

export interface ChainAdapter {
  /** The height of the node's best block. */
  getHead(): Promise<number>;
  /**
   * The node's head (height and hash) and whether it is still syncing, by its cheapest calls. A pool of
   * nodes (pool.ts) asks it to tell which nodes may be read. Optional: getHead and getBlockHash stand in.
   */
  getNodeHealth?(): Promise<NodeHealth>;
  /**
   * Which chain the node is on, by its cheapest calls (NodeIdentity). A pool with an expected identity asks
   * it at a node's first answer and after every failure, and does not read from a node on another chain.
   */
  getNodeIdentity?(): Promise<NodeIdentity>;
  /**
   * Asked by the follower before it rewinds `depth` blocks to `ancestorHeight` because the block read at
   * `ancestorHeight + 1` was not ours (`ourHash`). A pool of several nodes answers act: false when no second
   * node agrees on the new chain (the node that claims it is then not read from); a single node always
   * acts. Optional: without it the follower always acts.
   */
  checkReorganisation?(claim: { ancestorHeight: number; depth: number; ourHash: string }): Promise<ReorganisationVerdict>;
  /**
   * Told by the follower that the node which served the last reads contradicted itself (a block whose
   * parent is not the node's own block at the height below). A pool counts it against that node's health
   * and sets it aside for a while, doubling while it goes on. Optional.
   */
  reportInconsistency?(reason: string): void;
  /**
   * The node's canonical block at `height`, normalised. May throw (node down, height not yet there):
   * the follower retries with backoff, never skips the height.
   */
  getBlock(height: number): Promise<NormalizedBlock>;
  /**
   * The hash of the node's canonical block at `height` (as getBlock would normalise it), by the cheapest
   * call the node has (a header, not the block's transactions). The follower asks it at its cursor when
   * caught up, to see a head replaced at the same height, and while walking back to a common ancestor.
   * Optional: without it the follower uses getBlock. Throws like getBlock when the height is not there.
   */
  getBlockHash?(height: number): Promise<string>;
  /**
   * The highest block the chain's own finality signal covers (docs/concepts/confirmations-and-reorganisations.md#finality):
   * EVM the node's `finalized` block tag, Tron the solidified block, Dash the highest ChainLocked block.
   * Undefined when the node tells of none yet. Optional: only chains with such a signal have it.
   */
  getFinalizedHeight?(): Promise<number | undefined>;
  /** The block a transaction was mined in, or undefined when the node does not know it as mined. */
  findTransaction?(transactionId: string): Promise<TransactionLocation | undefined>;
  /**
   * findTransaction for many transactions in a few requests (JSON-RPC batches), answers in the order of
   * `transactionIds`. The start-up already-mined check asks it for tens of thousands of subscriptions: one
   * request each would compete with the catch-up for the node and the event loop. Throws when any lookup
   * cannot be answered (the caller retries them all). Optional: callers fall back to findTransaction.
   */
  findTransactions?(transactionIds: readonly string[]): Promise<(TransactionLocation | undefined)[]>;
  /** Native coin balance of `address` after block `height`, in base units; undefined when the node cannot tell. */
  getCoinBalance?(address: string, height: number): Promise<bigint | undefined>;
  /**
   * UTXO chains, instead of getCoinBalance for the opening balance: the outputs of `address` created at
   * or before block `height` that are still unspent at the node's tip (e.g. `scantxoutset`), which the
   * ledger then recognises when they are spent. Undefined when the node cannot tell. May take minutes
   * (a scan of the whole UTXO set): never called inside a block's transaction.
   */
  getUnspentOutputs?(address: string, height: number): Promise<UnspentOutputs | undefined>;
  /** Fungible token balance of `address` in `contract` after block `height`; undefined when the node cannot tell. */
  getTokenBalance?(contract: string, address: string, height: number): Promise<bigint | undefined>;
  /** Name, symbol and decimals of the token of `transfer` (cached by the adapter); undefined when unknown. */
  tokenMetadata?(transfer: TokenTransfer): Promise<TokenMetadata | undefined>;
  /**
   * Calls `onHead` whenever the node announces a new head (e.g. WebSocket `newHeads`), so the follower
   * does not wait for its next poll. Returns the function that stops watching. Optional: polling works
   * without it.
   */
  watchHeads?(onHead: (height: number) => void): () => void;
  /**
   * Callback Data reads (docs/reference/api.md#callback-data-reads): the block at a height or with a hash on the node's main
   * chain, or undefined when the node has no such block there. Throws NodeReadError when the node cannot
   * answer (down, pruned block).
   */
  getBlockDetails?(block: BlockSelector): Promise<BlockDetails | undefined>;
  /**
   * A transaction mined in a block of the node's main chain, or undefined when the node knows no such
   * mined transaction. Throws NodeReadError when the node cannot answer (down, no transaction index).
   */
  getTransactionDetails?(transactionId: string): Promise<TransactionDetails | undefined>;
  /**
   * The node's mempool (docs/reference/api.md#address-coins-transactions-unconfirmed and #address-tokens-transactions-unconfirmed), read beside the block follower. Absent on
   * families whose nodes expose none herald reads: their unconfirmed endpoints answer uri_not_found.
   */
  mempool?: MempoolReader;
  /** Releases connections. */
  close?(): Promise<void>;
}
