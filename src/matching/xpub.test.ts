import { describe, expect, it } from 'vitest';
import type { NormalizedBlock } from '../chains/types.ts';
import type { SubscribedWalletKey } from '../domain/subscriptions.ts';
import { SubscriptionIndex } from './index.ts';
import { matchBlock } from './match.ts';
import { matchXpub } from './xpub.ts';

const base = { height: 7, hash: 'h', parentHash: 'p', timestamp: 0, tokenTransfers: [], internalTransfers: [] };
const KEY: SubscribedWalletKey = { field: 'extendedPublicKey', text: 'tpubTEST', derivation: 'segwit', gapLimit: 20, regtest: true };
const ID = '019ad8c2-3a5d-7ede-85db-f7e4f1b8e3d0';
const OTHER = '019ad8c2-3a5d-7ede-85db-f7e4f1b8e3d1';

function indexWith(...ids: string[]): SubscriptionIndex {
  return indexOf(ids.map((id) => ({ id, eventType: 'XPUB_COINS_TRANSACTION_CONFIRMED' as const })));
}

function indexOf(subs: { id: string; eventType: 'XPUB_COINS_TRANSACTION_CONFIRMED' | 'XPUB_COINS_TRANSACTION_UNCONFIRMED' }[]): SubscriptionIndex {
  const index = new SubscriptionIndex('litecoin', 'testnet');
  for (const { id, eventType } of subs) {
    index.add({
      id,
      customerId: '1',
      eventType,
      blockchain: 'litecoin',
      network: 'testnet',
      target: KEY.text,
      receiveCallbackOn: eventType === 'XPUB_COINS_TRANSACTION_CONFIRMED' ? 2 : null,
      amountHigherThan: null,
      isActive: true,
      walletKey: KEY,
      derived: [
        { address: 'R0', derivationPath: 'm/0/0', change: false, index: 0 },
        { address: 'R1', derivationPath: 'm/0/1', change: false, index: 1 },
        { address: 'C0', derivationPath: 'm/1/0', change: true, index: 0 },
      ],
    });
  }
  return index;
}

/** tx1 spends 1000 of R0 (resolved) and `foreign` of X, pays `out` to `to` and 290 to C0. */
function spendBlock(to: string, out: bigint, foreign = 0n): NormalizedBlock {
  return {
    ...base,
    transactionIds: ['tx0', 'tx1'],
    coinMovements: [
      { transactionId: 'tx1', address: to, delta: out },
      { transactionId: 'tx1', address: 'C0', delta: 290n },
      { transactionId: 'tx1', address: 'R0', delta: -1000n },
      ...(foreign > 0n ? [{ transactionId: 'tx1', address: 'X', delta: -foreign }] : []),
    ],
    utxo: {
      outputs: [
        { transactionId: 'tx1', outpoint: 'tx1:0', address: to, value: out },
        { transactionId: 'tx1', outpoint: 'tx1:1', address: 'C0', value: 290n },
      ],
      spends: [],
    },
  };
}

describe('wallet-key matches (matching/xpub.ts)', () => {
  it('the confirmed and the unconfirmed subscriptions of the same key are matched apart, each by its own event', () => {
    const index = indexOf([
      { id: ID, eventType: 'XPUB_COINS_TRANSACTION_CONFIRMED' },
      { id: OTHER, eventType: 'XPUB_COINS_TRANSACTION_UNCONFIRMED' },
    ]);
    expect(index.hasXpubUnconfirmed).toBe(true);
    const block = spendBlock('B', 700n);
    expect(matchXpub(index, block).map((m) => [m.subscription.id, m.eventType])).toEqual([[ID, 'XPUB_COINS_TRANSACTION_CONFIRMED']]);
    expect(matchXpub(index, block, 'XPUB_COINS_TRANSACTION_UNCONFIRMED').map((m) => [m.subscription.id, m.eventType])).toEqual([
      [OTHER, 'XPUB_COINS_TRANSACTION_UNCONFIRMED'],
    ]);
    // The block's matches carry the confirmed one only (the unconfirmed fire from the mempool).
    expect(
      matchBlock(index, block, 'litecoin')
        .filter((m) => m.eventType.startsWith('XPUB'))
        .map((m) => m.subscription.id),
    ).toEqual([ID]);
    index.remove(OTHER);
    expect(index.hasXpubUnconfirmed).toBe(false);
    expect(index.hasUnconfirmed).toBe(false);
  });

  it('a spend to an outside address with change to the change chain: outgoing, the fee, both addresses, receive chain first', () => {
    const [m, ...rest] = matchXpub(indexWith(ID), spendBlock('B', 700n));
    expect(rest).toEqual([]);
    expect(m).toMatchObject({ transactionId: 'tx1', direction: 'outgoing', amount: 710n, fee: 10n });
    expect(m?.addresses).toEqual([
      { address: 'R0', derivationPath: 'm/0/0', change: false, index: 0, received: 0n, sent: 1000n },
      { address: 'C0', derivationPath: 'm/1/0', change: true, index: 0, received: 290n, sent: 0n },
    ]);
    expect(m?.subscription).toMatchObject({ id: ID, receiveCallbackOn: 2 });
  });

  it('every output back in the wallet is self (amount = the fee); an input of another address leaves the fee out', () => {
    expect(matchXpub(indexWith(ID), spendBlock('R1', 700n))[0]).toMatchObject({ direction: 'self', amount: 10n, fee: 10n });
    expect(matchXpub(indexWith(ID), spendBlock('B', 700n, 500n))[0]).toMatchObject({ direction: 'outgoing', fee: null });
    const unresolved = spendBlock('B', 700n);
    unresolved.utxo?.spends.push({ transactionId: 'tx1', outpoint: 'zz:0' });
    expect(matchXpub(indexWith(ID), unresolved)[0]?.fee).toBeNull();
  });

  it('one match per subscription of the same key; none for a block without the addresses; matchBlock includes them', () => {
    const index = indexWith(ID, OTHER);
    const block = spendBlock('B', 700n);
    expect(matchXpub(index, block).map((m) => m.subscription.id)).toEqual([ID, OTHER]);
    expect(matchBlock(index, block, 'litecoin').filter((m) => m.eventType === 'XPUB_COINS_TRANSACTION_CONFIRMED')).toHaveLength(2);
    expect(matchXpub(index, { ...block, coinMovements: [], utxo: { outputs: [], spends: [] } })).toEqual([]);
    index.remove(OTHER);
    expect(index.xpubEntriesOf('R0')?.map((e) => e.subscriptionId)).toEqual([ID]);
    expect(index.hasCoinAddress('C0')).toBe(true);
  });

  it('entries of a transaction need not be adjacent: outputs and movements of two transactions interleaved give what grouped ones give', () => {
    const grouped = spendBlock('B', 700n);
    const other = [
      { transactionId: 'tx0', address: 'R1', delta: 40n },
      { transactionId: 'tx0', address: 'Y', delta: -50n },
    ];
    const outputs = grouped.utxo?.outputs ?? [];
    const interleaved: NormalizedBlock = {
      ...grouped,
      coinMovements: [grouped.coinMovements[0], other[0], grouped.coinMovements[1], other[1], ...grouped.coinMovements.slice(2)].filter((m) => m !== undefined),
      utxo: {
        outputs: [outputs[0], { transactionId: 'tx0', outpoint: 'tx0:0', address: 'R1', value: 40n }, outputs[1]].filter((o) => o !== undefined),
        spends: [
          { transactionId: 'tx1', outpoint: 'a:0' },
          { transactionId: 'tx0', outpoint: 'b:0' },
          { transactionId: 'tx1', outpoint: 'c:0' },
        ],
      },
    };
    const [first, second, ...rest] = matchXpub(indexWith(ID), interleaved);
    expect(rest).toEqual([]);
    expect(first).toMatchObject({
      transactionId: 'tx0',
      direction: 'incoming',
      amount: 40n,
      fee: null,
      addresses: [{ address: 'R1', received: 40n, sent: 0n }],
    });
    // tx1 as in the grouped block, but for the fee: an input of tx1 is unresolved.
    const [alone] = matchXpub(indexWith(ID), grouped);
    expect(second).toEqual({ ...alone, fee: null });
  });

  it('a subscription indexed again (its ordinal reused by another) is matched with its own record and key', () => {
    const index = indexWith(ID, OTHER);
    index.remove(ID);
    index.add({
      id: ID,
      customerId: '9',
      eventType: 'XPUB_COINS_TRANSACTION_CONFIRMED',
      blockchain: 'litecoin',
      network: 'testnet',
      target: 'tpubAGAIN',
      receiveCallbackOn: 5,
      amountHigherThan: null,
      isActive: true,
      walletKey: { ...KEY, text: 'tpubAGAIN' },
      derived: [{ address: 'R0', derivationPath: 'm/0/0', change: false, index: 0 }],
    });
    const matches = matchXpub(index, spendBlock('B', 700n));
    expect(matches.map((m) => [m.subscription.id, m.subscription.customerId, m.subscription.receiveCallbackOn, m.walletKey.text])).toEqual([
      [OTHER, '1', 2, 'tpubTEST'],
      [ID, '9', 5, 'tpubAGAIN'],
    ]);
    expect(index.hasAddressSubscriptions).toBe(false);
  });

  it('addDerived: a window extended while indexed is matched at once', () => {
    const index = indexWith(ID);
    index.addDerived(ID, [{ address: 'R20', derivationPath: 'm/0/20', change: false, index: 20 }]);
    const block: NormalizedBlock = {
      ...base,
      transactionIds: ['tx9'],
      coinMovements: [{ transactionId: 'tx9', address: 'R20', delta: 5n }],
      utxo: { outputs: [{ transactionId: 'tx9', outpoint: 'tx9:0', address: 'R20', value: 5n }], spends: [] },
    };
    expect(matchXpub(index, block)[0]).toMatchObject({ direction: 'incoming', amount: 5n, fee: null, addresses: [{ derivationPath: 'm/0/20' }] });
  });
});

describe('wallet-key matches on an account chain (EVM, Tron: nets split by the block fees)', () => {
  const A0 = '0xa0';
  const A1 = '0xa1';
  const A5 = '0xa5';
  function accountIndex(): SubscriptionIndex {
    const index = new SubscriptionIndex('ethereum', 'sepolia');
    index.add({
      id: ID,
      customerId: '1',
      eventType: 'XPUB_COINS_TRANSACTION_CONFIRMED',
      blockchain: 'ethereum',
      network: 'sepolia',
      target: 'xpubTEST',
      receiveCallbackOn: 1,
      amountHigherThan: null,
      isActive: true,
      walletKey: { ...KEY, derivation: null },
      derived: [A0, A1, A5].map((address) => ({ address, derivationPath: `m/0/${Number(address.slice(3))}`, change: false, index: Number(address.slice(3)) })),
    });
    return index;
  }
  const block = (coinMovements: NormalizedBlock['coinMovements'], fees: NormalizedBlock['fees'] = []): NormalizedBlock => ({
    ...base,
    transactionIds: ['t0', 't1'],
    coinMovements,
    fees,
  });

  it('a payment from outside: incoming, no fee, received on the address', () => {
    const [m, ...rest] = matchXpub(
      accountIndex(),
      block(
        [
          { transactionId: 't1', address: '0xout', delta: -1021n },
          { transactionId: 't1', address: A5, delta: 1000n },
        ],
        [{ transactionId: 't1', payer: '0xout', amount: 21n }],
      ),
    );
    expect(rest).toEqual([]);
    expect(m).toMatchObject({ transactionId: 't1', direction: 'incoming', amount: 1000n, fee: null });
    expect(m?.addresses).toEqual([{ address: A5, derivationPath: 'm/0/5', change: false, index: 5, received: 1000n, sent: 0n }]);
  });

  it('a payment out: outgoing with the fee in the amount; to another address of the wallet: self, amount the fee; fee only: self', () => {
    const fee = [{ transactionId: 't0', payer: A0, amount: 21n }];
    expect(
      matchXpub(
        accountIndex(),
        block(
          [
            { transactionId: 't0', address: A0, delta: -1021n },
            { transactionId: 't0', address: '0xout', delta: 1000n },
          ],
          fee,
        ),
      )[0],
    ).toMatchObject({ direction: 'outgoing', amount: 1021n, fee: 21n, addresses: [{ address: A0, received: 0n, sent: 1021n }] });
    const self = matchXpub(
      accountIndex(),
      block(
        [
          { transactionId: 't0', address: A0, delta: -1021n },
          { transactionId: 't0', address: A1, delta: 1000n },
        ],
        fee,
      ),
    );
    expect(self).toHaveLength(1);
    expect(self[0]).toMatchObject({
      direction: 'self',
      amount: 21n,
      fee: 21n,
      addresses: [
        { address: A0, sent: 1021n, received: 0n },
        { address: A1, sent: 0n, received: 1000n },
      ],
    });
    // A token transfer or a call without value: only the fee moved.
    expect(matchXpub(accountIndex(), block([{ transactionId: 't0', address: A0, delta: -21n }], fee))[0]).toMatchObject({
      direction: 'self',
      amount: 21n,
      fee: 21n,
      addresses: [{ address: A0, received: 0n, sent: 21n }],
    });
  });

  it('an internal transfer to the wallet from a call someone else paid: incoming; a block without fees leaves fee null', () => {
    const [m] = matchXpub(
      accountIndex(),
      block([
        { transactionId: 't1', address: '0xcontract', delta: -7n },
        { transactionId: 't1', address: A1, delta: 7n },
      ]),
    );
    expect(m).toMatchObject({ direction: 'incoming', amount: 7n, fee: null });
    expect(matchXpub(accountIndex(), block([{ transactionId: 't1', address: '0xother', delta: 7n }]))).toEqual([]);
  });
});
