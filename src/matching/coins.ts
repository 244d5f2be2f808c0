/**
 * What the coin events read of a block: its coin movements (the ledger's, spends already resolved, see
 * wallets/ledger.ts resolveSpends) turned into one coin transaction per (transaction, address) with a
 * direction and an amount, and into one amount per transaction. Pure.
 *
 * - UTXO chains (docs/reference/events/README.md#amount-and-direction): the movements are nets (outputs received minus inputs
 *   spent); the outputs paid to each address are in `utxo.outputs`, so the inputs an address spent are
 *   outputs - net. An address that spent an input is `outgoing` with the sum of its inputs (even when
 *   change comes back to it); otherwise `incoming` with the sum of its outputs.
 * - Account chains: the movement's net is the amount, fee included for the payer (so the signed sum
 *   of an address's coin callbacks is its balance change); negative is `outgoing`, so a transaction
 *   to itself is outgoing (by its fee).
 * - Amount of a transaction (docs/reference/api.md#settled-callback-contents): UTXO, the sum of its outputs to addresses none of its known
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

/**
 * Per (transaction, address) tallies, tally t in columns (a block has thousands: one object each was
 * most of the time of this module, in allocation and collection): `entry[t]` its first entry (movement
 * e < m, then output e - m), which tells its transaction and address; `net[t]` the sum of its movements'
 * deltas; `out[t]` (UTXO) the outputs paid to the address in the transaction; `key[t]` what `keyOf` said
 * of the address (-1 when tallied without it). In block order, each transaction's adjacent, unless
 * `byKey` (see talliesByKey).
 */
interface Tallies {
  count: number;
  entry: Int32Array;
  net: bigint[];
  /** Empty when the block has no outputs (every out is 0n). */
  out: bigint[];
  key: Int32Array;
  byKey: boolean;
  movements: readonly CoinMovement[];
  outputs: readonly UtxoOutput[];
}

/** The entry (movement, then output) `e` of a block. */
const entryAt = (movements: readonly CoinMovement[], outputs: readonly UtxoOutput[], e: number): CoinMovement | UtxoOutput =>
  e < movements.length ? (movements[e] as CoinMovement) : (outputs[e - movements.length] as UtxoOutput);

/**
 * Says whether an address is wanted: a key >= 0 (kept with its coin transactions), or -1. `entry` is
 * where the address was seen: movement `entry` of the block, or output `entry` - coinMovements.length
 * (a caller that looked the block's addresses up beforehand answers from there); the same address
 * must get the same key wherever it is seen.
 */
export type KeyOf = (address: string, entry: number) => number;

const NO_TALLIES = (movements: readonly CoinMovement[], outputs: readonly UtxoOutput[]): Tallies => ({
  count: 0,
  entry: new Int32Array(0),
  net: [],
  out: [],
  key: new Int32Array(0),
  byKey: false,
  movements,
  outputs,
});

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
  const total = m + outputs.length;
  // Entries in appearance order: movements (e < m), then outputs (e - m).
  const entries = new Int32Array(total);
  const keys = new Int32Array(total).fill(-1);
  let count = 0;
  for (let i = 0; i < total; i++) {
    if (keyOf) {
      const key = keyOf(entryAt(movements, outputs, i).address, i);
      if (key < 0) continue;
      keys[count] = key;
    }
    entries[count++] = i;
  }
  if (count === 0) return NO_TALLIES(movements, outputs);
  const positions = transactionPositions(block.transactionIds, movements, outputs, entries, count);
  // A transaction the block does not list: the general path (never seen from our adapters).
  if (!positions) return talliesByKey(block, keyOf);
  const order = sortedByPosition(positions, count);

  const entry = new Int32Array(count);
  const key = new Int32Array(count);
  const net: bigint[] = [];
  const out: bigint[] = [];
  const withOutputs = outputs.length > 0;
  let tallied = 0;
  let groupStart = 0;
  let groupPosition = -1;
  let groupMap: Map<string, number> | undefined;
  for (let n = 0; n < count; n++) {
    const k = order ? (order[n] as number) : n;
    const e = entries[k] as number;
    const position = positions[k] as number;
    if (position !== groupPosition) {
      groupStart = tallied;
      groupPosition = position;
      groupMap = undefined;
    }
    const address = entryAt(movements, outputs, e).address;
    let t = -1;
    if (groupMap) t = groupMap.get(address) ?? -1;
    else {
      for (let u = groupStart; u < tallied; u++) {
        if (entryAt(movements, outputs, entry[u] as number).address === address) {
          t = u;
          break;
        }
      }
    }
    if (t < 0) {
      // Started with the entry's amount (a bigint sum is a new bigint: one fewer per tally).
      t = tallied++;
      entry[t] = e;
      key[t] = keys[k] as number;
      net.push(e < m ? (movements[e] as CoinMovement).delta : 0n);
      if (withOutputs) out.push(e < m ? 0n : (outputs[e - m] as UtxoOutput).value);
      if (groupMap) groupMap.set(address, t);
      else if (tallied - groupStart > MAX_SCANNED) {
        // A transaction with many addresses (a batch payout): a Map, so that it costs linear time, not quadratic.
        groupMap = new Map();
        for (let u = groupStart; u < tallied; u++) groupMap.set(entryAt(movements, outputs, entry[u] as number).address, u);
      }
    } else if (e < m) net[t] = (net[t] as bigint) + (movements[e] as CoinMovement).delta;
    else out[t] = (out[t] as bigint) + (outputs[e - m] as UtxoOutput).value;
  }
  return { count: tallied, entry, net, out, key, byKey: false, movements, outputs };
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
  const movements = block.coinMovements;
  const outputs = block.utxo?.outputs ?? [];
  const m = movements.length;
  const byKey = new Map<string, { entry: number; key: number; net: bigint; out: bigint }>();
  for (let e = 0; e < m + outputs.length; e++) {
    const { transactionId, address } = entryAt(movements, outputs, e);
    const key = keyOf ? keyOf(address, e) : -1;
    if (keyOf && key < 0) continue;
    const mapKey = `${transactionId}/${address}`;
    let t = byKey.get(mapKey);
    if (!t) {
      t = { entry: e, key, net: 0n, out: 0n };
      byKey.set(mapKey, t);
    }
    if (e < m) t.net += (movements[e] as CoinMovement).delta;
    else t.out += (outputs[e - m] as UtxoOutput).value;
  }
  const order = new Map<string, number>();
  for (const [i, id] of block.transactionIds.entries()) order.set(id, i);
  const position = (e: number) => order.get(entryAt(movements, outputs, e).transactionId) ?? 0;
  // Stable: entries of one transaction keep their first-appearance order.
  const sorted = [...byKey.values()].sort((a, b) => position(a.entry) - position(b.entry));
  return {
    count: sorted.length,
    entry: Int32Array.from(sorted, (t) => t.entry),
    net: sorted.map((t) => t.net),
    out: outputs.length > 0 ? sorted.map((t) => t.out) : [],
    key: Int32Array.from(sorted, (t) => t.key),
    byKey: true,
    movements,
    outputs,
  };
}

/**
 * The coin transactions of the tallies' addresses that `keyOf` accepts (all when not given), with their
 * keys (the tallies' when not given). The direction and amount of a tally: UTXO, `outgoing` with what it
 * spent (outputs - net) when it spent something, else `incoming` with its outputs; account chains, the
 * sign and size of the net; none when it moved nothing.
 */
function addressTransactionsOf(all: Tallies, keyOf: KeyOf | undefined, utxo: boolean): { addresses: AddressCoinTransaction[]; keys: number[] } {
  const addresses: AddressCoinTransaction[] = [];
  const keys: number[] = [];
  const { movements, outputs } = all;
  for (let t = 0; t < all.count; t++) {
    const e = all.entry[t] as number;
    const { transactionId, address } = entryAt(movements, outputs, e);
    const key = keyOf ? keyOf(address, e) : (all.key[t] as number);
    if (keyOf && key < 0) continue;
    const net = all.net[t] as bigint;
    let direction: CoinDirection;
    let amount: bigint;
    if (utxo) {
      const out = all.out.length > 0 ? (all.out[t] as bigint) : 0n;
      const spent = out - net;
      if (spent > 0n) {
        direction = 'outgoing';
        amount = spent;
      } else if (out > 0n) {
        direction = 'incoming';
        amount = out;
      } else continue;
    } else if (net < 0n) {
      direction = 'outgoing';
      amount = -net;
    } else if (net > 0n) {
      direction = 'incoming';
      amount = net;
    } else continue;
    addresses.push({ transactionId, address, direction, amount });
    keys.push(key);
  }
  return { addresses, keys };
}

/**
 * The amount of each transaction: what its tallies add, UTXO their outputs when they spent no input
 * (not change), account chains their positive nets. Only what adds something is added (a bigint sum is
 * a new bigint).
 */
function amountsOf(all: Tallies, utxo: boolean): TransactionCoinAmount[] {
  const { movements, outputs } = all;
  const transactionOf = (t: number) => entryAt(movements, outputs, all.entry[t] as number).transactionId;
  const amountOf = (t: number): bigint => {
    const net = all.net[t] as bigint;
    if (!utxo) return net > 0n ? net : 0n;
    const out = all.out.length > 0 ? (all.out[t] as bigint) : 0n;
    return out > 0n && net >= out ? out : 0n; // an address no input spends from
  };
  const result: TransactionCoinAmount[] = [];
  if (all.byKey) {
    // Transactions the block does not list sort as its first, among its tallies: gathered by id.
    const perTransaction = new Map<string, bigint>();
    for (let t = 0; t < all.count; t++) perTransaction.set(transactionOf(t), (perTransaction.get(transactionOf(t)) ?? 0n) + amountOf(t));
    for (const [transactionId, amount] of perTransaction) if (amount > 0n) result.push({ transactionId, amount });
    return result;
  }
  // The tallies of one transaction are adjacent (block order).
  let t = 0;
  while (t < all.count) {
    const transactionId = transactionOf(t);
    let amount = 0n;
    for (; t < all.count && transactionOf(t) === transactionId; t++) {
      const add = amountOf(t);
      if (add !== 0n) amount = amount === 0n ? add : amount + add;
    }
    if (amount > 0n) result.push({ transactionId, amount });
  }
  return result;
}

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
