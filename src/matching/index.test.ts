import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { indexableSubscription } from '../../test/support/matching-fixtures.ts';
import type { IndexableSubscription } from '../domain/subscriptions.ts';
import { formatUuid, IdSlots, parseUuid } from './id-slots.ts';
import { SubscriptionIndex } from './index.ts';
import { SortedThresholds } from './thresholds.ts';

const ADDRESS = `0x${'a'.repeat(40)}`;
const TX = `0x${'1'.repeat(64)}`;
const WEI = 10n ** 18n;

const sub = (fields: Partial<IndexableSubscription>) => indexableSubscription({ customerId: '42', target: TX, ...fields });
const threshold = (whole: bigint) => sub({ eventType: 'CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER', target: null, amountHigherThan: whole });

/** The ids of the subscriptions of a target, from its first slot along nextSlot(). */
function chainIds(index: SubscriptionIndex, first: number): string[] {
  const ids: string[] = [];
  for (let slot = first; slot >= 0; slot = index.nextSlot(slot)) ids.push(index.record(slot).id);
  return ids;
}

/** The ids of every threshold entry <= amount, tombstones skipped. */
function thresholdIds(index: SubscriptionIndex, amount: bigint): string[] {
  const ids: string[] = [];
  const n = index.thresholdsAtMost(amount);
  for (let i = 0; i < n; i++) {
    const slot = index.thresholdSlotAt(i);
    if (slot >= 0) ids.push(index.record(slot).id);
  }
  return ids;
}

describe('SubscriptionIndex', () => {
  it('adds, has, gets and removes', () => {
    const index = new SubscriptionIndex('ethereum', 'mainnet');
    const s = sub({ customerId: '9007199254740991' });
    expect(index.add(s)).toBe(true);
    expect(index.size).toBe(1);
    expect(index.has(s.id)).toBe(true);
    expect(index.has(s.id.toUpperCase())).toBe(true);
    expect(index.get(s.id)).toEqual({
      id: s.id,
      customerId: '9007199254740991',
      eventType: 'TRANSACTION_MINED',
      target: TX,
      receiveCallbackOn: null,
      confirmationPolicy: null,
      amountHigherThan: null,
      threshold: null,
      blockHeight: null,
    });
    expect(index.remove(s.id)).toBe(true);
    expect(index.remove(s.id)).toBe(false);
    expect(index.has(s.id)).toBe(false);
    expect(index.size).toBe(0);
    expect(index.firstTransactionSlot(TX)).toBe(-1);
  });

  it('keeps a confirmation policy (tiers, finality) beside the slot, instead of receiveCallbackOn, until the slot is freed', () => {
    const index = new SubscriptionIndex('ethereum', 'mainnet');
    const tiers = {
      tiers: [
        { upTo: '1', confirmations: 1 },
        { upTo: null, confirmations: 6 },
      ],
    };
    const address = '0x2222222222222222222222222222222222222222';
    const withTiers = sub({ eventType: 'ADDRESS_COINS_TRANSACTION_CONFIRMED', target: address, confirmationPolicy: tiers });
    const finality = sub({ eventType: 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED', target: address, confirmationPolicy: { finality: 'finalized' } });
    const plain = sub({ eventType: 'ADDRESS_COINS_TRANSACTION_CONFIRMED', target: address, receiveCallbackOn: 4 });
    for (const s of [withTiers, finality, plain]) index.add(s);
    expect(index.get(withTiers.id)).toMatchObject({ receiveCallbackOn: null, confirmationPolicy: tiers });
    expect(index.get(finality.id)).toMatchObject({ receiveCallbackOn: null, confirmationPolicy: { finality: 'finalized' } });
    expect(index.get(plain.id)).toMatchObject({ receiveCallbackOn: 4, confirmationPolicy: null });
    expect(index.hasFinality).toBe(true);
    index.remove(finality.id);
    expect(index.hasFinality).toBe(false);
    index.remove(withTiers.id);
    index.add({ ...plain, id: '01900000-0000-7000-8000-0000000000ff' }); // reuses the freed slot
    expect(index.get('01900000-0000-7000-8000-0000000000ff')).toMatchObject({ receiveCallbackOn: 4, confirmationPolicy: null });
  });

  it('replaces on a second add of the same id, and removes on an inactive one', () => {
    const index = new SubscriptionIndex('ethereum', 'mainnet');
    const s = sub({ eventType: 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED', target: ADDRESS, receiveCallbackOn: 3 });
    index.add(s);
    index.add({ ...s, receiveCallbackOn: 12 });
    expect(index.size).toBe(1);
    expect(index.get(s.id)?.receiveCallbackOn).toBe(12);
    expect(chainIds(index, index.firstAddressSlot(ADDRESS))).toEqual([s.id]);
    expect(index.add({ ...s, isActive: false })).toBe(false);
    expect(index.has(s.id)).toBe(false);
    expect(index.firstAddressSlot(ADDRESS)).toBe(-1);
  });

  it('refuses rows of another chain and malformed rows without changing anything', () => {
    const index = new SubscriptionIndex('ethereum', 'mainnet');
    expect(() => index.add(sub({ network: 'goerli' }))).toThrow(/not ethereum\/mainnet/);
    expect(() => index.add(sub({ id: 'sub-1' }))).toThrow(/not a UUID/);
    expect(() => index.add(sub({ customerId: 'abc' }))).toThrow(/customer id/);
    expect(() => index.add(sub({ target: null }))).toThrow(/no target/);
    expect(() => index.add(threshold(-1n))).toThrow(/amountHigherThan/);
    expect(() => index.add(sub({ eventType: 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED', receiveCallbackOn: 0 }))).toThrow(/receiveCallbackOn/);
    expect(index.size).toBe(0);
    expect(() => new SubscriptionIndex('ethereum', 'testnet')).toThrow(/unknown blockchain and network/);
  });

  it('keeps many subscriptions of one address or transaction id, and removes them one by one', () => {
    const index = new SubscriptionIndex('ethereum', 'mainnet');
    const onTx = Array.from({ length: 5 }, () => sub({ target: TX }));
    const onAddress = Array.from({ length: 4 }, (_, i) =>
      sub({ eventType: 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED', target: ADDRESS, receiveCallbackOn: i + 1 }),
    );
    for (const s of [...onTx, ...onAddress]) index.add(s);
    const onTxIds = () => chainIds(index, index.firstTransactionSlot(TX));
    expect(onTxIds()).toEqual(onTx.map((s) => s.id));
    expect(chainIds(index, index.firstAddressSlot(ADDRESS))).toEqual(onAddress.map((s) => s.id));

    index.remove(onTx[2]?.id as string); // in the middle
    expect(onTxIds()).toEqual([0, 1, 3, 4].map((i) => onTx[i]?.id));
    index.remove(onTx[0]?.id as string); // the first: the next one takes its place
    expect(onTxIds()).toEqual([1, 3, 4].map((i) => onTx[i]?.id));
    index.remove(onTx[4]?.id as string); // the last
    expect(onTxIds()).toEqual([1, 3].map((i) => onTx[i]?.id));
    const late = sub({ target: TX });
    index.add(late); // reuses a freed slot, goes to the end
    expect(onTxIds()).toEqual([onTx[1]?.id, onTx[3]?.id, late.id]);
    for (const s of [onTx[1], onTx[3], late]) index.remove(s?.id as string);
    expect(index.firstTransactionSlot(TX)).toBe(-1);
    expect(index.size).toBe(4);
  });

  it('stores thresholds in base units of the chain and finds those <= an amount', () => {
    const eth = new SubscriptionIndex('ethereum', 'mainnet');
    const one = threshold(1n);
    eth.add(one);
    expect(eth.get(one.id)).toMatchObject({ amountHigherThan: 1n, threshold: WEI, target: null });
    expect(thresholdIds(eth, WEI)).toEqual([one.id]);
    expect(thresholdIds(eth, WEI - 1n)).toEqual([]);

    const tron = new SubscriptionIndex('tron', 'nile');
    const t = threshold(5n);
    tron.add({ ...t, blockchain: 'tron', network: 'nile' });
    expect(tron.get(t.id)?.threshold).toBe(5_000_000n);
  });

  it('removes from the sorted thresholds, pending or settled, among equal thresholds', () => {
    const index = new SubscriptionIndex('ethereum', 'mainnet');
    const subs = [3n, 1n, 2n, 2n, 0n, 2n].map(threshold);
    for (const s of subs) index.add(s);
    expect(index.remove(subs[5]?.id as string)).toBe(true); // still pending
    index.settle();
    expect(thresholdIds(index, 2n * WEI)).toEqual([4, 1, 2, 3].map((i) => subs[i]?.id));
    expect(index.remove(subs[2]?.id as string)).toBe(true); // settled: becomes a tombstone
    expect(thresholdIds(index, 2n * WEI)).toEqual([4, 1, 3].map((i) => subs[i]?.id));
    expect(thresholdIds(index, 10n * WEI)).toEqual([4, 1, 3, 0].map((i) => subs[i]?.id));
    // The freed slot is reused by a new subscription; the old entry must not come back.
    const again = threshold(0n);
    index.add(again);
    expect(thresholdIds(index, 10n * WEI)).toEqual([subs[4]?.id, again.id, subs[1]?.id, subs[3]?.id, subs[0]?.id]);
    expect(index.size).toBe(5);
  });

  it('grows past its initial capacity and reuses freed slots', () => {
    const index = new SubscriptionIndex('ethereum', 'mainnet', { expectedSize: 4 });
    const subs = Array.from({ length: 1000 }, (_, i) => sub({ target: `0x${i.toString(16).padStart(64, '0')}`, customerId: String(i) }));
    for (const s of subs) index.add(s);
    expect(index.size).toBe(1000);
    for (const s of subs.slice(0, 500)) index.remove(s.id);
    for (const s of subs.slice(0, 500)) expect(index.has(s.id)).toBe(false);
    for (const s of subs.slice(500)) expect(index.get(s.id)).toMatchObject({ id: s.id, customerId: s.customerId, target: s.target });
    for (const s of subs.slice(0, 500)) index.add(s);
    for (const s of subs) expect(index.get(s.id)?.target).toBe(s.target);
    expect(index.size).toBe(1000);
  });
});

describe('SubscriptionIndex at scale', () => {
  // Speed is the matching benchmark's job (npm run bench -- matching); this checks the long chains stay correct.
  it('adds and removes 100,000 subscriptions of one address and 100,000 equal thresholds', () => {
    const index = new SubscriptionIndex('ethereum', 'mainnet');
    const onAddress = Array.from({ length: 100_000 }, () => sub({ eventType: 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED', target: ADDRESS }));
    const atZero = Array.from({ length: 100_000 }, () => threshold(0n));
    for (const s of [...onAddress, ...atZero]) index.add(s);
    index.settle();
    // Every other one: mostly neither the first nor the last of its chain or run.
    for (let i = 1; i < 100_000; i += 2) {
      index.remove(onAddress[i]?.id as string);
      index.remove(atZero[i]?.id as string);
    }
    expect(index.size).toBe(100_000);
    let n = 0;
    for (let slot = index.firstAddressSlot(ADDRESS); slot >= 0; slot = index.nextSlot(slot)) n++;
    expect(n).toBe(50_000);
    expect(thresholdIds(index, 0n)).toHaveLength(50_000);
  });
});

describe('IdSlots', () => {
  it('round-trips UUIDs through 16 bytes', () => {
    const bytes = new Uint8Array(16);
    const id = randomUUID();
    expect(parseUuid(id, bytes)).toBe(true);
    expect(formatUuid(bytes)).toBe(id);
    expect(parseUuid(id.toUpperCase(), bytes)).toBe(true);
    expect(formatUuid(bytes)).toBe(id);
    for (const bad of ['', id.slice(1), `${id.slice(0, 8)}x${id.slice(9)}`, `${id.slice(0, 35)}g`]) expect(parseUuid(bad, bytes)).toBe(false);
  });

  it('finds every id after many inserts and deletes (backward-shift deletion keeps probe chains whole)', () => {
    const table = new IdSlots(8);
    const live = new Map<string, number>();
    const ids = Array.from({ length: 5000 }, () => randomUUID());
    table.growSlots(ids.length);
    ids.forEach((id, slot) => {
      table.insert(id, slot);
      live.set(id, slot);
    });
    for (let i = 0; i < ids.length; i += 3) {
      table.delete(i);
      live.delete(ids[i] as string);
    }
    for (const [slot, id] of ids.entries()) expect(table.find(id)).toBe(live.has(id) ? slot : -1);
    // Time-ordered ids (shared leading bytes) hash apart too.
    const ordered = new IdSlots(8);
    ordered.growSlots(1000);
    const seq = Array.from({ length: 1000 }, (_, i) => `0190a3b2-7c00-7000-8000-${i.toString(16).padStart(12, '0')}`);
    for (const [slot, id] of seq.entries()) ordered.insert(id, slot);
    for (const [slot, id] of seq.entries()) expect(ordered.find(id)).toBe(slot);
  });

  it('with a stride, keeps the bytes after each id (the slot words of the index) through inserts, deletes and growth', () => {
    const stride = 32;
    const table = new IdSlots(4, stride);
    const ids = Array.from({ length: 600 }, () => randomUUID());
    const words = () => new Int32Array(table.slotBuffer);
    for (const [slot, id] of ids.entries()) {
      table.growSlots(slot + 1 > 4 ? 2 ** Math.ceil(Math.log2(slot + 1)) : 4);
      table.insert(id, slot);
      words().fill(slot * 10 + 1, slot * 8 + 4, slot * 8 + 8); // the words after the id
    }
    for (let slot = 0; slot < ids.length; slot += 4) table.delete(slot);
    const after = words();
    for (const [slot, id] of ids.entries()) {
      expect(table.find(id)).toBe(slot % 4 === 0 ? -1 : slot);
      if (slot % 4 !== 0) expect(table.idOf(slot)).toBe(id);
      expect([...after.subarray(slot * 8 + 4, slot * 8 + 8)]).toEqual(Array(4).fill(slot * 10 + 1));
    }
  });
});

describe('SortedThresholds', () => {
  it('settles large batches, compacts tombstones and keeps insertion order among equals', () => {
    const t = new SortedThresholds();
    const amounts = Array.from({ length: 5000 }, (_, i) => BigInt((i * 7919) % 100));
    for (const [slot, a] of amounts.entries()) t.add(a, slot);
    for (let slot = 0; slot < 5000; slot += 2) expect(t.remove(slot)).toBe(true);
    expect(t.remove(0)).toBe(false);
    expect(t.remove(99_999)).toBe(false);
    expect(t.size).toBe(2500);
    const n = t.countAtMost(49n);
    const seen: [bigint, number][] = [];
    for (let i = 0; i < n; i++) if (t.slotAt(i) >= 0) seen.push([amounts[t.slotAt(i)] as bigint, t.slotAt(i)]);
    const expected = [...amounts.entries()]
      .filter(([slot, a]) => slot % 2 === 1 && a <= 49n)
      .map(([slot, a]) => [a, slot] as [bigint, number])
      .sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : x[1] - y[1]));
    expect(seen).toEqual(expected);
  });
});
