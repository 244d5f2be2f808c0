/**
 * Token metadata read from token contracts (name, symbol, decimals), one row per contract and chain:
 * the adapters' cache behind their in-memory one, so a restart does not call every contract again.
 */
import type { StoredTokenMetadata, TokenMetadataCache, TokenMetadataKey } from '../domain/token-metadata.ts';
import type { Queryable } from './db.ts';

export async function getTokenMetadata(db: Queryable, key: TokenMetadataKey): Promise<StoredTokenMetadata | undefined> {
  const rows = await db.query<{ name: string; symbol: string; decimals: number; token_type: string; created_by_transaction_id: string }>(
    'token-metadata:get',
    'SELECT name, symbol, decimals, token_type, created_by_transaction_id FROM token_metadata WHERE blockchain = $1 AND network = $2 AND contract = $3',
    [key.blockchain, key.network, key.contract],
  );
  const row = rows[0];
  return (
    row && { name: row.name, symbol: row.symbol, decimals: row.decimals, tokenType: row.token_type, createdByTransactionId: row.created_by_transaction_id }
  );
}

/** Stores (or refreshes) the metadata of one contract. */
export async function putTokenMetadata(db: Queryable, key: TokenMetadataKey, metadata: StoredTokenMetadata): Promise<void> {
  await db.query(
    'token-metadata:put',
    `INSERT INTO token_metadata (blockchain, network, contract, name, symbol, decimals, token_type, created_by_transaction_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     ON CONFLICT (blockchain, network, contract)
     DO UPDATE SET name = EXCLUDED.name, symbol = EXCLUDED.symbol, decimals = EXCLUDED.decimals,
                   created_by_transaction_id = EXCLUDED.created_by_transaction_id, fetched_at = now()`,
    [key.blockchain, key.network, key.contract, metadata.name, metadata.symbol, metadata.decimals, metadata.tokenType, metadata.createdByTransactionId ?? ''],
  );
}

/** The adapters' token-metadata cache (src/chains/types.ts) over this table. */
export function tokenMetadataCache(db: Queryable): TokenMetadataCache {
  return { get: (key) => getTokenMetadata(db, key), put: (key, metadata) => putTokenMetadata(db, key, metadata) };
}
