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

export interface CoinTotals {
  blockchain: Blockchain;
  network: Network;
  confirmedBalance: bigint;
  totalReceived: bigint;
  totalSpent: bigint;
}

export interface TokenAmount {
  blockchain: Blockchain;
  network: Network;
  identifier: string;
  symbol: string;
  type: string;
  decimals: number;
  amount: bigint;
}

export interface HeldNft {
  blockchain: Blockchain;
  network: Network;
  identifier: string;
  symbol: string;
  tokenId: string;
  type: string;
}

export interface WalletAssets extends Wallet {
  coins: CoinTotals[];
  fungibleTokens: TokenAmount[];
  nonFungibleTokens: HeldNft[];
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

interface AssetsRow {
  id: string;
  name: string;
  created_at: Date;
  coins: { blockchain: Blockchain; network: Network; confirmed_balance: string; total_received: string; total_spent: string }[];
  tokens: { blockchain: Blockchain; network: Network; identifier: string; symbol: string; token_type: string; decimals: number; amount: string }[];
  nfts: { blockchain: Blockchain; network: Network; identifier: string; symbol: string; token_id: string; token_type: string }[];
}

/**
 * One page of wallets with their assets, in one statement: coins summed per (blockchain, network)
 * over the wallet's addresses, fungible tokens summed per contract, NFTs listed. The numeric sums are
 * cast to text so no precision is lost on the way to JavaScript.
 */
const ASSETS_SQL = `
  SELECT w.id, w.name, w.created_at,
    (SELECT coalesce(json_agg(c ORDER BY c.blockchain, c.network), '[]') FROM (
       SELECT a.blockchain, a.network, sum(a.confirmed_balance)::text AS confirmed_balance,
              sum(a.total_received)::text AS total_received, sum(a.total_spent)::text AS total_spent
       FROM wallet_addresses a WHERE a.wallet_id = w.id GROUP BY a.blockchain, a.network) c) AS coins,
    (SELECT coalesce(json_agg(t ORDER BY t.blockchain, t.network, t.identifier), '[]') FROM (
       SELECT a.blockchain, a.network, b.identifier, min(b.symbol) AS symbol, min(b.token_type) AS token_type,
              min(b.decimals) AS decimals, sum(b.amount)::text AS amount
       FROM wallet_addresses a JOIN wallet_token_balances b ON b.wallet_address_id = a.id
       WHERE a.wallet_id = w.id GROUP BY a.blockchain, a.network, b.identifier) t) AS tokens,
    (SELECT coalesce(json_agg(n ORDER BY n.blockchain, n.network, n.identifier, n.token_id), '[]') FROM (
       SELECT DISTINCT a.blockchain, a.network, n.identifier, n.symbol, n.token_id, n.token_type
       FROM wallet_addresses a JOIN wallet_nfts n ON n.wallet_address_id = a.id WHERE a.wallet_id = w.id) n) AS nfts
  FROM wallets w`;

function toAssets(r: AssetsRow): WalletAssets {
  return {
    id: r.id,
    name: r.name,
    createdAt: r.created_at,
    coins: r.coins.map((c) => ({
      blockchain: c.blockchain,
      network: c.network,
      confirmedBalance: BigInt(c.confirmed_balance),
      totalReceived: BigInt(c.total_received),
      totalSpent: BigInt(c.total_spent),
    })),
    fungibleTokens: r.tokens.map((t) => ({
      blockchain: t.blockchain,
      network: t.network,
      identifier: t.identifier,
      symbol: t.symbol,
      type: t.token_type,
      decimals: t.decimals,
      amount: BigInt(t.amount),
    })),
    nonFungibleTokens: r.nfts.map((n) => ({
      blockchain: n.blockchain,
      network: n.network,
      identifier: n.identifier,
      symbol: n.symbol,
      tokenId: n.token_id,
      type: n.token_type,
    })),
  };
}

export async function listWalletAssets(
  q: Queryable,
  customerId: string,
  page: { limit: number; offset: number },
): Promise<{ total: number; items: WalletAssets[] }> {
  const [rows, counts] = await Promise.all([
    q.query<AssetsRow>(
      'wallets:assets-page',
      `${ASSETS_SQL} WHERE w.id IN (SELECT id FROM wallets WHERE customer_id = $1 ORDER BY created_at, id LIMIT $2 OFFSET $3)
       ORDER BY w.created_at, w.id`,
      [customerId, page.limit, page.offset],
    ),
    q.query<{ n: number }>('wallets:count', 'SELECT count(*)::int AS n FROM wallets WHERE customer_id = $1', [customerId]),
  ]);
  return { total: counts[0]?.n ?? 0, items: rows.map(toAssets) };
}

export async function getWalletAssets(q: Queryable, customerId: string, walletId: string): Promise<WalletAssets | undefined> {
  const [row] = await q.query<AssetsRow>('wallets:assets-one', `${ASSETS_SQL} WHERE w.customer_id = $1 AND w.id = $2`, [customerId, walletId]);
  return row ? toAssets(row) : undefined;
}
