import { describe, expect, it } from 'vitest';
import { normalizedBlock as block, indexableSubscription as sub } from '../../test/support/matching-fixtures.ts';
import type { TokenTransfer } from '../chains/types.ts';
import type { IndexableSubscription } from '../domain/subscriptions.ts';
import { SubscriptionIndex } from './index.ts';
import { confirmationsDue, type Match, matchBlock, matchRevertedBlock, tokenAmountReached } from './match.ts';

const A = `0x${'a'.repeat(40)}`;
const B = `0x${'b'.repeat(40)}`;
const C = `0x${'c'.repeat(40)}`;
const TX1 = `0x${'1'.repeat(64)}`;
const TX2 = `0x${'2'.repeat(64)}`;
const TOKEN = `0x${'7'.repeat(40)}`;
const WEI = 10n ** 18n;

const txSub = (target: string) => sub({ target });
const addressSub = (target: string, receiveCallbackOn: number | null = null) =>
  sub({ eventType: 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED', target, receiveCallbackOn });
const thresholdSub = (whole: bigint) => sub({ eventType: 'CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER', amountHigherThan: whole });

function transfer(from: string, to: string, logIndex: number, extra: Partial<TokenTransfer> = {}): TokenTransfer {
  return { transactionId: TX1, logIndex, tokenType: 'ERC-20', contract: TOKEN, from, to, amount: 1000n, ...extra };
}

function indexOf(...subs: IndexableSubscription[]): SubscriptionIndex {
  const index = new SubscriptionIndex('ethereum', 'mainnet');
  for (const s of subs) index.add(s);
  return index;
}

const summary = (matches: Match[]) =>
  matches.map((m) => ({ id: m.subscription.id, event: m.eventType, ...m.identity, ...('address' in m && { address: m.address }) }));

describe('matchBlock', () => {
  it('matches mined transactions, every subscription of one transaction id', () => {
    const s1 = txSub(TX1);
    const s2 = txSub(TX1);
    const s3 = txSub(TX2);
    const index = indexOf(s1, s2, s3);
    const matches = matchBlock(index, block({ transactionIds: [`0x${'9'.repeat(64)}`, TX1] }), 'ethereum');
    expect(summary(matches)).toEqual([
      { id: s1.id, event: 'TRANSACTION_MINED', transactionId: TX1, position: null, direction: null },
      { id: s2.id, event: 'TRANSACTION_MINED', transactionId: TX1, position: null, direction: null },
    ]);
    expect(matches[0]).toMatchObject({ transactionId: TX1, subscription: { customerId: '7', target: TX1 } });
  });

  it('matches a token transfer on either side, one match per side, with its direction', () => {
    const [onA, onB, alsoOnB] = [addressSub(A, 5), addressSub(B), addressSub(B, 2)];
    const index = indexOf(onA, onB, alsoOnB);
    const t = transfer(A, B, 4);
    const matches = matchBlock(index, block({ tokenTransfers: [transfer(C, C, 3), t] }), 'ethereum');
    expect(summary(matches)).toEqual([
      { id: onA.id, event: 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED', transactionId: TX1, position: 'log:4', direction: 'outgoing', address: A },
      { id: onB.id, event: 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED', transactionId: TX1, position: 'log:4', direction: 'incoming', address: B },
      { id: alsoOnB.id, event: 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED', transactionId: TX1, position: 'log:4', direction: 'incoming', address: B },
    ]);
    for (const m of matches) expect(m).toMatchObject({ transfer: t });
  });

  it('gives a transfer from an address to itself ONE outgoing match', () => {
    const onA = addressSub(A);
    const matches = matchBlock(indexOf(onA), block({ tokenTransfers: [transfer(A, A, 0)] }), 'ethereum');
    expect(summary(matches)).toEqual([
      { id: onA.id, event: 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED', transactionId: TX1, position: 'log:0', direction: 'outgoing', address: A },
    ]);
  });

  it('matches NFT transfers like fungible ones', () => {
    const onB = addressSub(B);
    const nft = transfer(A, B, 9, { tokenType: 'ERC-721', amount: undefined, tokenId: '123' });
    const matches = matchBlock(indexOf(onB), block({ tokenTransfers: [nft] }), 'ethereum');
    expect(matches).toHaveLength(1);
    expect(matches[0]).toMatchObject({ direction: 'incoming', transfer: nft });
  });

  it('fires an internal transfer at exactly the threshold, not one base unit below', () => {
    const [zero, one, two] = [thresholdSub(0n), thresholdSub(1n), thresholdSub(2n)];
    const index = indexOf(two, one, zero);
    const internal = (amount: bigint, operationId: string) => ({ parentTransactionId: TX2, operationId, from: A, to: B, amount });
    const ids = (amount: bigint) => matchBlock(index, block({ internalTransfers: [internal(amount, 'call_0')] }), 'ethereum').map((m) => m.subscription.id);
    expect(ids(WEI)).toEqual([zero.id, one.id]);
    expect(ids(WEI - 1n)).toEqual([zero.id]);
    expect(ids(2n * WEI)).toEqual([zero.id, one.id, two.id]);
    expect(ids(2n * WEI - 1n)).toEqual([zero.id, one.id]);

    const matches = matchBlock(index, block({ internalTransfers: [internal(1n, 'call_0_2'), internal(WEI, 'create_1')] }), 'ethereum');
    expect(summary(matches)).toEqual([
      { id: zero.id, event: 'CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER', transactionId: TX2, position: 'op:call_0_2', direction: null },
      { id: zero.id, event: 'CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER', transactionId: TX2, position: 'op:create_1', direction: null },
      { id: one.id, event: 'CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER', transactionId: TX2, position: 'op:create_1', direction: null },
    ]);
    expect(matches[2]?.subscription).toMatchObject({ amountHigherThan: 1n, threshold: WEI });
  });

  it('stops matching what was removed from the index', () => {
    const [t, a, h] = [txSub(TX1), addressSub(A), thresholdSub(0n)];
    const index = indexOf(t, a, h);
    const b = block({
      transactionIds: [TX1],
      tokenTransfers: [transfer(A, B, 0)],
      internalTransfers: [{ parentTransactionId: TX1, operationId: 'call_0', from: A, to: B, amount: 1n }],
    });
    expect(matchBlock(index, b, 'ethereum')).toHaveLength(3);
    for (const s of [t, a, h]) index.remove(s.id);
    expect(matchBlock(index, b, 'ethereum')).toEqual([]);
  });

  it('refuses a block of another chain', () => {
    expect(() => matchBlock(indexOf(), block({}), 'tron')).toThrow(/tron block/);
  });
});

describe('confirmationsDue', () => {
  it('is 1 for mined transactions, receiveCallbackOn or the default for tokens, the default for internal transfers', () => {
    const index = indexOf(txSub(TX1), addressSub(A, 12), addressSub(B), thresholdSub(0n));
    const matches = matchBlock(
      index,
      block({
        transactionIds: [TX1],
        tokenTransfers: [transfer(A, C, 0), transfer(C, B, 1)],
        internalTransfers: [{ parentTransactionId: TX1, operationId: 'call_0', from: A, to: B, amount: 1n }],
      }),
      'ethereum',
    );
    expect(matches.map((m) => [m.eventType, confirmationsDue(m, 3)])).toEqual([
      ['TRANSACTION_MINED', 1],
      ['ADDRESS_TOKENS_TRANSACTION_CONFIRMED', 12],
      ['ADDRESS_TOKENS_TRANSACTION_CONFIRMED', 3],
      ['CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER', 3],
    ]);
  });
});

describe('block events', () => {
  const mined = () => sub({ eventType: 'BLOCK_MINED' });
  const reverted = () => sub({ eventType: 'BLOCK_REVERTED' });
  const height = (blockHeight: number) => sub({ eventType: 'BLOCK_HEIGHT_REACHED', blockHeight });
  const BLOCK_IDENTITY = { transactionId: null, position: null, direction: null };

  it('BLOCK_MINED matches every block, BLOCK_HEIGHT_REACHED only the block at its height, both before the transactions', () => {
    const m1 = mined();
    const m2 = mined();
    const h100 = height(100);
    const h101 = height(101);
    const h100b = height(100);
    const t = txSub(TX1);
    const index = indexOf(m1, h100, t, h101, m2, h100b, reverted());
    expect(summary(matchBlock(index, block({ height: 100, transactionIds: [TX1] }), 'ethereum'))).toEqual([
      { id: m1.id, event: 'BLOCK_MINED', ...BLOCK_IDENTITY },
      { id: m2.id, event: 'BLOCK_MINED', ...BLOCK_IDENTITY },
      { id: h100.id, event: 'BLOCK_HEIGHT_REACHED', ...BLOCK_IDENTITY },
      { id: h100b.id, event: 'BLOCK_HEIGHT_REACHED', ...BLOCK_IDENTITY },
      { id: t.id, event: 'TRANSACTION_MINED', transactionId: TX1, position: null, direction: null },
    ]);
    expect(summary(matchBlock(index, block({ height: 102 }), 'ethereum')).map((m) => m.id)).toEqual([m1.id, m2.id]);
    expect(index.get(h101.id)).toMatchObject({ eventType: 'BLOCK_HEIGHT_REACHED', blockHeight: 101, target: null });

    // Removal unlinks from the middle and the head of each chain.
    index.remove(m1.id);
    index.remove(h100.id);
    expect(summary(matchBlock(index, block({ height: 100 }), 'ethereum')).map((m) => m.id)).toEqual([m2.id, h100b.id]);
    index.remove(m2.id);
    index.remove(h100b.id);
    expect(matchBlock(index, block({ height: 100 }), 'ethereum')).toEqual([]);
    expect(index.size).toBe(3);
  });

  it('BLOCK_REVERTED is matched only against dropped blocks (matchRevertedBlock), never by matchBlock', () => {
    const r1 = reverted();
    const r2 = reverted();
    const index = indexOf(r1, mined(), r2);
    expect(matchBlock(index, block({}), 'ethereum').map((m) => m.eventType)).toEqual(['BLOCK_MINED']);
    expect(summary(matchRevertedBlock(index))).toEqual([
      { id: r1.id, event: 'BLOCK_REVERTED', ...BLOCK_IDENTITY },
      { id: r2.id, event: 'BLOCK_REVERTED', ...BLOCK_IDENTITY },
    ]);
    index.add({ ...r1, isActive: false });
    expect(matchRevertedBlock(index).map((m) => m.subscription.id)).toEqual([r2.id]);
  });

  it('block events are due at the first confirmation; a height subscription without a valid height is refused', () => {
    const index = indexOf(mined(), height(100));
    for (const m of matchBlock(index, block({ height: 100 }), 'ethereum')) expect(confirmationsDue(m, 6)).toBe(1);
    expect(() => index.add(sub({ eventType: 'BLOCK_HEIGHT_REACHED', blockHeight: null }))).toThrow(/blockHeight/);
    expect(() => index.add(sub({ eventType: 'BLOCK_HEIGHT_REACHED', blockHeight: -1 }))).toThrow(/blockHeight/);
    expect(index.size).toBe(2);
  });
});

describe('internal transfers of an address and token amounts (docs/reference/api.md#address-internal-transactions-confirmed and #tokens-transfers-for-specific-amount)', () => {
  const internalSub = (target: string, receiveCallbackOn: number | null = null) =>
    sub({ eventType: 'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED', target, receiveCallbackOn });
  const amountSub = (whole: bigint, contract = TOKEN) =>
    sub({ eventType: 'CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER', target: contract, amountHigherThan: whole });
  const frame = (from: string, to: string, operationId: string) => ({ parentTransactionId: TX2, operationId, from, to, amount: 5n });

  it('one address table serves token and internal subscriptions: each kind only matches its own transfers, with its direction', () => {
    const tokensOfA = addressSub(A);
    const internalOfA = internalSub(A, 7);
    const internalOfB = internalSub(B);
    const index = indexOf(tokensOfA, internalOfA, internalOfB);
    const matches = matchBlock(
      index,
      block({ tokenTransfers: [transfer(A, C, 0)], internalTransfers: [frame(A, B, 'call_0'), frame(C, A, 'call_1'), frame(B, B, 'call_2')] }),
      'ethereum',
    );
    expect(summary(matches)).toEqual([
      { id: tokensOfA.id, event: 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED', transactionId: TX1, position: 'log:0', direction: 'outgoing', address: A },
      { id: internalOfA.id, event: 'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED', transactionId: TX2, position: 'op:call_0', direction: 'outgoing', address: A },
      { id: internalOfB.id, event: 'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED', transactionId: TX2, position: 'op:call_0', direction: 'incoming', address: B },
      { id: internalOfA.id, event: 'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED', transactionId: TX2, position: 'op:call_1', direction: 'incoming', address: A },
      // A frame from the address to itself: one match, outgoing.
      { id: internalOfB.id, event: 'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED', transactionId: TX2, position: 'op:call_2', direction: 'outgoing', address: B },
    ]);
    expect(matches.filter((m) => m.eventType === 'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED').map((m) => confirmationsDue(m, 3))).toEqual([7, 3, 7, 3]);
    expect(index.get(internalOfA.id)).toMatchObject({ target: A, receiveCallbackOn: 7 });
    index.remove(internalOfA.id);
    expect(matchBlock(index, block({ internalTransfers: [frame(A, C, 'call_0')] }), 'ethereum')).toEqual([]);
  });

  it('token amount: candidates of the transfer contract only; tokenAmountReached compares exactly after the decimals; an NFT counts as 1', () => {
    const zero = amountSub(0n);
    const one = amountSub(1n);
    const ten = amountSub(10n);
    const otherContract = amountSub(0n, C);
    const index = indexOf(zero, one, ten, otherContract);
    expect(index.get(ten.id)).toMatchObject({ target: TOKEN, amountHigherThan: 10n, threshold: null });
    const fungible = transfer(A, B, 0, { amount: 10n * 10n ** 6n });
    const nft = transfer(A, B, 1, { tokenType: 'ERC-721', amount: undefined, tokenId: '5' });
    // 9 base units: no decimals can make it reach 10 whole tokens, so the ten subscription is not a candidate.
    const small = transfer(A, B, 2, { amount: 9n });
    const matches = matchBlock(index, block({ tokenTransfers: [fungible, nft, small] }), 'ethereum');
    expect(summary(matches)).toEqual([
      { id: zero.id, event: 'CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER', transactionId: TX1, position: 'log:0', direction: null },
      { id: one.id, event: 'CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER', transactionId: TX1, position: 'log:0', direction: null },
      { id: ten.id, event: 'CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER', transactionId: TX1, position: 'log:0', direction: null },
      { id: zero.id, event: 'CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER', transactionId: TX1, position: 'log:1', direction: null },
      { id: one.id, event: 'CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER', transactionId: TX1, position: 'log:1', direction: null },
      { id: zero.id, event: 'CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER', transactionId: TX1, position: 'log:2', direction: null },
      { id: one.id, event: 'CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER', transactionId: TX1, position: 'log:2', direction: null },
    ]);
    const reached = (m: Match, decimals: number) =>
      m.eventType === 'CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER' && tokenAmountReached(m, decimals);
    const [z0, o0, t0, z1, o1, z2, o2] = matches as Match[];
    // 10 tokens of 6 decimals: equal reaches, one base unit more decimals does not.
    expect([reached(z0 as Match, 6), reached(o0 as Match, 6), reached(t0 as Match, 6), reached(t0 as Match, 7)]).toEqual([true, true, true, false]);
    expect([reached(z1 as Match, 18), reached(o1 as Match, 18)]).toEqual([true, true]);
    // 9 base units of a 0-decimal token (unknown decimals count as 0): reaches 1, not 10.
    expect([reached(z2 as Match, 0), reached(o2 as Match, 0), reached(o2 as Match, 1)]).toEqual([true, true, false]);
    expect(confirmationsDue(t0 as Match, 4)).toBe(4);
  });

  it('token amount candidates are exact on both sides of the amounts kept in the slot (below 65,535 whole tokens) and those kept apart, and past 2^53 base units', () => {
    const wholes = [0n, 1n, 2n, 65_533n, 65_534n, 65_535n, 65_536n, 2n ** 53n - 1n, 2n ** 53n, 2n ** 53n + 1n, 2n ** 70n];
    const subs = wholes.map((whole) => amountSub(whole));
    const index = indexOf(...subs);
    for (const [i, s] of subs.entries()) expect(index.get(s.id)?.amountHigherThan).toBe(wholes[i]);
    const amounts = [0n, 1n, 2n, 65_533n, 65_534n, 65_535n, 65_536n, 2n ** 53n - 1n, 2n ** 53n, 2n ** 53n + 1n, 2n ** 53n + 2n, 2n ** 70n - 1n, 2n ** 70n];
    const transfers = amounts.map((amount, logIndex) => transfer(A, B, logIndex, { amount }));
    transfers.push(transfer(A, B, amounts.length, { tokenType: 'ERC-721', amount: undefined, tokenId: '1' }));
    const got = summary(matchBlock(index, block({ tokenTransfers: transfers }), 'ethereum')).map((m) => `${m.position} ${m.id}`);
    // Brute force: a transfer of `units` (1 for the NFT) is a candidate of every subscription of at most as many whole tokens, in index order.
    const expected: string[] = [];
    for (const [logIndex, units] of [...amounts, 1n].entries())
      for (const [i, s] of subs.entries()) if ((wholes[i] as bigint) <= units) expected.push(`log:${logIndex} ${s.id}`);
    expect(got).toEqual(expected);
    // Removed and re-added with another amount, a slot's kept amount follows.
    index.remove((subs[4] as IndexableSubscription).id);
    index.add({ ...(subs[4] as IndexableSubscription), amountHigherThan: 2n ** 70n });
    expect(index.get((subs[4] as IndexableSubscription).id)?.amountHigherThan).toBe(2n ** 70n);
    index.add({ ...(subs[4] as IndexableSubscription), amountHigherThan: 3n });
    expect(index.get((subs[4] as IndexableSubscription).id)?.amountHigherThan).toBe(3n);
  });
});

describe('coin kinds', () => {
  const coinSub = (target: string, receiveCallbackOn: number | null = null) =>
    sub({ eventType: 'ADDRESS_COINS_TRANSACTION_CONFIRMED', target, receiveCallbackOn });
  const coinThreshold = (whole: bigint) => sub({ eventType: 'CONFIRMED_COINS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER', amountHigherThan: whole });

  it('coin and token subscriptions of one address share the address table without firing for each other', () => {
    const tokens = addressSub(A);
    const coins = coinSub(A, 5);
    const index = indexOf(tokens, coins);
    expect(index.hasCoinAddress(A)).toBe(true);
    expect(index.hasCoinAddress(B)).toBe(false);
    const matches = matchBlock(
      index,
      block({
        transactionIds: [TX1, TX2],
        tokenTransfers: [transfer(B, A, 0)],
        coinMovements: [
          { transactionId: TX2, address: A, delta: -(WEI + 21n) },
          { transactionId: TX2, address: B, delta: WEI },
        ],
      }),
      'ethereum',
    );
    expect(matches.map((m) => [m.subscription.id, m.eventType, m.identity.direction])).toEqual([
      [tokens.id, 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED', 'incoming'],
      [coins.id, 'ADDRESS_COINS_TRANSACTION_CONFIRMED', 'outgoing'],
    ]);
    const coin = matches[1] as Match & { amount: bigint };
    expect(coin.amount).toBe(WEI + 21n);
    expect(confirmationsDue(coin, 3)).toBe(5);
    index.remove(coins.id);
    expect(index.hasCoinAddress(A)).toBe(false);
  });

  it('the coin amount event compares whole coins exactly in base units, at the chain confirmations; internal thresholds are apart', () => {
    const one = coinThreshold(1n);
    const internalOne = thresholdSub(1n);
    const index = indexOf(one, internalOne);
    const moved = (amount: bigint) =>
      matchBlock(index, block({ transactionIds: [TX1], coinMovements: [{ transactionId: TX1, address: B, delta: amount }] }), 'ethereum');
    expect(moved(WEI - 1n)).toEqual([]);
    const [m] = moved(WEI);
    expect(m).toMatchObject({ eventType: 'CONFIRMED_COINS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER', transactionId: TX1, amount: WEI });
    expect(m?.subscription.id).toBe(one.id);
    expect(confirmationsDue(m as Match, 4)).toBe(4);
  });
});
