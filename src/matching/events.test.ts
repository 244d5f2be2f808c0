/**
 * When buildBlockEvents makes a confirmed address event due (docs/concepts/confirmations-and-reorganisations.md):
 * receiveCallbackOn, the tier of the callback's amount (coins in the chain's unit, tokens by their
 * decimals, internal transfers in the coin), or finality (pending at FINALIZED_DUE_HEIGHT; at once on xrp).
 */
import { describe, expect, it } from 'vitest';
import { normalizedBlock as block, indexableSubscription } from '../../test/support/matching-fixtures.ts';
import type { NormalizedBlock } from '../chains/types.ts';
import type { ChainKey } from '../domain/chains.ts';
import { type ConfirmationPolicy, FINALIZED_DUE_HEIGHT } from '../domain/confirmations.ts';
import type { CallbackTargetRow } from '../domain/events.ts';
import type { IndexableSubscription } from '../domain/subscriptions.ts';
import { buildBlockEvents } from './events.ts';
import { SubscriptionIndex } from './index.ts';

const A = `0x${'a'.repeat(40)}`;
const B = `0x${'b'.repeat(40)}`;
const TOKEN = `0x${'7'.repeat(40)}`;
const ETH = 10n ** 18n;
const TIERS: ConfirmationPolicy = {
  tiers: [
    { upTo: '1', confirmations: 1 },
    { upTo: '10', confirmations: 3 },
    { upTo: null, confirmations: 6 },
  ],
};

async function dueHeights(chain: ChainKey, sub: Partial<IndexableSubscription>, b: NormalizedBlock, decimals = 6): Promise<number[]> {
  const s = indexableSubscription({
    eventType: 'ADDRESS_COINS_TRANSACTION_CONFIRMED',
    blockchain: chain.blockchain,
    network: chain.network,
    target: A,
    ...sub,
  });
  const index = new SubscriptionIndex(chain.blockchain, chain.network);
  index.add(s);
  const target: CallbackTargetRow = {
    id: s.id,
    customerId: '7',
    eventType: s.eventType,
    callbackUrl: 'https://example.com/cb',
    apiVersion: '2021-03-20',
    isActive: true,
    subscribedAs: A,
  };
  const events = await buildBlockEvents(
    { index, block: b, chain, defaultConfirmations: 3, tokenMetadata: async () => ({ name: 'T', symbol: 'T', decimals }) },
    async () => new Map([[s.id, target]]),
  );
  return [...events.now.map(() => b.height), ...events.pending.map((p) => p.dueHeight)];
}

const ethereum: ChainKey = { blockchain: 'ethereum', network: 'mainnet' };
const coins = (amount: bigint, tx = `0x${'1'.repeat(64)}`) => block({ coinMovements: [{ transactionId: tx, address: A, delta: amount }] });

describe('confirmation tiers and finality in buildBlockEvents', () => {
  it('coins: the tier of the amount in whole coins (upTo inclusive)', async () => {
    expect(await dueHeights(ethereum, { confirmationPolicy: TIERS }, coins(ETH))).toEqual([100]);
    expect(await dueHeights(ethereum, { confirmationPolicy: TIERS }, coins(ETH + 1n))).toEqual([102]);
    expect(await dueHeights(ethereum, { confirmationPolicy: TIERS }, coins(11n * ETH))).toEqual([105]);
    expect(await dueHeights(ethereum, { receiveCallbackOn: 2 }, coins(11n * ETH))).toEqual([101]);
  });

  it("tokens: the tier of the amount in whole tokens by the token's decimals", async () => {
    const transfer = (amount: bigint) =>
      block({ tokenTransfers: [{ transactionId: `0x${'2'.repeat(64)}`, logIndex: 0, tokenType: 'ERC-20', contract: TOKEN, from: B, to: A, amount }] });
    const tokens = { eventType: 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED' as const, confirmationPolicy: TIERS };
    expect(await dueHeights(ethereum, tokens, transfer(500_000n))).toEqual([100]); // 0.5 of a 6-decimal token
    expect(await dueHeights(ethereum, tokens, transfer(5_000_000n))).toEqual([102]);
    expect(await dueHeights(ethereum, tokens, transfer(5_000_000n), 0)).toEqual([105]); // decimals unknown: 5,000,000 whole
  });

  it('internal transfers: the tier of the amount in the coin', async () => {
    const internal = block({ internalTransfers: [{ parentTransactionId: `0x${'3'.repeat(64)}`, operationId: 'call_0', from: B, to: A, amount: 2n * ETH }] });
    expect(await dueHeights(ethereum, { eventType: 'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED', confirmationPolicy: TIERS }, internal)).toEqual([102]);
  });

  it('finality: pending until the block is final; on xrp (validated ledgers) at once', async () => {
    const finality: ConfirmationPolicy = { finality: 'finalized' };
    expect(await dueHeights(ethereum, { confirmationPolicy: finality }, coins(ETH))).toEqual([FINALIZED_DUE_HEIGHT]);
    const xrpAddress = 'rHb9CJAWyB4rj91VRWn96DkukG4bwdtyTh';
    const xrp = block({ coinMovements: [{ transactionId: 'A'.repeat(64), address: xrpAddress, delta: 1_000_000n }] });
    expect(await dueHeights({ blockchain: 'xrp', network: 'mainnet' }, { target: xrpAddress, confirmationPolicy: finality }, xrp)).toEqual([100]);
  });
});
