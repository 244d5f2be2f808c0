/**
 * Balances and token metadata from an EVM node: coin balances (`eth_getBalance`), token balances and
 * name/symbol/decimals by `eth_call` of the token contract, at a height where asked.
 */
import type { Hex } from 'viem';
import type { Network } from '../../domain/chains.ts';
import { LookupCache } from '../lookup-cache.ts';
import { contractTokenMetadata, firstWord } from '../token-text.ts';
import type { StoredTokenMetadata, TokenMetadata, TokenMetadataCache, TokenTransfer } from '../types.ts';
import type { EvmBlockchain } from './normalize.ts';
import { type EvmRpcClient, EvmRpcError } from './rpc.ts';

const SELECTOR = { name: '0x06fdde03', symbol: '0x95d89b41', decimals: '0x313ce567', balanceOf: '0x70a08231' } as const;
/** Bounds the in-memory metadata cache (oldest dropped first); the database keeps them all. */
const MAX_CACHED_TOKENS = 100_000;
/**
 * Gas for token calls: name/symbol/decimals/balanceOf of any real token cost well under 100k. The cap makes
 * a hostile contract that burns gas fail fast with "out of gas" (a revert: metadata ''), rather than run
 * into the node's or our timeout, which would be thrown and retried forever by the follower.
 */
const TOKEN_CALL_GAS = 1_000_000n;
/** Answers of a node that cannot tell a balance at that height (pruned state, unknown block). */
const STATE_UNAVAILABLE = /missing trie node|header not found|historical state|state .*not available|pruned|unknown block/i;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

export interface EvmTokenReader {
  getCoinBalance(address: string, height: number): Promise<bigint | undefined>;
  getTokenBalance(contract: string, address: string, height: number): Promise<bigint | undefined>;
  tokenMetadata(transfer: TokenTransfer): Promise<TokenMetadata | undefined>;
}

export interface EvmTokenChain {
  blockchain: EvmBlockchain;
  network: Network;
  /** Token metadata is cached here too (the store's token_metadata); memory only without it. */
  tokenMetadataCache?: TokenMetadataCache;
}

export function createEvmTokenReader(rpc: EvmRpcClient, { blockchain, network, tokenMetadataCache }: EvmTokenChain): EvmTokenReader {
  const metadataCache = new LookupCache<StoredTokenMetadata>(MAX_CACHED_TOKENS);

  async function getCoinBalance(address: string, height: number): Promise<bigint | undefined> {
    try {
      return await rpc.balance(requireAddress(address), height);
    } catch (error) {
      if (error instanceof EvmRpcError && error.kind === 'rpc' && STATE_UNAVAILABLE.test(error.nodeMessage)) return undefined;
      throw error;
    }
  }

  async function getTokenBalance(contract: string, address: string, height: number): Promise<bigint | undefined> {
    const data = await contractCall(
      requireAddress(contract),
      `${SELECTOR.balanceOf}${requireAddress(address).slice(2).toLowerCase().padStart(64, '0')}`,
      height,
    );
    const word = firstWord(data);
    return word === undefined ? undefined : BigInt(word);
  }

  /** eth_call result, or undefined when the call reverted or returned nothing. Node trouble is thrown. */
  async function contractCall(to: string, data: string, height?: number): Promise<Hex | undefined> {
    try {
      const result = await rpc.call({ to, data: data as Hex, height, gas: TOKEN_CALL_GAS });
      return result === '0x' ? undefined : result;
    } catch (error) {
      if (
        error instanceof EvmRpcError &&
        (error.kind === 'reverted' || (error.kind === 'rpc' && height !== undefined && STATE_UNAVAILABLE.test(error.nodeMessage)))
      ) {
        return undefined;
      }
      throw error;
    }
  }

  function fetchMetadata(contract: string, tokenType: string): Promise<StoredTokenMetadata> {
    return contractTokenMetadata(tokenMetadataCache, { blockchain, network, contract }, tokenType, (method) => contractCall(contract, SELECTOR[method]));
  }

  async function tokenMetadata(transfer: TokenTransfer): Promise<TokenMetadata | undefined> {
    const contract = transfer.contract.toLowerCase();
    // Concurrent transfers of one token share one lookup; a failed one is tried again next time.
    const m = await metadataCache.get(contract, () => fetchMetadata(contract, transfer.tokenType));
    // An NFT's amount is a token id, never scaled: decimals 0 whatever the contract says.
    return { name: m.name, symbol: m.symbol, decimals: transfer.tokenType === 'ERC-721' ? 0 : m.decimals };
  }

  return { getCoinBalance, getTokenBalance, tokenMetadata };
}

function requireAddress(address: string): string {
  if (!ADDRESS.test(address)) throw new TypeError(`not an EVM address: ${address}`);
  return address.toLowerCase();
}
