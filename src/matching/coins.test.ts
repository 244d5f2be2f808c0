import { describe, expect, it } from 'vitest';
import type { NormalizedBlock } from '../chains/types.ts';
import { addressCoinTransactions, coinTransactions, transactionCoinAmounts } from './coins.ts';

const base = { height: 1, hash: 'h', parentHash: 'p', timestamp: 0, tokenTransfers: [], internalTransfers: [] };

describe('coin transactions of a block', () => {
  it('UTXO: a payer with change back is outgoing by its inputs; the payee incoming by its outputs; change is not in the amount', () => {
    // tx1 spends 10 of A (resolved), pays 7 to B and 2.9 back to A (0.1 fee).
    const block: NormalizedBlock = {
      ...base,
      transactionIds: ['tx1'],
      coinMovements: [
        { transactionId: 'tx1', address: 'B', delta: 700n },
        { transactionId: 'tx1', address: 'A', delta: -710n },
      ],
      utxo: {
        outputs: [
          { transactionId: 'tx1', outpoint: 'tx1:0', address: 'B', value: 700n },
          { transactionId: 'tx1', outpoint: 'tx1:1', address: 'A', value: 290n },
        ],
        spends: [],
      },
    };
    expect(addressCoinTransactions(block, () => true)).toEqual([
      { transactionId: 'tx1', address: 'B', direction: 'incoming', amount: 700n },
      { transactionId: 'tx1', address: 'A', direction: 'outgoing', amount: 1000n },
    ]);
    expect(transactionCoinAmounts(block)).toEqual([{ transactionId: 'tx1', amount: 700n }]);
  });

  it('UTXO: an input that spends exactly what comes back (net zero) is still outgoing', () => {
    const block: NormalizedBlock = {
      ...base,
      transactionIds: ['tx1'],
      coinMovements: [],
      utxo: { outputs: [{ transactionId: 'tx1', outpoint: 'tx1:0', address: 'A', value: 5n }], spends: [] },
    };
    expect(addressCoinTransactions(block, (a) => a === 'A')).toEqual([{ transactionId: 'tx1', address: 'A', direction: 'outgoing', amount: 5n }]);
    expect(transactionCoinAmounts(block)).toEqual([]);
  });

  it('account chains: the net is the amount (fee included), a self-transfer is outgoing by its fee and moves nothing', () => {
    const block: NormalizedBlock = {
      ...base,
      transactionIds: ['t1', 't2'],
      coinMovements: [
        { transactionId: 't1', address: 'A', delta: -1021n },
        { transactionId: 't1', address: 'B', delta: 1000n },
        { transactionId: 't2', address: 'A', delta: -21n },
      ],
    };
    expect(addressCoinTransactions(block, (a) => a === 'A')).toEqual([
      { transactionId: 't1', address: 'A', direction: 'outgoing', amount: 1021n },
      { transactionId: 't2', address: 'A', direction: 'outgoing', amount: 21n },
    ]);
    expect(transactionCoinAmounts(block)).toEqual([{ transactionId: 't1', amount: 1000n }]);
  });
});

/**
 * The reference: one Map entry per (transaction, address), sorted stably by the transaction's position in
 * the block (absent ones as the first), what coins.ts computed before it walked the block instead.
 */
function reference(block: NormalizedBlock, wanted: (address: string) => boolean = () => true) {
  const byKey = new Map<string, { transactionId: string; address: string; net: bigint; out: bigint }>();
  const get = (transactionId: string, address: string) => {
    const key = `${transactionId}/${address}`;
    const t = byKey.get(key) ?? { transactionId, address, net: 0n, out: 0n };
    byKey.set(key, t);
    return t;
  };
  for (const m of block.coinMovements) if (wanted(m.address)) get(m.transactionId, m.address).net += m.delta;
  for (const o of block.utxo?.outputs ?? []) if (wanted(o.address)) get(o.transactionId, o.address).out += o.value;
  const order = new Map(block.transactionIds.map((id, i) => [id, i]));
  const tallies = [...byKey.values()].sort((a, b) => (order.get(a.transactionId) ?? 0) - (order.get(b.transactionId) ?? 0));
  const utxo = block.utxo !== undefined;
  const coins = [];
  for (const t of tallies) {
    const spent = t.out - t.net;
    const d = utxo
      ? spent > 0n
        ? { direction: 'outgoing', amount: spent }
        : t.out > 0n
          ? { direction: 'incoming', amount: t.out }
          : undefined
      : t.net < 0n
        ? { direction: 'outgoing', amount: -t.net }
        : t.net > 0n
          ? { direction: 'incoming', amount: t.net }
          : undefined;
    if (d) coins.push({ transactionId: t.transactionId, address: t.address, ...d });
  }
  const amounts = new Map<string, bigint>();
  for (const t of tallies) {
    const add = utxo ? (t.out - t.net <= 0n ? t.out : 0n) : t.net > 0n ? t.net : 0n;
    amounts.set(t.transactionId, (amounts.get(t.transactionId) ?? 0n) + add);
  }
  return { coins, amounts: [...amounts].filter(([, a]) => a > 0n).map(([transactionId, amount]) => ({ transactionId, amount })) };
}

describe('coin transactions of random blocks, against the reference', () => {
  // Deterministic pseudo-random blocks: movements in block order or shuffled, repeated (transaction, address)
  // pairs, transactions with many addresses, UTXO outputs, now and then a transaction the block does not list.
  let seed = 12345;
  const rand = (n: number) => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return (seed >>> 8) % n;
  };
  for (let round = 0; round < 300; round++) {
    it(`block ${round}`, () => {
      const transactions = 1 + rand(30);
      const transactionIds = Array.from({ length: transactions }, (_, i) => `tx${round}_${i}`);
      const addresses = Array.from({ length: 1 + rand(40) }, (_, i) => `addr${i}`);
      const id = () => (rand(50) === 0 ? `absent${rand(3)}` : (transactionIds[rand(transactions)] as string));
      const coinMovements = Array.from({ length: rand(200) }, () => ({
        transactionId: id(),
        address: addresses[rand(addresses.length)] as string,
        delta: BigInt(rand(2001) - 1000),
      }));
      const position = (t: string) => transactionIds.indexOf(t);
      if (rand(2) === 0) coinMovements.sort((a, b) => position(a.transactionId) - position(b.transactionId));
      const utxo = rand(2) === 0;
      const outputs = Array.from({ length: utxo ? rand(100) : 0 }, (_, i) => ({
        transactionId: id(),
        outpoint: `o${i}`,
        address: addresses[rand(addresses.length)] as string,
        value: BigInt(rand(1000)),
      }));
      if (rand(2) === 0) outputs.sort((a, b) => position(a.transactionId) - position(b.transactionId));
      const block: NormalizedBlock = { ...base, transactionIds, coinMovements, ...(utxo && { utxo: { outputs, spends: [] } }) };
      const wanted = (a: string) => a.endsWith('3') || a === 'addr1';
      const expected = reference(block, wanted);
      expect(addressCoinTransactions(block, wanted)).toEqual(expected.coins);
      expect(addressCoinTransactions(block, () => true)).toEqual(reference(block).coins);
      expect(transactionCoinAmounts(block)).toEqual(reference(block).amounts);
      // The one pass matching uses: the wanted addresses' coin transactions from the tallies of all.
      // Keys: what keyOf said of each address (here its number), once per (transaction, address); its
      // second argument names an entry of that address (matching reads its lookups of the block by it).
      const entries = [...block.coinMovements, ...(block.utxo?.outputs ?? [])];
      const keyOf = (a: string, entry: number) => {
        if (entries[entry]?.address !== a) throw new Error(`keyOf('${a}', ${entry}): entry ${entry} is of ${entries[entry]?.address}`);
        return wanted(a) ? Number(a.slice(4)) : -1;
      };
      const keys = expected.coins.map((c) => Number(c.address.slice(4)));
      expect(coinTransactions(block, keyOf, true)).toEqual({ addresses: expected.coins, keys, amounts: reference(block).amounts });
      expect(coinTransactions(block, keyOf, false)).toEqual({ addresses: expected.coins, keys, amounts: [] });
    });
  }
});
