/**
 * Token metadata as the adapters cache it and the store keeps it: the shape both layers share, so the
 * store need not import the chain layer (test/layering.test.ts).
 */
export interface TokenMetadataKey {
  blockchain: string;
  network: string;
  /** EVM: lower-case 0x address. */
  contract: string;
}

export interface StoredTokenMetadata {
  name: string;
  symbol: string;
  /** As the contract reports it; 0 when it has none. */
  decimals: number;
  /** The token type of the transfer that first asked. */
  tokenType: string;
  /** Omni: the transaction that created the property; '' (or absent) for contract tokens. */
  createdByTransactionId?: string;
}

/**
 * Where the adapters keep token metadata between restarts (src/store/token-metadata.ts; the chain adapters take one through chains/types.ts), behind their
 * in-memory cache: looked up before calling the contract (or omni_getproperty), stored after. Without
 * one, every process start calls each token contract again.
 */
export interface TokenMetadataCache {
  get(key: TokenMetadataKey): Promise<StoredTokenMetadata | undefined>;
  put(key: TokenMetadataKey, metadata: StoredTokenMetadata): Promise<void>;
}
