/**
 * The wallet ledger's tables as chain following uses them (src/wallets/ledger.ts has the rules):
 * ledger_entries (the effect of each applied block on watched addresses, added to the balances once
 * confirmed) and the balance columns of wallet_addresses, wallet_token_balances and wallet_nfts. Every
 * function runs inside the follower's block transaction.
 */

import type { ChainKey } from '../domain/chains.ts';
import type { Queryable } from './db.ts';

export interface WatchedAddress {
  id: string;
  address: string;
  /** Derived from an extended key the wallet holds (store/wallet-xpubs.ts): its first movement grows the key's window (wallets/key-windows.ts). */
  derived?: boolean;
}

/** A watched row as a block's statement reads it (store/block-apply.ts): `added` when its id is above the follower's bound (wallets/watched-set.ts). */
export interface WatchedRow extends WatchedAddress {
  added: boolean;
}

export interface LedgerEntry {
  walletAddressId: string;
  kind: 'coin' | 'token' | 'nft';
  identifier: string;
  tokenId: string;
  received: bigint;
  spent: bigint;
  /** Coins: transactions of the block that paid the address, and that spent from it (0 for tokens and NFTs). */
  incoming: number;
  outgoing: number;
  delta: bigint;
  symbol: string;
  tokenType: string;
  decimals: number;
}

export interface StoredLedgerEntry extends LedgerEntry {
  blockHeight: number;
  /** The watched address (normalised), for node lookups. */
  address: string;
}

/** Inserts a block's ledger entries (the follower writes them with its block, store/block-apply.ts, unless they are confirmed at once). */
export async function insertLedgerEntries(tx: Queryable, chain: ChainKey, blockHeight: number, entries: LedgerEntry[]): Promise<void> {
  if (entries.length === 0) return;
  await tx.query(
    'ledger:insert',
    `INSERT INTO ledger_entries (blockchain, network, block_height, wallet_address_id, kind, identifier, token_id, received, spent, delta, symbol, token_type, decimals,
       incoming_count, outgoing_count)
     SELECT $1, $2, $3, * FROM unnest($4::bigint[], $5::text[], $6::text[], $7::text[], $8::numeric[], $9::numeric[], $10::numeric[], $11::text[], $12::text[], $13::int[],
       $14::int[], $15::int[])`,
    [chain.blockchain, chain.network, blockHeight, ...ledgerEntryColumns(entries)],
  );
}

/**
 * The 12 column arrays of ledger entries, in the order of ledger_entries' columns from wallet_address_id
 * to outgoing_count: the parameters of an `unnest` insert (here and in store/block-apply.ts).
 */
export function ledgerEntryColumns(entries: LedgerEntry[]): unknown[][] {
  return [
    entries.map((e) => e.walletAddressId),
    entries.map((e) => e.kind),
    entries.map((e) => e.identifier),
    entries.map((e) => e.tokenId),
    entries.map((e) => e.received.toString()),
    entries.map((e) => e.spent.toString()),
    entries.map((e) => e.delta.toString()),
    entries.map((e) => e.symbol),
    entries.map((e) => e.tokenType),
    entries.map((e) => e.decimals),
    entries.map((e) => e.incoming),
    entries.map((e) => e.outgoing),
  ];
}

interface EntryRow {
  block_height: string;
  wallet_address_id: string;
  normalized_address: string;
  kind: 'coin' | 'token' | 'nft';
  identifier: string;
  token_id: string;
  received: string;
  spent: string;
  delta: string;
  symbol: string;
  token_type: string;
  decimals: number;
  incoming_count: number;
  outgoing_count: number;
}

const toEntry = (r: EntryRow): StoredLedgerEntry => ({
  blockHeight: Number(r.block_height),
  walletAddressId: String(r.wallet_address_id),
  address: r.normalized_address,
  kind: r.kind,
  identifier: r.identifier,
  tokenId: r.token_id,
  received: BigInt(r.received),
  spent: BigInt(r.spent),
  delta: BigInt(r.delta),
  symbol: r.symbol,
  tokenType: r.token_type,
  decimals: r.decimals,
  incoming: r.incoming_count,
  outgoing: r.outgoing_count,
});

/** Deletes the entries of blocks above `ancestorHeight`, returning those already applied (to reverse). */
export async function takeOrphanedEntries(tx: Queryable, chain: ChainKey, ancestorHeight: number): Promise<StoredLedgerEntry[]> {
  const rows = await tx.query<EntryRow>(
    'ledger:take-orphaned',
    `DELETE FROM ledger_entries e USING wallet_addresses a
     WHERE e.blockchain = $1 AND e.network = $2 AND e.block_height > $3 AND a.id = e.wallet_address_id
     RETURNING e.applied, e.block_height, e.wallet_address_id, a.normalized_address, e.kind, e.identifier, e.token_id, e.received, e.spent,
       e.delta, e.symbol, e.token_type, e.decimals, e.incoming_count, e.outgoing_count`,
    [chain.blockchain, chain.network, ancestorHeight],
  );
  return (rows as (EntryRow & { applied: boolean })[])
    .filter((r) => r.applied)
    .map(toEntry)
    .sort((a, b) => b.blockHeight - a.blockHeight);
}

export interface CoinTotals {
  walletAddressId: string;
  received: bigint;
  spent: bigint;
  incoming: number;
  outgoing: number;
}

/** Adds signed coin amounts and transaction counts to addresses, negated to reverse. */
export async function addCoinTotals(tx: Queryable, totals: CoinTotals[]): Promise<void> {
  if (totals.length === 0) return;
  await tx.query(
    'ledger:add-coin',
    `UPDATE wallet_addresses a SET confirmed_balance = a.confirmed_balance + t.received - t.spent,
       total_received = a.total_received + t.received, total_spent = a.total_spent + t.spent,
       incoming_transactions = a.incoming_transactions + t.incoming, outgoing_transactions = a.outgoing_transactions + t.outgoing
     FROM unnest($1::bigint[], $2::numeric[], $3::numeric[], $4::int[], $5::int[]) AS t (id, received, spent, incoming, outgoing) WHERE a.id = t.id`,
    [
      totals.map((t) => t.walletAddressId),
      totals.map((t) => t.received.toString()),
      totals.map((t) => t.spent.toString()),
      totals.map((t) => t.incoming),
      totals.map((t) => t.outgoing),
    ],
  );
}

export interface TokenDelta {
  walletAddressId: string;
  identifier: string;
  delta: bigint;
  symbol: string;
  tokenType: string;
  decimals: number;
}

/** Adds `delta` to each token balance (a missing row counts as 0); rows that reach zero are removed. */
export async function addTokenDeltas(tx: Queryable, deltas: TokenDelta[]): Promise<void> {
  if (deltas.length === 0) return;
  await tx.query(
    'ledger:add-tokens',
    `INSERT INTO wallet_token_balances AS b (wallet_address_id, identifier, symbol, token_type, decimals, amount)
     SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::int[], $6::numeric[])
     ON CONFLICT (wallet_address_id, identifier) DO UPDATE SET amount = b.amount + EXCLUDED.amount`,
    [
      deltas.map((d) => d.walletAddressId),
      deltas.map((d) => d.identifier),
      deltas.map((d) => d.symbol),
      deltas.map((d) => d.tokenType),
      deltas.map((d) => d.decimals),
      deltas.map((d) => d.delta.toString()),
    ],
  );
  await tx.query(
    'ledger:drop-empty-tokens',
    `DELETE FROM wallet_token_balances b USING unnest($1::bigint[], $2::text[]) AS k (id, identifier)
     WHERE b.wallet_address_id = k.id AND b.identifier = k.identifier AND b.amount = 0`,
    [deltas.map((d) => d.walletAddressId), deltas.map((d) => d.identifier)],
  );
}

export interface NftHolding {
  walletAddressId: string;
  identifier: string;
  tokenId: string;
  symbol: string;
  tokenType: string;
  held: boolean;
}

/** Sets whether each address holds each NFT. */
export async function setNftHoldings(tx: Queryable, holdings: NftHolding[]): Promise<void> {
  const held = holdings.filter((h) => h.held);
  const gone = holdings.filter((h) => !h.held);
  if (gone.length > 0) {
    await tx.query(
      'ledger:nft-gone',
      `DELETE FROM wallet_nfts n USING unnest($1::bigint[], $2::text[], $3::text[]) AS k (id, identifier, token_id)
       WHERE n.wallet_address_id = k.id AND n.identifier = k.identifier AND n.token_id = k.token_id`,
      [gone.map((h) => h.walletAddressId), gone.map((h) => h.identifier), gone.map((h) => h.tokenId)],
    );
  }
  if (held.length > 0) {
    await tx.query(
      'ledger:nft-held',
      `INSERT INTO wallet_nfts (wallet_address_id, identifier, token_id, symbol, token_type)
       SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[]) ON CONFLICT DO NOTHING`,
      [held.map((h) => h.walletAddressId), held.map((h) => h.identifier), held.map((h) => h.tokenId), held.map((h) => h.symbol), held.map((h) => h.tokenType)],
    );
  }
}

/**
 * The highest wallet_addresses id of `chain`; the caller holds the chain's lock (chain-state.ts lockChain).
 * Every address of the chain with an id up to it is then committed: adding one takes the same lock
 * (services/wallets.ts addAddress) and an id is drawn after the lock is taken, from a sequence that only
 * grows, so an address added later gets a larger id. 0 when the chain has none.
 */
export async function lastWatchedId(tx: Queryable, chain: ChainKey): Promise<number> {
  const [row] = await tx.query<{ id: string | null }>(
    'ledger:last-watched-id',
    'SELECT max(id) AS id FROM wallet_addresses WHERE blockchain = $1 AND network = $2',
    [chain.blockchain, chain.network],
  );
  return row?.id === null || row?.id === undefined ? 0 : Number(row.id);
}

/**
 * Up to `limit` watched addresses of `chain` with ids up to `upToId`, after `after` in address order (a page of
 * the follower's set; an address two wallets watch comes once).
 */
export async function watchedAddressPage(q: Queryable, chain: ChainKey, page: { upToId: number; after: string; limit: number }): Promise<string[]> {
  const rows = await q.query<{ normalized_address: string }>(
    'ledger:watched-page',
    `SELECT DISTINCT normalized_address FROM wallet_addresses
     WHERE blockchain = $1 AND network = $2 AND normalized_address > $3 AND id <= $4
     ORDER BY normalized_address LIMIT $5`,
    [chain.blockchain, chain.network, page.after, page.upToId, page.limit],
  );
  return rows.map((r) => r.normalized_address);
}

/**
 * Addresses of `chain` whose opening balance is still to be read and whose watchedFromBlock has
 * `confirmations` at the chain's cursor (none before the chain has one).
 */
export async function pendingOpenings(q: Queryable, chain: ChainKey, confirmations: number): Promise<{ id: string; address: string; height: number }[]> {
  const rows = await q.query<{ id: string; normalized_address: string; watched_from_block: string }>(
    'ledger:pending-openings',
    `SELECT id, normalized_address, watched_from_block FROM wallet_addresses
     WHERE blockchain = $1 AND network = $2 AND opening_state = 'pending'
       AND watched_from_block <= (SELECT height FROM chain_cursors WHERE blockchain = $1 AND network = $2) - $3 + 1
     LIMIT 500`,
    [chain.blockchain, chain.network, confirmations],
  );
  return rows.map((r) => ({ id: String(r.id), address: r.normalized_address, height: Number(r.watched_from_block) }));
}

/**
 * Records opening balances (each added to what the ledger counted since), or that the node could not tell
 * (balance undefined), for the addresses still waiting for their opening at the height it was read at (a
 * reorganisation may have re-anchored one). Returns the ids recorded.
 */
export async function setOpenings(tx: Queryable, readings: { id: string; height: number; balance: bigint | undefined }[]): Promise<Set<string>> {
  if (readings.length === 0) return new Set();
  const rows = await tx.query<{ id: string }>(
    'ledger:set-openings',
    `UPDATE wallet_addresses a SET confirmed_balance = a.confirmed_balance + k.balance, opening_state = k.state
     FROM unnest($1::bigint[], $2::bigint[], $3::numeric[], $4::text[]) AS k (id, height, balance, state)
     WHERE a.id = k.id AND a.opening_state = 'pending' AND a.watched_from_block = k.height
     RETURNING a.id::text`,
    [
      readings.map((r) => r.id),
      readings.map((r) => r.height),
      readings.map((r) => (r.balance ?? 0n).toString()),
      readings.map((r) => (r.balance === undefined ? 'unavailable' : 'read')),
    ],
  );
  return new Set(rows.map((r) => r.id));
}

/** After a rewind: an address anchored on an orphaned block whose opening is not yet read is re-anchored on the ancestor. */
export async function reanchorAbove(tx: Queryable, chain: ChainKey, ancestorHeight: number): Promise<void> {
  await tx.query(
    'ledger:reanchor',
    `UPDATE wallet_addresses SET watched_from_block = $3
     WHERE blockchain = $1 AND network = $2 AND watched_from_block > $3 AND opening_state = 'pending'`,
    [chain.blockchain, chain.network, ancestorHeight],
  );
}

/** An output paid to a watched address (UTXO chains), as the ledger records it. */
export interface RecordedOutput {
  outpoint: string;
  address: string;
  value: bigint;
  blockHeight: number;
}

/** Records outputs to watched addresses (idempotent: a block applied again after a crash adds nothing). */
export async function recordOutputs(tx: Queryable, chain: ChainKey, outputs: RecordedOutput[], fromOpening: boolean): Promise<void> {
  if (outputs.length === 0) return;
  await tx.query(
    'ledger:record-outputs',
    `INSERT INTO ledger_outputs (blockchain, network, outpoint, address, value, block_height, from_opening)
     SELECT $1, $2, o.*, $7 FROM unnest($3::text[], $4::text[], $5::numeric[], $6::bigint[]) AS o
     ON CONFLICT DO NOTHING`,
    [
      chain.blockchain,
      chain.network,
      outputs.map((o) => o.outpoint),
      outputs.map((o) => o.address),
      outputs.map((o) => o.value.toString()),
      outputs.map((o) => o.blockHeight),
      fromOpening,
    ],
  );
}

/** The recorded outputs among `outpoints` (the ones spent by a block's inputs). */
export async function findRecordedOutputs(tx: Queryable, chain: ChainKey, outpoints: string[]): Promise<Map<string, { address: string; value: bigint }>> {
  const found = new Map<string, { address: string; value: bigint }>();
  if (outpoints.length === 0) return found;
  const rows = await tx.query<{ outpoint: string; address: string; value: string }>(
    'ledger:find-outputs',
    'SELECT outpoint, address, value FROM ledger_outputs WHERE blockchain = $1 AND network = $2 AND outpoint = ANY ($3::text[])',
    [chain.blockchain, chain.network, outpoints],
  );
  for (const r of rows) found.set(r.outpoint, { address: r.address, value: BigInt(r.value) });
  return found;
}

/** Forgets the outputs recorded from blocks above `ancestorHeight` (a reorganisation orphaned them). */
export async function forgetOutputsAbove(tx: Queryable, chain: ChainKey, ancestorHeight: number): Promise<void> {
  await tx.query('ledger:forget-outputs', 'DELETE FROM ledger_outputs WHERE blockchain = $1 AND network = $2 AND block_height > $3 AND NOT from_opening', [
    chain.blockchain,
    chain.network,
    ancestorHeight,
  ]);
}
