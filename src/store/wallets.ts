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
  const [row] = await q.query<{ created_at: Date }>('wallets:insert', 'INSERT INTO wallets (id, customer_id, name) VALUES ($1, $2, $3) RETURNING created_at', [
    id,
    customerId,
    name,
  ]);
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

/** Adds a watched address with zero totals; undefined when the wallet already watches it. */
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
    `DELETE FROM wallet_addresses WHERE wallet_id = $1 AND blockchain = $2 AND network = $3 AND normalized_address = $4
     RETURNING blockchain, network, address, watched_from_block, created_at`,
    [walletId, blockchain, network, normalizedAddress],
  );
  return row ? toAddress(row) : undefined;
}

export async function listWalletAddresses(q: Queryable, walletId: string): Promise<WalletAddress[]> {
  const rows = await q.query<AddressRow>(
    'wallets:addresses',
    'SELECT blockchain, network, address, watched_from_block, created_at FROM wallet_addresses WHERE wallet_id = $1 ORDER BY created_at, id',
    [walletId],
  );
  return rows.map(toAddress);
}

/**
 * Wallets with their assets as the contract's wallet asset records, built as JSON text inside ONE
 * statement: coins summed per (blockchain, network) over the wallet's addresses, fungible tokens summed
 * per contract or property, NFTs listed; amounts formatted by herald_format_units (exact, no floats).
 * The API splices the text into its response, so a page of 50 wallets costs one round trip and no
 * parsing. `units` comes from the chains table in src/domain/chains.ts, the one place that knows them.
 */
const ASSETS_SQL = `
  WITH units (blockchain, unit, decimals) AS (SELECT * FROM unnest($5::text[], $6::text[], $7::int[])),
  page AS (
    SELECT id, name, created_at FROM wallets
    WHERE customer_id = $1 AND ($4::uuid IS NULL OR id = $4)
    ORDER BY created_at, id LIMIT $2 OFFSET $3),
  coins AS (
    SELECT c.wallet_id, json_agg(json_build_object(
        'blockchain', c.blockchain, 'network', c.network, 'unit', u.unit,
        'confirmedBalance', herald_format_units(c.balance, u.decimals),
        'totalReceived', herald_format_units(c.received, u.decimals),
        'totalSpent', herald_format_units(c.spent, u.decimals)) ORDER BY c.blockchain, c.network) AS list
    FROM (SELECT wallet_id, blockchain, network, sum(confirmed_balance) AS balance, sum(total_received) AS received, sum(total_spent) AS spent
          FROM wallet_addresses WHERE wallet_id IN (SELECT id FROM page) GROUP BY wallet_id, blockchain, network) c
    JOIN units u USING (blockchain) GROUP BY c.wallet_id),
  tokens AS (
    SELECT t.wallet_id, json_agg(json_build_object(
        'amount', herald_format_units(t.amount, t.decimals), 'blockchain', t.blockchain, 'network', t.network,
        'identifier', t.identifier, 'symbol', t.symbol, 'type', t.token_type) ORDER BY t.blockchain, t.network, t.identifier) AS list
    FROM (SELECT a.wallet_id, a.blockchain, a.network, b.identifier, min(b.symbol) AS symbol, min(b.token_type) AS token_type,
                 min(b.decimals) AS decimals, sum(b.amount) AS amount
          FROM wallet_addresses a JOIN wallet_token_balances b ON b.wallet_address_id = a.id
          WHERE a.wallet_id IN (SELECT id FROM page) GROUP BY a.wallet_id, a.blockchain, a.network, b.identifier) t
    GROUP BY t.wallet_id),
  nfts AS (
    SELECT n.wallet_id, json_agg(json_build_object(
        'blockchain', n.blockchain, 'network', n.network, 'identifier', n.identifier, 'symbol', n.symbol,
        'tokenId', n.token_id, 'type', n.token_type) ORDER BY n.blockchain, n.network, n.identifier, n.token_id) AS list
    FROM (SELECT DISTINCT a.wallet_id, a.blockchain, a.network, n.identifier, n.symbol, n.token_id, n.token_type
          FROM wallet_addresses a JOIN wallet_nfts n ON n.wallet_address_id = a.id WHERE a.wallet_id IN (SELECT id FROM page)) n
    GROUP BY n.wallet_id)
  SELECT
    (SELECT count(*)::int FROM wallets WHERE customer_id = $1) AS total,
    (SELECT count(*)::int FROM page) AS returned,
    coalesce((SELECT json_agg(json_build_object(
        'walletId', p.id, 'walletName', p.name,
        'coins', coalesce(c.list, '[]'), 'fungibleTokens', coalesce(t.list, '[]'), 'nonFungibleTokens', coalesce(n.list, '[]'))
        ORDER BY p.created_at, p.id)
      FROM page p LEFT JOIN coins c ON c.wallet_id = p.id LEFT JOIN tokens t ON t.wallet_id = p.id LEFT JOIN nfts n ON n.wallet_id = p.id), '[]')::text AS items`;

export interface AssetsPage {
  total: number;
  /** Wallets on this page. */
  returned: number;
  /** JSON array of wallet asset records. */
  itemsJson: string;
}

export async function walletAssetsJson(
  q: Queryable,
  customerId: string,
  page: { limit: number; offset: number; walletId?: string },
  units: { blockchain: string[]; unit: string[]; decimals: number[] },
): Promise<AssetsPage> {
  const [row] = await q.query<{ total: number; returned: number; items: string }>(page.walletId ? 'wallets:assets-one' : 'wallets:assets-page', ASSETS_SQL, [
    customerId,
    page.limit,
    page.offset,
    page.walletId ?? null,
    units.blockchain,
    units.unit,
    units.decimals,
  ]);
  return { total: row?.total ?? 0, returned: row?.returned ?? 0, itemsJson: row?.items ?? '[]' };
}
