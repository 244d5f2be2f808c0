/**
 * Watch-only wallets, their addresses and the ledger rows that chain following keeps up to date.
 * Amounts are base units (numeric in SQL, bigint here); the service formats them for the API.
 */
import type { Blockchain, Network } from '../domain/chains.ts';
import type { Queryable } from './db.ts';

export interface Wallet {
  id: string;
  name: string;
  createdAt: Date;
}

export interface WalletAddress {
  blockchain: Blockchain;
  network: Network;
  address: string;
  watchedFromBlock: bigint | null;
  createdAt: Date;
}

export async function insertWallet(q: Queryable, customerId: string, id: string, name: string): Promise<Wallet> {
  const [row] = await q.query<{ created_at: Date }>(
    'wallets:insert',
    // The empty asset record, compact JSON as herald_wallet_assets_json builds it (migration 036).
    `INSERT INTO wallets (id, customer_id, name, assets_json)
     VALUES ($1, $2, $3, '{"walletId":' || herald_json($1::uuid) || ',"walletName":' || herald_json($3::text)
       || ',"coins":[],"fungibleTokens":[],"nonFungibleTokens":[]}')
     RETURNING created_at`,
    [id, customerId, name],
  );
  return { id, name, createdAt: (row as { created_at: Date }).created_at };
}

export async function getWallet(q: Queryable, customerId: string, walletId: string): Promise<Wallet | undefined> {
  const [row] = await q.query<{ id: string; name: string; created_at: Date }>(
    'wallets:get',
    'SELECT id, name, created_at FROM wallets WHERE customer_id = $1 AND id = $2',
    [customerId, walletId],
  );
  return row ? { id: row.id, name: row.name, createdAt: row.created_at } : undefined;
}

interface AddressRow {
  blockchain: Blockchain;
  network: Network;
  address: string;
  watched_from_block: string | null;
  created_at: Date;
}
const toAddress = (r: AddressRow): WalletAddress => ({
  blockchain: r.blockchain,
  network: r.network,
  address: r.address,
  watchedFromBlock: r.watched_from_block === null ? null : BigInt(r.watched_from_block),
  createdAt: r.created_at,
});

/**
 * Adds a watched address with zero totals; undefined when the wallet already watches it. The caller holds
 * the chain's lock (services/wallets.ts addAddress): the follower's set of watched addresses relies on it
 * (store/ledger.ts lastWatchedId).
 */
export async function insertWalletAddress(
  q: Queryable,
  walletId: string,
  a: { blockchain: Blockchain; network: Network; address: string; normalizedAddress: string; watchedFromBlock: bigint | null },
): Promise<WalletAddress | undefined> {
  const [row] = await q.query<AddressRow>(
    'wallets:add-address',
    `INSERT INTO wallet_addresses (wallet_id, blockchain, network, address, normalized_address, watched_from_block)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (wallet_id, blockchain, network, normalized_address) DO NOTHING
     RETURNING blockchain, network, address, watched_from_block, created_at`,
    [walletId, a.blockchain, a.network, a.address, a.normalizedAddress, a.watchedFromBlock === null ? null : String(a.watchedFromBlock)],
  );
  return row ? toAddress(row) : undefined;
}

export async function deleteWalletAddress(
  q: Queryable,
  walletId: string,
  blockchain: Blockchain,
  network: Network,
  normalizedAddress: string,
): Promise<WalletAddress | undefined> {
  const [row] = await q.query<AddressRow>(
    'wallets:remove-address',
    // An address derived from a key the wallet holds goes with its key (store/wallet-xpubs.ts), not alone.
    `DELETE FROM wallet_addresses WHERE wallet_id = $1 AND blockchain = $2 AND network = $3 AND normalized_address = $4 AND wallet_xpub_id IS NULL
     RETURNING blockchain, network, address, watched_from_block, created_at`,
    [walletId, blockchain, network, normalizedAddress],
  );
  return row ? toAddress(row) : undefined;
}

/** The addresses the wallet watches one by one (not those derived from its keys). */
export async function listWalletAddresses(q: Queryable, walletId: string): Promise<WalletAddress[]> {
  const rows = await q.query<AddressRow>(
    'wallets:addresses',
    // The addresses derived from its keys are listed with their keys (store/wallet-xpubs.ts).
    `SELECT blockchain, network, address, watched_from_block, created_at FROM wallet_addresses WHERE wallet_id = $1 AND wallet_xpub_id IS NULL
     ORDER BY created_at, id`,
    [walletId],
  );
  return rows.map(toAddress);
}

interface AssetsRow {
  total: number;
  returned: number;
  items: string;
}

export interface AssetsPage {
  total: number;
  /** Wallets on this page. */
  returned: number;
  /** JSON array of wallet asset records, oldest wallet first. */
  itemsJson: string;
}

/**
 * A page of the customer's wallets as a JSON array of asset records, read from the records the
 * database keeps current (wallets.assets_json, see the migration): no aggregation at read time.
 */
export async function walletAssetsJson(q: Queryable, customerId: string, page: { limit: number; offset: number }): Promise<AssetsPage> {
  const [row] = await q.query<AssetsRow>(
    'wallets:assets-page',
    // The page is chosen on the index alone (the offset skips index entries, not rows), then only its
    // rows are read.
    `WITH page AS (SELECT id, created_at FROM wallets WHERE customer_id = $1 ORDER BY created_at, id LIMIT $2 OFFSET $3)
     SELECT coalesce((SELECT wallets FROM wallet_counts WHERE customer_id = $1), 0) AS total, count(*)::int AS returned,
            '[' || coalesce(string_agg((SELECT w.assets_json FROM wallets w WHERE w.id = p.id), ',' ORDER BY p.created_at, p.id), '') || ']' AS items
     FROM page p`,
    [customerId, page.limit, page.offset],
  );
  return { total: row?.total ?? 0, returned: row?.returned ?? 0, itemsJson: row?.items ?? '[]' };
}

export async function walletAssetsRecord(q: Queryable, customerId: string, walletId: string): Promise<string | undefined> {
  const [row] = await q.query<{ assets_json: string }>('wallets:assets-one', 'SELECT assets_json FROM wallets WHERE customer_id = $1 AND id = $2', [
    customerId,
    walletId,
  ]);
  return row?.assets_json;
}

/** Copies the chains table (unit and decimals per blockchain) into the database, for the asset records. */
export async function syncChainUnits(q: Queryable, units: { blockchain: string; unit: string; decimals: number }[]): Promise<void> {
  await q.query(
    'wallets:sync-units',
    `INSERT INTO chain_units (blockchain, unit, decimals) SELECT * FROM unnest($1::text[], $2::text[], $3::int[])
     ON CONFLICT (blockchain) DO UPDATE SET unit = excluded.unit, decimals = excluded.decimals
     WHERE (chain_units.unit, chain_units.decimals) IS DISTINCT FROM (excluded.unit, excluded.decimals)`,
    [units.map((u) => u.blockchain), units.map((u) => u.unit), units.map((u) => u.decimals)],
  );
}
