import { describe, expect, it } from 'vitest';
import type { IndexableSubscription } from '../domain/subscriptions.ts';
import {
  type AnnouncedChange,
  chainIdOf,
  changeKey,
  indexUpdateOf,
  mempoolRoundMs,
  OPENINGS_MIN_GAP_MS,
  openingsWaitMs,
  requeueFailed,
  splitChanges,
  stepEffectsOf,
} from './decisions.ts';

const update = (id: string, op: 'INSERT' | 'UPDATE' | 'DELETE' = 'UPDATE'): AnnouncedChange => ({ op, id, blockchain: 'ethereum', network: 'mainnet' });
const range = (from: string, to: string): AnnouncedChange => ({
  op: 'INSERT_RANGE',
  blockchain: 'bitcoin',
  network: 'testnet',
  customerId: 'c1',
  from,
  to,
  count: 1000,
});

function row(fields: Partial<IndexableSubscription>): IndexableSubscription {
  return {
    id: 's1',
    eventType: 'ADDRESS_COINS_TRANSACTION_CONFIRMED',
    isActive: true,
    target: '0xabc',
    blockHeight: null,
    ...fields,
  } as IndexableSubscription;
}

describe('announced subscription changes', () => {
  it('a subscription waits under its id (the last announcement is enough), a bulk range under the range itself', () => {
    expect(changeKey(update('a'))).toBe('a');
    expect(changeKey(update('a', 'DELETE'))).toBe('a');
    expect(changeKey(range('t1', 't2'))).toBe('range:c1/bitcoin/testnet/t1/t2');
    expect(changeKey(range('t1', 't2'))).not.toBe(changeKey(range('t1', 't3')));
    expect(chainIdOf(update('a'))).toBe('ethereum/mainnet');
  });

  it('splits a batch into single rows and ranges, keeping their order', () => {
    const batch = [update('a'), range('t1', 't2'), update('b'), range('t3', 't4')];
    expect(splitChanges(batch)).toEqual({ single: [batch[0], batch[2]], ranges: [batch[1], batch[3]] });
  });

  it('a failed batch waits again, except where a newer announcement of the same subscription arrived meanwhile', () => {
    const newer = update('a', 'DELETE');
    const pending = new Map<string, AnnouncedChange>([['a', newer]]);
    requeueFailed(pending, [update('a'), update('b'), range('t1', 't2')]);
    expect(pending.get('a')).toBe(newer);
    expect([...pending.keys()]).toEqual(['a', 'b', 'range:c1/bitcoin/testnet/t1/t2']);
  });
});

describe('what an announced row does to the index', () => {
  it('removes a row that is gone or inactive', () => {
    expect(indexUpdateOf(undefined)).toEqual({ kind: 'remove' });
    expect(indexUpdateOf(row({ isActive: false, eventType: 'TRANSACTION_MINED' }))).toEqual({ kind: 'remove' });
  });

  it('indexes an active row; a mined transaction or a reached height is checked at once', () => {
    expect(indexUpdateOf(row({}))).toEqual({ kind: 'add' });
    expect(indexUpdateOf(row({ eventType: 'TRANSACTION_MINED', target: '0xfeed' }))).toEqual({
      kind: 'add',
      check: { kind: 'transaction', transactionId: '0xfeed' },
    });
    expect(indexUpdateOf(row({ eventType: 'BLOCK_HEIGHT_REACHED', target: null, blockHeight: 0 }))).toEqual({
      kind: 'add',
      check: { kind: 'height', height: 0 },
    });
    expect(indexUpdateOf(row({ eventType: 'TRANSACTION_MINED', target: null }))).toEqual({ kind: 'add' });
  });
});

describe("what a follower's step sets off", () => {
  it('an applied block wakes the openings after the pause; reaching the head wakes them at once and lets the look-back run', () => {
    expect(stepEffectsOf({ kind: 'applied', height: 5, hash: '0x5', enqueued: 0, pending: 0 })).toEqual({
      reorganised: false,
      openings: { caughtUp: false },
      headReached: false,
    });
    expect(stepEffectsOf({ kind: 'caught-up', head: 5 })).toEqual({ reorganised: false, openings: { caughtUp: true }, headReached: true });
  });

  it('a stopped chain counts as the head reached (the look-back must not wait for it); a reorganisation is counted', () => {
    expect(stepEffectsOf({ kind: 'stopped', reason: 'deep' })).toEqual({ reorganised: false, openings: undefined, headReached: true });
    expect(
      stepEffectsOf({ kind: 'reorganised', ancestorHeight: 3, depth: 2, pendingDeleted: 0, callbacksCancelled: 0, revertedCallbacks: 0, held: false }),
    ).toEqual({
      reorganised: true,
      openings: undefined,
      headReached: false,
    });
    expect(stepEffectsOf({ kind: 'raced' })).toEqual({ reorganised: false, openings: undefined, headReached: false });
  });
});

describe('pacing', () => {
  it('opening balances: at most one run a second while catching up, at once when caught up', () => {
    expect(openingsWaitMs(undefined, 50_000, false)).toBe(0);
    expect(openingsWaitMs(10_000, 10_300, false)).toBe(OPENINGS_MIN_GAP_MS - 300);
    expect(openingsWaitMs(10_000, 12_000, false)).toBe(0);
    expect(openingsWaitMs(10_000, 10_300, true)).toBe(0);
  });

  it('mempool: a polling reader at its interval (1 s by default); a push reader at least every second', () => {
    expect(mempoolRoundMs(undefined, false)).toBe(1000);
    expect(mempoolRoundMs(250, false)).toBe(250);
    expect(mempoolRoundMs(30_000, false)).toBe(30_000);
    expect(mempoolRoundMs(30_000, true)).toBe(1000);
    expect(mempoolRoundMs(100, true)).toBe(100);
    expect(mempoolRoundMs(undefined, true)).toBe(1000);
  });
});
