/**
 * The one contract between a chain family's node client and chain following (ARCHITECTURE.md,
 * convention 1): RPC and normalisation only. Reorganisation handling, matching and the ledger live
 * once, in ingest; an adapter never decides what an event is.
 *
 * Every method may throw (node down, slow, garbage): callers retry with backoff and never skip.
 */
import type { NormalizedBlock, TokenTransfer } from '../chains/types.ts';
import type { TokenMetadata } from '../matching/identity.ts';

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

export interface ChainAdapter {
  /** The height of the node's best block. */
  getHead(): Promise<number>;
  /**
   * The node's canonical block at `height`, normalised. May throw (node down, height not yet there):
   * the follower retries with backoff, never skips the height.
   */
  getBlock(height: number): Promise<NormalizedBlock>;
  /** The block a transaction was mined in, or undefined when the node does not know it as mined. */
  findTransaction?(transactionId: string): Promise<TransactionLocation | undefined>;
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
  /** Releases connections. */
  close?(): Promise<void>;
}
