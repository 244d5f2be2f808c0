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
