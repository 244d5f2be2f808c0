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
import type { NormalizedBlock } from '../chains/types.ts';

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
}

/**
 * Per (transaction, address), in block order then first appearance: net and outputs received. Only the
 * addresses `wanted` accepts are tallied (the address events need a few watched addresses out of a block
 * of thousands; the amount events need them all).
 */
function tallies(block: NormalizedBlock, wanted: (address: string) => boolean = () => true): Tally[] {
  const byKey = new Map<string, Tally>();
  const get = (transactionId: string, address: string) => {
    const key = `${transactionId}/${address}`;
    let t = byKey.get(key);
    if (!t) {
      t = { transactionId, address, net: 0n, out: 0n };
      byKey.set(key, t);
    }
    return t;
  };
  for (const m of block.coinMovements) if (wanted(m.address)) get(m.transactionId, m.address).net += m.delta;
  for (const o of block.utxo?.outputs ?? []) if (wanted(o.address)) get(o.transactionId, o.address).out += o.value;
  const order = new Map<string, number>();
  for (const [i, id] of block.transactionIds.entries()) order.set(id, i);
  // Stable: entries of one transaction keep their first-appearance order.
  return [...byKey.values()].sort((a, b) => (order.get(a.transactionId) ?? 0) - (order.get(b.transactionId) ?? 0));
}

function directionOf(t: Tally, utxo: boolean): { direction: CoinDirection; amount: bigint } | undefined {
  if (utxo) {
    const spent = t.out - t.net;
    if (spent > 0n) return { direction: 'outgoing', amount: spent };
    return t.out > 0n ? { direction: 'incoming', amount: t.out } : undefined;
  }
  if (t.net < 0n) return { direction: 'outgoing', amount: -t.net };
  return t.net > 0n ? { direction: 'incoming', amount: t.net } : undefined;
}

/** The coin transactions of the addresses `wanted` accepts (one per transaction and address). */
export function addressCoinTransactions(block: NormalizedBlock, wanted: (address: string) => boolean): AddressCoinTransaction[] {
  const utxo = block.utxo !== undefined;
  const result: AddressCoinTransaction[] = [];
  for (const t of tallies(block, wanted)) {
    const d = directionOf(t, utxo);
    if (d) result.push({ transactionId: t.transactionId, address: t.address, ...d });
  }
  return result;
}

/** The coin amount of each transaction of the block that moves coins, in block order. */
export function transactionCoinAmounts(block: NormalizedBlock): TransactionCoinAmount[] {
  const utxo = block.utxo !== undefined;
  const perTransaction = new Map<string, Tally[]>();
  for (const t of tallies(block)) {
    const list = perTransaction.get(t.transactionId);
    if (list) list.push(t);
    else perTransaction.set(t.transactionId, [t]);
  }
  const result: TransactionCoinAmount[] = [];
  for (const [transactionId, list] of perTransaction) {
    let amount = 0n;
    for (const t of list) {
      if (utxo) {
        if (t.out - t.net <= 0n) amount += t.out; // an address no input spends from
      } else if (t.net > 0n) amount += t.net;
    }
    if (amount > 0n) result.push({ transactionId, amount });
  }
  return result;
}
