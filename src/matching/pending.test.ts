import { describe, expect, it } from 'vitest';
import { indexableSubscription } from '../../test/support/matching-fixtures.ts';
import type { NormalizedBlock, PendingTransactions } from '../chains/types.ts';
import type { IndexableSubscription } from '../domain/subscriptions.ts';
import { SubscriptionIndex } from './index.ts';
import { matchBlock } from './match.ts';
import { matchPending, pendingIdempotencyKey, pendingItem } from './pending.ts';

const A = `0x${'a'.repeat(40)}`;
const B = `0x${'b'.repeat(40)}`;
const TX1 = `0x${'1'.repeat(64)}`;
const TOKEN = `0x${'7'.repeat(40)}`;
const chain = { blockchain: 'ethereum', network: 'mainnet' } as const;

const sub = (eventType: IndexableSubscription['eventType'], target: string) => indexableSubscription({ eventType, target });

function indexOf(...subs: IndexableSubscription[]): SubscriptionIndex {
  const index = new SubscriptionIndex('ethereum', 'mainnet');
  for (const s of subs) index.add(s);
  index.settle();
  return index;
}

const pending = (fields: Partial<PendingTransactions>): PendingTransactions => ({
  transactionIds: [TX1],
  coinMovements: [],
  tokenTransfers: [],
  conflicts: [],
  ...fields,
});

describe('matchPending', () => {
  it('matches only the unconfirmed kinds: coins by the coin rule, tokens per direction; the confirmed kinds of the same address get nothing', () => {
    const coins = sub('ADDRESS_COINS_TRANSACTION_UNCONFIRMED', A);
    const tokensA = sub('ADDRESS_TOKENS_TRANSACTION_UNCONFIRMED', A);
    const tokensB = sub('ADDRESS_TOKENS_TRANSACTION_UNCONFIRMED', B);
    const confirmed = sub('ADDRESS_COINS_TRANSACTION_CONFIRMED', A);
    const index = indexOf(coins, tokensA, tokensB, confirmed);
    expect(index.hasUnconfirmed).toBe(true);
    const matches = matchPending(
      index,
      pending({
        coinMovements: [
          { transactionId: TX1, address: A, delta: -5n },
          { transactionId: TX1, address: B, delta: 5n },
        ],
        tokenTransfers: [{ transactionId: TX1, logIndex: 0, tokenType: 'ERC-20', contract: TOKEN, from: A, to: B, amount: 9n }],
      }),
      'ethereum',
    );
    expect(matches.map((m) => [m.subscription.id, m.eventType, m.direction, 'address' in m ? m.address : undefined])).toEqual([
      [coins.id, 'ADDRESS_COINS_TRANSACTION_UNCONFIRMED', 'outgoing', A],
      [tokensA.id, 'ADDRESS_TOKENS_TRANSACTION_UNCONFIRMED', 'outgoing', A],
      [tokensB.id, 'ADDRESS_TOKENS_TRANSACTION_UNCONFIRMED', 'incoming', B],
    ]);
    const item = pendingItem(matches[0] as (typeof matches)[0], chain, 1_700_000_000, undefined, A.toUpperCase());
    expect(item).toEqual({
      blockchain: 'ethereum',
      network: 'mainnet',
      address: A.toUpperCase(),
      transactionId: TX1,
      amount: '0.000000000000000005',
      unit: 'ETH',
      direction: 'outgoing',
      firstSeenInMempoolTimestamp: 1_700_000_000,
    });
  });

  it('never fires from a block, and finds nothing without an unconfirmed subscription', () => {
    const coins = sub('ADDRESS_COINS_TRANSACTION_UNCONFIRMED', A);
    const block: NormalizedBlock = {
      height: 1,
      hash: `0x${'c'.repeat(64)}`,
      parentHash: `0x${'d'.repeat(64)}`,
      timestamp: 1,
      transactionIds: [TX1],
      tokenTransfers: [],
      internalTransfers: [],
      coinMovements: [{ transactionId: TX1, address: A, delta: 5n }],
    };
    expect(matchBlock(indexOf(coins), block, 'ethereum')).toEqual([]);
    const empty = indexOf(sub('ADDRESS_COINS_TRANSACTION_CONFIRMED', A));
    expect(empty.hasUnconfirmed).toBe(false);
    expect(matchPending(empty, pending({ coinMovements: [{ transactionId: TX1, address: A, delta: 5n }] }), 'ethereum')).toEqual([]);
    // Removing the last unconfirmed subscription makes the index idle again.
    const index = indexOf(coins);
    index.remove(coins.id);
    expect(index.hasUnconfirmed).toBe(false);
  });

  it('keys depend on the subscription and the transaction only, never on when or how often it was seen', () => {
    const coins = sub('ADDRESS_COINS_TRANSACTION_UNCONFIRMED', A);
    const index = indexOf(coins);
    const once = matchPending(index, pending({ coinMovements: [{ transactionId: TX1, address: A, delta: 5n }] }), 'ethereum');
    const again = matchPending(index, pending({ coinMovements: [{ transactionId: TX1, address: A, delta: 5n }] }), 'ethereum');
    expect(pendingIdempotencyKey(once[0] as (typeof once)[0], chain)).toBe(pendingIdempotencyKey(again[0] as (typeof again)[0], chain));
    expect(pendingIdempotencyKey(once[0] as (typeof once)[0], chain)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('makes one token event per subscription, transaction and direction: the transfers of one transaction on the same side add up (an Omni Send To Many)', () => {
    const C = `0x${'c'.repeat(40)}`;
    const OTHER = `0x${'8'.repeat(40)}`;
    const sender = sub('ADDRESS_TOKENS_TRANSACTION_UNCONFIRMED', A);
    const receiver = sub('ADDRESS_TOKENS_TRANSACTION_UNCONFIRMED', B);
    const index = indexOf(sender, receiver);
    const send = (logIndex: number, to: string, amount: bigint, contract = TOKEN) => ({
      transactionId: TX1,
      logIndex,
      tokenType: 'ERC-20' as const,
      contract,
      from: A,
      to,
      amount,
    });
    // A pays B twice and C once in one transaction, and B once in another token.
    const matches = matchPending(index, pending({ tokenTransfers: [send(0, B, 3n), send(1, C, 4n), send(2, B, 5n), send(3, B, 7n, OTHER)] }), 'ethereum');
    expect(matches.map((m) => [m.subscription.id, m.direction, m.eventType === 'ADDRESS_TOKENS_TRANSACTION_UNCONFIRMED' && m.transfer.amount])).toEqual([
      [sender.id, 'outgoing', 12n],
      [receiver.id, 'incoming', 8n],
    ]);
    const keys = matches.map((m) => pendingIdempotencyKey(m, chain));
    expect(new Set(keys).size).toBe(2);
  });
});
