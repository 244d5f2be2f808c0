/**
 * What the coin events read of a block: its coin movements (the ledger's, spends already resolved, see
 * wallets/ledger.ts resolveSpends) turned into one coin transaction per (transaction, address) with a
 * direction and an amount, and into one amount per transaction. Pure.
 *
 * - UTXO chains (CATALOGUE.md section 1.2): the movements are nets (outputs received minus inputs
 *   spent); the outputs paid to each address are in `utxo.outputs`, so the inputs an address spent are
 *   outputs - net. An address that spent an input is `outgoing` with the sum of its inputs (even when
 *   change comes back to it); otherwise `incoming` with the sum of its outputs.
 * - Account chains: the movement's net is the amount, fee included for the payer (so the signed sum
 *   of an address's coin callbacks is its balance change); negative is `outgoing`, so a transaction
 *   to itself is outgoing (by its fee).
 * - Amount of a transaction (section 7.7): UTXO, the sum of its outputs to addresses none of its known
 *   inputs spend from (change excluded); account chains, the sum of what its recipients received (the
 *   value moved; a transaction to itself moves nothing). A transaction with amount 0 is left out.
 */
import type { CoinMovement, NormalizedBlock, UtxoOutput } from '../chains/types.ts';

export type CoinDirection = 'incoming' | 'outgoing';

export interface AddressCoinTransaction {
  transactionId: string;
  address: string;
  direction: CoinDirection;
  /** Base units, > 0. */
  amount: bigint;
}

export interface TransactionCoinAmount {
  transactionId: string;
  /** Base units, > 0. */
  amount: bigint;
}

interface Tally {
  transactionId: string;
  address: string;
  net: bigint;
  /** UTXO: outputs paid to the address in the transaction. */
  out: bigint;
  /** What `keyOf` said of the address (-1 when tallied without it). */
  key: number;
}

/** Says whether an address is wanted: a key >= 0 (kept with its coin transactions), or -1. */
type KeyOf = (address: string) => number;

/** Tallies in block order, each transaction's adjacent, unless `byKey` (see talliesByKey). */
type Tallies = Tally[] & { byKey?: true };

/**
 * Per (transaction, address), in block order then first appearance: net and outputs received. Only the
 * addresses `keyOf` accepts are tallied, when given (the address events need a few watched addresses out of a block
 * of thousands; the amount events need them all).
 *
 * Speed matters (every coin movement of every block passes here): a Map keyed by transaction and address
 * would hash thousands of fresh strings per block, each hash a call out of generated code. Instead each
 * entry gets its transaction's position in the block by walking transactionIds alongside (adapters list
 * movements and outputs in block order, so the walk goes forward, usually by identity of the very same
 * string), the entries are ordered by (position, appearance) only when they are not already, and the
 * addresses of one transaction, a handful, are merged by comparing them.
 */
function tallies(block: NormalizedBlock, keyOf?: KeyOf): Tallies {
  const movements = block.coinMovements;
  const outputs = block.utxo?.outputs ?? [];
  const m = movements.length;
  // Entries in appearance order: movements (e < m), then outputs (e - m).
  const entries = new Int32Array(m + outputs.length);
  const keys = new Int32Array(m + outputs.length).fill(-1);
  let count = 0;
  for (let i = 0; i < m + outputs.length; i++) {
    if (keyOf) {
      const key = keyOf((i < m ? (movements[i] as CoinMovement) : (outputs[i - m] as UtxoOutput)).address);
      if (key < 0) continue;
      keys[count] = key;
    }
    entries[count++] = i;
  }
  if (count === 0) return [];
  const positions = transactionPositions(block.transactionIds, movements, outputs, entries, count);
  // A transaction the block does not list: the general path (never seen from our adapters).
  if (!positions) return talliesByKey(block, keyOf);
  const order = sortedByPosition(positions, count);

  const result: Tally[] = [];
  let groupStart = 0;
  let groupPosition = -1;
  let groupMap: Map<string, Tally> | undefined;
  for (let n = 0; n < count; n++) {
    const k = order ? (order[n] as number) : n;
    const e = entries[k] as number;
    const position = positions[k] as number;
    if (position !== groupPosition) {
      groupStart = result.length;
      groupPosition = position;
      groupMap = undefined;
    }
    const entry = e < m ? (movements[e] as CoinMovement) : (outputs[e - m] as UtxoOutput);
    let tally: Tally | undefined;
    if (groupMap) tally = groupMap.get(entry.address);
    else {
      for (let t = groupStart; t < result.length; t++) {
        if ((result[t] as Tally).address === entry.address) {
          tally = result[t] as Tally;
          break;
        }
      }
    }
    if (!tally) {
      tally = { transactionId: entry.transactionId, address: entry.address, net: 0n, out: 0n, key: keys[k] as number };
      result.push(tally);
      if (groupMap) groupMap.set(entry.address, tally);
      else if (result.length - groupStart > MAX_SCANNED) {
        // A transaction with many addresses (a batch payout): a Map, so that it costs linear time, not quadratic.
        groupMap = new Map();
        for (let t = groupStart; t < result.length; t++) groupMap.set((result[t] as Tally).address, result[t] as Tally);
      }
    }
    if (e < m) tally.net += (entry as CoinMovement).delta;
    else tally.out += (entry as UtxoOutput).value;
  }
  return result;
}

/** Addresses of one transaction compared one by one before a Map takes over. */
const MAX_SCANNED = 16;

/** At most this many restarts of the walk (entries out of block order) before a Map of the block's transactions is built instead. */
const MAX_RESTARTS = 8;

/**
 * The position in `transactionIds` of the transaction of each of the first `count` entries, or undefined
 * when one is not in the block. A walk forward with the entries; an entry out of order restarts it.
 */
function transactionPositions(
  transactionIds: readonly string[],
  movements: readonly CoinMovement[],
  outputs: readonly UtxoOutput[],
  entries: Int32Array,
  count: number,
): Int32Array | undefined {
  const positions = new Int32Array(count);
  const n = transactionIds.length;
  const m = movements.length;
  let j = 0;
  let restarts = 0;
  let byId: Map<string, number> | undefined;
  for (let k = 0; k < count; k++) {
    const e = entries[k] as number;
    const id = e < m ? (movements[e] as CoinMovement).transactionId : (outputs[e - m] as UtxoOutput).transactionId;
    if (byId) {
      const at = byId.get(id);
      if (at === undefined) return undefined;
      positions[k] = at;
      continue;
    }
    const from = j;
    while (j < n && transactionIds[j] !== id) j++;
    if (j === n) {
      // Behind the walk (or absent): search from the start once more, up to where the walk was.
      if (++restarts > MAX_RESTARTS) {
        byId = new Map();
        // The first position of an id, as the walk finds.
        for (let i = n - 1; i >= 0; i--) byId.set(transactionIds[i] as string, i);
        k--;
        continue;
      }
      j = 0;
      while (j < from && transactionIds[j] !== id) j++;
      if (j === from) return undefined;
    }
    positions[k] = j;
  }
  return positions;
}

/** The entries ordered by (position, appearance), or undefined when they already are. */
function sortedByPosition(positions: Int32Array, count: number): Int32Array | undefined {
  for (let k = 1; k < count; k++) {
    if ((positions[k] as number) < (positions[k - 1] as number)) {
      const order = new Int32Array(count);
      for (let i = 0; i < count; i++) order[i] = i;
      return order.sort((a, b) => (positions[a] as number) - (positions[b] as number) || a - b);
    }
  }
  return undefined;
}

/** tallies() by a Map keyed by transaction and address (marked `byKey`); for blocks whose entries name transactions the block does not list (those sort as its first). */
function talliesByKey(block: NormalizedBlock, keyOf?: KeyOf): Tallies {
  const byKey = new Map<string, Tally>();
  // The tally of an entry of a wanted address, or undefined.
  const get = (transactionId: string, address: string) => {
    const key = keyOf ? keyOf(address) : -1;
    if (keyOf && key < 0) return undefined;
    const mapKey = `${transactionId}/${address}`;
    let t = byKey.get(mapKey);
    if (!t) {
      t = { transactionId, address, net: 0n, out: 0n, key };
      byKey.set(mapKey, t);
    }
    return t;
  };
  for (const m of block.coinMovements) {
    const t = get(m.transactionId, m.address);
    if (t) t.net += m.delta;
  }
  for (const o of block.utxo?.outputs ?? []) {
    const t = get(o.transactionId, o.address);
    if (t) t.out += o.value;
  }
  const order = new Map<string, number>();
  for (const [i, id] of block.transactionIds.entries()) order.set(id, i);
  // Stable: entries of one transaction keep their first-appearance order.
  return Object.assign(
    [...byKey.values()].sort((a, b) => (order.get(a.transactionId) ?? 0) - (order.get(b.transactionId) ?? 0)),
    { byKey: true as const },
  );
}

/** The direction and amount of a tally of an address (undefined when it moved nothing). */
function directionOf(t: Tally, utxo: boolean): { direction: CoinDirection; amount: bigint } | undefined {
  if (utxo) {
    const spent = t.out - t.net;
    if (spent > 0n) return { direction: 'outgoing', amount: spent };
    return t.out > 0n ? { direction: 'incoming', amount: t.out } : undefined;
  }
  if (t.net < 0n) return { direction: 'outgoing', amount: -t.net };
  return t.net > 0n ? { direction: 'incoming', amount: t.net } : undefined;
}

/** The coin transactions of the tallies' addresses that `keyOf` accepts (all when not given), with their keys (the tallies' when not given). */
function addressTransactionsOf(all: Tallies, keyOf: KeyOf | undefined, utxo: boolean): { addresses: AddressCoinTransaction[]; keys: number[] } {
  const addresses: AddressCoinTransaction[] = [];
  const keys: number[] = [];
  for (const t of all) {
    const key = keyOf ? keyOf(t.address) : t.key;
    if (keyOf && key < 0) continue;
    const d = directionOf(t, utxo);
    if (!d) continue;
    addresses.push({ transactionId: t.transactionId, address: t.address, direction: d.direction, amount: d.amount });
    keys.push(key);
  }
  return { addresses, keys };
}

function amountsOf(all: Tallies, utxo: boolean): TransactionCoinAmount[] {
  const amountOf = (t: Tally) => {
    if (utxo) return t.out - t.net <= 0n ? t.out : 0n; // an address no input spends from
    return t.net > 0n ? t.net : 0n;
  };
  const result: TransactionCoinAmount[] = [];
  if (all.byKey) {
    // Transactions the block does not list sort as its first, among its tallies: gathered by id.
    const perTransaction = new Map<string, bigint>();
    for (const t of all) perTransaction.set(t.transactionId, (perTransaction.get(t.transactionId) ?? 0n) + amountOf(t));
    for (const [transactionId, amount] of perTransaction) if (amount > 0n) result.push({ transactionId, amount });
    return result;
  }
  // The tallies of one transaction are adjacent (block order).
  let i = 0;
  while (i < all.length) {
    const transactionId = (all[i] as Tally).transactionId;
    let amount = 0n;
    for (; i < all.length && (all[i] as Tally).transactionId === transactionId; i++) amount += amountOf(all[i] as Tally);
    if (amount > 0n) result.push({ transactionId, amount });
  }
  return result;
}

/** The coin transactions of the addresses `wanted` accepts (one per transaction and address). */
export function addressCoinTransactions(block: NormalizedBlock, wanted: (address: string) => boolean): AddressCoinTransaction[] {
  return addressTransactionsOf(
    tallies(block, (address) => (wanted(address) ? 0 : -1)),
    undefined,
    block.utxo !== undefined,
  ).addresses;
}

/** The coin amount of each transaction of the block that moves coins, in block order. */
export function transactionCoinAmounts(block: NormalizedBlock): TransactionCoinAmount[] {
  return amountsOf(tallies(block), block.utxo !== undefined);
}

/**
 * Both at once, from one pass over the block's movements: the coin transactions of the addresses
 * `keyOf` accepts (a key >= 0, looked up once per address and transaction: matching's first slot of the
 * address), each with its key, and, when `withAmounts`, transactionCoinAmounts(block) (otherwise []).
 */
export function coinTransactions(
  block: NormalizedBlock,
  keyOf: KeyOf,
  withAmounts: boolean,
): { addresses: AddressCoinTransaction[]; keys: number[]; amounts: TransactionCoinAmount[] } {
  const utxo = block.utxo !== undefined;
  if (!withAmounts) return { ...addressTransactionsOf(tallies(block, keyOf), undefined, utxo), amounts: [] };
  // Every (transaction, address) is tallied for the amounts; the address events keep the wanted ones.
  const all = tallies(block);
  return { ...addressTransactionsOf(all, keyOf, utxo), amounts: amountsOf(all, utxo) };
}
