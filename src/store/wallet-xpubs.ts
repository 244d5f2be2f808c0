/**
 * Extended keys held by wallets (migration 087, docs/concepts/wallets.md#extended-keys-in-a-wallet): the key rows
 * (wallet_xpubs) and their derived addresses, which are watched addresses of the wallet (wallet_addresses rows
 * marked with their key, chain, index and path) so that the ledger counts them as any other. Written by the
 * add (the first window, under the chain's lock) and by the follower (used heights, the window extended) in
 * the block's own transaction; a reorganisation clears the used heights of its dropped blocks.
 */
import type { Blockchain, ChainKey, Network } from '../domain/chains.ts';
import type { SubscribedWalletKey } from '../domain/subscriptions.ts';
import type { Queryable } from './db.ts';

export interface WalletXpub {
  id: string;
  blockchain: Blockchain;
  network: Network;
  key: SubscribedWalletKey;
  createdAt: Date;
  /** Derived addresses the wallet watches (the window: gapLimit unused ones beyond the highest used, per chain). */
  watchedAddresses: number;
  usedAddresses: number;
  /** The lowest watchedFromBlock of its addresses (null until the chain is followed). */
  watchedFromBlock: bigint | null;
}

interface XpubRow {
  id: string;
  blockchain: Blockchain;
  network: Network;
  wallet_key: SubscribedWalletKey;
  created_at: Date;
  watched: number;
  used: number;
  from_block: string | null;
}

const toXpub = (r: XpubRow): WalletXpub => ({
  id: r.id,
  blockchain: r.blockchain,
  network: r.network,
  key: r.wallet_key,
  createdAt: r.created_at,
  watchedAddresses: r.watched,
  usedAddresses: r.used,
  watchedFromBlock: r.from_block === null ? null : BigInt(r.from_block),
});

const XPUB_COLUMNS = `k.id, k.blockchain, k.network, k.wallet_key, k.created_at,
  (SELECT count(*)::int FROM wallet_addresses a WHERE a.wallet_xpub_id = k.id) AS watched,
  (SELECT count(*)::int FROM wallet_addresses a WHERE a.wallet_xpub_id = k.id AND a.xpub_used_height IS NOT NULL) AS used,
  (SELECT min(a.watched_from_block)::text FROM wallet_addresses a WHERE a.wallet_xpub_id = k.id) AS from_block`;

/** Adds a key to a wallet; undefined when the wallet already holds it (same field, text and derivation on the chain). */
export async function insertWalletXpub(
  tx: Queryable,
  x: { id: string; walletId: string; blockchain: Blockchain; network: Network; key: SubscribedWalletKey },
): Promise<{ id: string } | undefined> {
  const [row] = await tx.query<{ id: string }>(
    'wallet-xpubs:insert',
    `INSERT INTO wallet_xpubs (id, wallet_id, blockchain, network, wallet_key, key_identity) VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (wallet_id, blockchain, network, key_identity) DO NOTHING RETURNING id`,
    [x.id, x.walletId, x.blockchain, x.network, JSON.stringify(x.key), `${x.key.field}:${x.key.text}:${x.key.derivation ?? ''}`],
  );
  return row;
}

/** The addresses of `addresses` (normalised) the wallet already watches on the chain, with the path of those another key derived. */
export async function alreadyWatched(
  q: Queryable,
  walletId: string,
  chain: ChainKey,
  addresses: readonly string[],
): Promise<{ address: string; derivationPath: string | null }[]> {
  if (addresses.length === 0) return [];
  const rows = await q.query<{ normalized_address: string; derivation_path: string | null }>(
    'wallet-xpubs:already-watched',
    `SELECT normalized_address, derivation_path FROM wallet_addresses
     WHERE wallet_id = $1 AND blockchain = $2 AND network = $3 AND normalized_address = ANY ($4::text[]) ORDER BY id`,
    [walletId, chain.blockchain, chain.network, addresses],
  );
  return rows.map((r) => ({ address: r.normalized_address, derivationPath: r.derivation_path }));
}

export type DerivedRow = { address: string; derivationPath: string; change: boolean; index: number };

/** Derived addresses of several keys of one chain: each row with its wallet and key. */
export type KeyRow = DerivedRow & { walletId: string; xpubId: string };

/**
 * Adds derived addresses of several keys of `chain` as watched addresses of their wallets, in one statement,
 * counted from `watchedFromBlock` (an address the wallet watches already is left as it is). The caller holds
 * the chain's lock. Returns the rows added.
 */
export async function insertKeyRows(
  tx: Queryable,
  chain: ChainKey,
  watchedFromBlock: bigint | null,
  rows: readonly KeyRow[],
): Promise<{ id: string; address: string }[]> {
  if (rows.length === 0) return [];
  const added = await tx.query<{ id: string; normalized_address: string }>(
    'wallet-xpubs:insert-key-rows',
    `INSERT INTO wallet_addresses (wallet_id, blockchain, network, address, normalized_address, watched_from_block,
       wallet_xpub_id, xpub_change, xpub_index, derivation_path)
     SELECT d.wallet_id, $1, $2, d.address, d.address, $3::bigint, d.xpub_id, d.change, d.index, d.path
     FROM unnest($4::uuid[], $5::uuid[], $6::text[], $7::boolean[], $8::int[], $9::text[]) AS d (wallet_id, xpub_id, address, change, index, path)
     ON CONFLICT (wallet_id, blockchain, network, normalized_address) DO NOTHING
     RETURNING id::text, normalized_address`,
    [
      chain.blockchain,
      chain.network,
      watchedFromBlock === null ? null : String(watchedFromBlock),
      rows.map((r) => r.walletId),
      rows.map((r) => r.xpubId),
      rows.map((r) => r.address),
      rows.map((r) => r.change),
      rows.map((r) => r.index),
      rows.map((r) => r.derivationPath),
    ],
  );
  return added.map((r) => ({ id: r.id, address: r.normalized_address }));
}

/**
 * Adds derived addresses of key `xpubId` as watched addresses of its wallet, counted from `watchedFromBlock`
 * (an address another key of the wallet watches already is left to it). The caller holds the chain's lock
 * (store/ledger.ts lastWatchedId). Returns the rows added.
 */
export async function insertDerivedWalletAddresses(
  tx: Queryable,
  x: { walletId: string; xpubId: string; blockchain: Blockchain; network: Network; watchedFromBlock: bigint | null },
  rows: readonly DerivedRow[],
): Promise<{ id: string; address: string; change: boolean; index: number }[]> {
  if (rows.length === 0) return [];
  const added = await tx.query<{ id: string; normalized_address: string; xpub_change: boolean; xpub_index: number }>(
    'wallet-xpubs:insert-addresses',
    `INSERT INTO wallet_addresses (wallet_id, blockchain, network, address, normalized_address, watched_from_block,
       wallet_xpub_id, xpub_change, xpub_index, derivation_path)
     SELECT $1, $2, $3, d.address, d.address, $4::bigint, $5, d.change, d.index, d.path
     FROM unnest($6::text[], $7::boolean[], $8::int[], $9::text[]) AS d (address, change, index, path)
     ON CONFLICT (wallet_id, blockchain, network, normalized_address) DO NOTHING
     RETURNING id::text, normalized_address, xpub_change, xpub_index`,
    [
      x.walletId,
      x.blockchain,
      x.network,
      x.watchedFromBlock === null ? null : String(x.watchedFromBlock),
      x.xpubId,
      rows.map((r) => r.address),
      rows.map((r) => r.change),
      rows.map((r) => r.index),
      rows.map((r) => r.derivationPath),
    ],
  );
  return added.map((r) => ({ id: r.id, address: r.normalized_address, change: r.xpub_change, index: r.xpub_index }));
}

/** Past use found at add: addresses of the key marked used, each at its own height. */
export async function markPastUse(tx: Queryable, xpubId: string, uses: readonly { change: boolean; index: number; height: number }[]): Promise<void> {
  if (uses.length === 0) return;
  await tx.query(
    'wallet-xpubs:mark-past-use',
    `UPDATE wallet_addresses a SET xpub_used_height = u.height
     FROM unnest($2::boolean[], $3::int[], $4::bigint[]) AS u (change, index, height)
     WHERE a.wallet_xpub_id = $1 AND a.xpub_change = u.change AND a.xpub_index = u.index`,
    [xpubId, uses.map((u) => u.change), uses.map((u) => u.index), uses.map((u) => u.height)],
  );
}

/** One chain of a key whose addresses a block used for the first time: what the follower extends the window from. */
export interface KeyWindowEdge {
  xpubId: string;
  walletId: string;
  key: SubscribedWalletKey;
  change: boolean;
  /** The highest index this marking used. */
  highestMarked: number;
  /** The highest index derived so far. */
  highest: number;
}

/**
 * Marks the derived addresses among `uses` used, each at its height (those used already keep their first
 * height), and returns, per chain of each key that had one newly used, its edges. Derived rows only: the ids
 * of other watched addresses match nothing.
 */
export async function markKeyUses(tx: Queryable, uses: readonly { walletAddressId: string; height: number }[]): Promise<KeyWindowEdge[]> {
  if (uses.length === 0) return [];
  const rows = await tx.query<{
    wallet_xpub_id: string;
    wallet_id: string;
    wallet_key: SubscribedWalletKey;
    xpub_change: boolean;
    highest_marked: number;
    highest: number;
  }>(
    'wallet-xpubs:mark-used',
    `WITH marked AS (
       UPDATE wallet_addresses a SET xpub_used_height = u.height
       FROM unnest($1::bigint[], $2::bigint[]) AS u (id, height)
       WHERE a.id = u.id AND a.wallet_xpub_id IS NOT NULL AND a.xpub_used_height IS NULL
       RETURNING a.wallet_xpub_id, a.xpub_change, a.xpub_index)
     SELECT m.wallet_xpub_id, k.wallet_id, k.wallet_key, m.xpub_change, max(m.xpub_index) AS highest_marked,
       (SELECT max(d.xpub_index) FROM wallet_addresses d WHERE d.wallet_xpub_id = m.wallet_xpub_id AND d.xpub_change = m.xpub_change) AS highest
     FROM marked m JOIN wallet_xpubs k ON k.id = m.wallet_xpub_id
     GROUP BY m.wallet_xpub_id, k.wallet_id, k.wallet_key, m.xpub_change`,
    [uses.map((u) => u.walletAddressId), uses.map((u) => u.height)],
  );
  return rows.map((r) => ({
    xpubId: r.wallet_xpub_id,
    walletId: r.wallet_id,
    key: r.wallet_key,
    change: r.xpub_change,
    highestMarked: r.highest_marked,
    highest: r.highest,
  }));
}

/** A reorganisation back to `ancestorHeight`: the used heights its dropped blocks set are cleared (the addresses stay watched). */
export async function clearKeyUsesAbove(tx: Queryable, chain: ChainKey, ancestorHeight: number): Promise<number> {
  const rows = await tx.query(
    'wallet-xpubs:clear-used-above',
    `UPDATE wallet_addresses SET xpub_used_height = NULL
     WHERE blockchain = $1 AND network = $2 AND xpub_used_height > $3 RETURNING id`,
    [chain.blockchain, chain.network, ancestorHeight],
  );
  return rows.length;
}

/** The keys of a wallet, oldest first. */
export async function listWalletXpubs(q: Queryable, walletId: string): Promise<WalletXpub[]> {
  const rows = await q.query<XpubRow>('wallet-xpubs:list', `SELECT ${XPUB_COLUMNS} FROM wallet_xpubs k WHERE k.wallet_id = $1 ORDER BY k.created_at, k.id`, [
    walletId,
  ]);
  return rows.map(toXpub);
}

/** One key of a wallet on a chain. */
export async function getWalletXpub(q: Queryable, walletId: string, chain: ChainKey, xpubId: string): Promise<WalletXpub | undefined> {
  const [row] = await q.query<XpubRow>(
    'wallet-xpubs:get',
    `SELECT ${XPUB_COLUMNS} FROM wallet_xpubs k WHERE k.wallet_id = $1 AND k.blockchain = $2 AND k.network = $3 AND k.id = $4`,
    [walletId, chain.blockchain, chain.network, xpubId],
  );
  return row ? toXpub(row) : undefined;
}

/** Removes a key and (by cascade) its derived addresses with their ledger; true when it was there. */
export async function deleteWalletXpub(tx: Queryable, walletId: string, chain: ChainKey, xpubId: string): Promise<boolean> {
  const rows = await tx.query(
    'wallet-xpubs:delete',
    'DELETE FROM wallet_xpubs WHERE wallet_id = $1 AND blockchain = $2 AND network = $3 AND id = $4 RETURNING id',
    [walletId, chain.blockchain, chain.network, xpubId],
  );
  return rows.length > 0;
}

/** A derived address of a wallet's key, with what the ledger counts of it (base units). */
export interface KeyAddress {
  address: string;
  derivationPath: string;
  change: boolean;
  index: number;
  usedHeight: number | null;
  confirmedBalance: bigint;
  openingState: 'pending' | 'read' | 'unavailable';
}

/** A page of the derived addresses of a wallet's key (receive chain first, by index), and their total. */
export async function listKeyAddresses(
  q: Queryable,
  xpubId: string,
  filter: { change?: boolean; used?: boolean },
  page: { limit: number; offset: number },
): Promise<{ total: number; items: KeyAddress[] }> {
  const rows = await q.query<{
    normalized_address: string;
    derivation_path: string;
    xpub_change: boolean;
    xpub_index: number;
    xpub_used_height: string | null;
    confirmed_balance: string;
    opening_state: KeyAddress['openingState'];
    total: number;
  }>(
    'wallet-xpubs:addresses',
    `SELECT normalized_address, derivation_path, xpub_change, xpub_index, xpub_used_height::text, confirmed_balance::text, opening_state,
       count(*) OVER ()::int AS total
     FROM wallet_addresses
     WHERE wallet_xpub_id = $1 AND ($2::boolean IS NULL OR xpub_change = $2) AND ($3::boolean IS NULL OR (xpub_used_height IS NOT NULL) = $3)
     ORDER BY xpub_change, xpub_index LIMIT $4 OFFSET $5`,
    [xpubId, filter.change ?? null, filter.used ?? null, page.limit, page.offset],
  );
  const items = rows.map((r) => ({
    address: r.normalized_address,
    derivationPath: r.derivation_path,
    change: r.xpub_change,
    index: r.xpub_index,
    usedHeight: r.xpub_used_height === null ? null : Number(r.xpub_used_height),
    confirmedBalance: BigInt(r.confirmed_balance),
    openingState: r.opening_state,
  }));
  if (rows.length > 0 || page.offset === 0) return { total: rows[0]?.total ?? 0, items };
  const [count] = await q.query<{ n: number }>(
    'wallet-xpubs:count-addresses',
    `SELECT count(*)::int AS n FROM wallet_addresses
     WHERE wallet_xpub_id = $1 AND ($2::boolean IS NULL OR xpub_change = $2) AND ($3::boolean IS NULL OR (xpub_used_height IS NOT NULL) = $3)`,
    [xpubId, filter.change ?? null, filter.used ?? null],
  );
  return { total: count?.n ?? 0, items };
}
