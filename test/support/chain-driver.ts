/**
 * What the shared chain-following scenarios (test/support/follow-scenarios.ts) need from a node under
 * test: the real litecoind, or one of our fake nodes (Bitcoin Core dialects, Omni Core, java-tron,
 * rippled). Each driver speaks to its node through the node's own RPC or a control API of the fake.
 */
import type { Blockchain, Network } from '../../src/domain/chains.ts';

export interface ChainDriver {
  blockchain: Blockchain;
  network: Network;
  /** The URL herald is configured with (credentials may be in it). */
  rpcUrl: string;
  /** Extra chain configuration for herald (e.g. rpcCookieFile, rpcUser/rpcPassword). */
  chainConfig?: Record<string, unknown>;
  /** The node's best height. */
  height(): Promise<number>;
  /** Hash of the node's canonical block at `height`. */
  blockHash(height: number): Promise<string>;
  /** Mines `count` blocks (with whatever is pending) and returns the new best height. */
  mine(count: number): Promise<number>;
  /** A fresh address of this chain, in the form customers use (valid for herald's address checks). */
  newAddress(): Promise<string>;
  /**
   * Pays `amount` base units to `to` from the node's funded wallet; the transaction is pending (mined by the
   * next mine()). Returns its transaction id in the form herald reports it.
   */
  send(to: string, amount: bigint): Promise<string>;
  /**
   * Spends from `from` (an address returned by newAddress and funded by send) `amount` base units to `to`;
   * the rest, less a fee, goes back to the node's wallet (not to `from`). Returns the transaction id and the
   * fee in base units. Drivers whose node cannot sign for its own addresses may omit it.
   */
  spend?(from: string, to: string, amount: bigint): Promise<{ transactionId: string; fee: bigint }>;
  /**
   * Reorganisation: drops the blocks above `height - depth` and mines `depth + 1` new ones. Transactions of
   * the dropped blocks go back to pending and are mined again in the new blocks, except those in `drop`,
   * which the new blocks leave out (they may stay pending on a real node; a test never mines them again).
   * Returns the new best height.
   */
  reorg(depth: number, options?: { drop?: string[] }): Promise<number>;
  /** The native balance of `address` as the node sees it at its tip, base units (for cross-checks). */
  balance(address: string): Promise<bigint>;
  /** The chain's test tokens, where the node has them (the shared token scenario needs them). */
  tokens?: TokenDriver;
  /** A contract passing the value of a call on to an address (an internal transfer), where the chain has them. */
  internal?: InternalDriver;
  /** Makes the node unreachable (connections refused) until up(). */
  down?(): Promise<void>;
  up?(): Promise<void>;
  close(): Promise<void>;
}

/** A fungible token and an NFT contract on the node, and how to move them (transactions pending until mined). */
export interface TokenDriver {
  /** `contract` in herald's normal form (what callbacks and the ledger print); `type` as callbacks name it. */
  fungible: { contract: string; name: string; symbol: string; decimals: number; type: 'ERC-20' | 'BEP-20' | 'TRC-20' };
  nft: { contract: string; name: string; symbol: string; type: 'ERC-721' | 'TRC-721' };
  /** Native base units an address needs to pay for a few token transfers of its own. */
  feeBudget: bigint;
  /** Sends `amount` base units of the fungible token from `from` (the funded wallet when absent) to `to`. */
  transferToken(to: string, amount: bigint, from?: string): Promise<string>;
  /** An NFT id the funded wallet can give and no one used yet. */
  freshNftId(): Promise<bigint>;
  /** transferFrom of NFT `tokenId` from `from` (the funded wallet when absent, with an id of freshNftId) to `to`. */
  transferNft(to: string, tokenId: bigint, from?: string): Promise<string>;
}

/** Internal transfers: a forwarding contract called with value from the funded wallet (pending until mined). */
export interface InternalDriver {
  /** The operationId herald gives the forwarder's inner transfer (e.g. `call_0` on EVM chains, `internal_0` on tron). */
  operationId: string;
  /** Calls the forwarder with `amount` base units for `to`; the transaction id. */
  forward(to: string, amount: bigint): Promise<string>;
}
