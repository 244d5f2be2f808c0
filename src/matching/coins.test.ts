import { describe, expect, it } from 'vitest';
import type { NormalizedBlock } from '../chains/types.ts';
import { addressCoinTransactions, transactionCoinAmounts } from './coins.ts';

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
