/**
 * Model-based: after any sequence of adds (including re-adds and inactive rows) and removes, the index
 * agrees with a plain Map of subscriptions, and matchBlock with a naive matcher over that Map, match
 * for match and in the same order.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { InternalTransfer, NormalizedBlock, TokenTransfer } from '../chains/types.ts';
import type { IndexableSubscription } from '../domain/subscriptions.ts';
import { SubscriptionIndex } from './index.ts';
import { matchBlock } from './match.ts';
import { NEXT, SLOT_WORDS, type SlotLinks, UNLINKED } from './slot-words.ts';
import { TargetTable } from './target-table.ts';

const WEI = 10n ** 18n;
const IDS = Array.from({ length: 40 }, (_, i) => `00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`);
const ADDRESSES = Array.from({ length: 6 }, (_, i) => `0x${String(i).repeat(40)}`);
const TXIDS = Array.from({ length: 5 }, (_, i) => `0x${String(i).repeat(64)}`);

type Command = { op: 'add'; id: number; kind: 0 | 1 | 2; target: number; on: number | null; active: boolean } | { op: 'remove'; id: number };

const command: fc.Arbitrary<Command> = fc.oneof(
  fc.record({
    op: fc.constant('add' as const),
    id: fc.nat(IDS.length - 1),
    kind: fc.constantFrom(0 as const, 1 as const, 2 as const),
    target: fc.nat(5),
    on: fc.option(fc.integer({ min: 1, max: 100 })),
    active: fc.boolean(),
  }),
  fc.record({ op: fc.constant('remove' as const), id: fc.nat(IDS.length - 1) }),
);

function row(c: Extract<Command, { op: 'add' }>): IndexableSubscription {
  const base = { id: IDS[c.id] as string, customerId: String(c.id), blockchain: 'ethereum', network: 'mainnet', isActive: c.active } as const;
  if (c.kind === 0)
    return { ...base, eventType: 'TRANSACTION_MINED', target: TXIDS[c.target % TXIDS.length] as string, receiveCallbackOn: null, amountHigherThan: null };
  if (c.kind === 1)
    return {
      ...base,
      eventType: 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED',
      target: ADDRESSES[c.target] as string,
      receiveCallbackOn: c.on,
      amountHigherThan: null,
    };
  return {
    ...base,
    eventType: 'CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER',
    target: null,
    receiveCallbackOn: null,
    amountHigherThan: BigInt(c.target),
  };
}

/** Every transaction, every ordered pair of addresses (self-transfers included), amounts around each threshold. */
function everythingBlock(): NormalizedBlock {
  const fresh = (s: string) => Buffer.from(s).toString(); // other string objects than the index's keys
  const tokenTransfers: TokenTransfer[] = [];
  for (const from of ADDRESSES)
    for (const to of ADDRESSES)
      tokenTransfers.push({
        transactionId: TXIDS[0] as string,
        logIndex: tokenTransfers.length,
        tokenType: 'ERC-20',
        contract: '0xc',
        from: fresh(from),
        to: fresh(to),
        amount: 1n,
      });
  const internalTransfers: InternalTransfer[] = [];
  for (let k = 0n; k <= 6n; k++)
    for (const amount of [k * WEI - 1n, k * WEI, k * WEI + 1n])
      if (amount > 0n)
        internalTransfers.push({ parentTransactionId: TXIDS[1] as string, operationId: `call_${internalTransfers.length}`, from: 'a', to: 'b', amount });
  return {
    height: 1,
    hash: '0xh',
    parentHash: '0xp',
    timestamp: 0,
    transactionIds: [...TXIDS.map(fresh), '0xnope'],
    tokenTransfers,
    internalTransfers,
    coinMovements: [],
  };
}

/** The naive matcher: `live` in insertion order (a re-add moves a subscription to the end). */
function naiveMatches(live: Map<string, IndexableSubscription>, block: NormalizedBlock): string[] {
  const subs = [...live.values()];
  const out: string[] = [];
  for (const txid of block.transactionIds)
    for (const s of subs) if (s.eventType === 'TRANSACTION_MINED' && s.target === txid) out.push(`${s.id} mined ${txid}`);
  for (const t of block.tokenTransfers) {
    for (const s of subs) if (s.eventType === 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED' && s.target === t.from) out.push(`${s.id} token ${t.logIndex} outgoing`);
    if (t.to === t.from) continue;
    for (const s of subs) if (s.eventType === 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED' && s.target === t.to) out.push(`${s.id} token ${t.logIndex} incoming`);
  }
  const thresholds = subs
    .map((s, order) => ({ s, order }))
    .filter(({ s }) => s.eventType === 'CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER')
    .sort((a, b) => {
      const x = a.s.amountHigherThan as bigint;
      const y = b.s.amountHigherThan as bigint;
      return x < y ? -1 : x > y ? 1 : a.order - b.order;
    });
  for (const t of block.internalTransfers)
    for (const { s } of thresholds) if ((s.amountHigherThan as bigint) * WEI <= t.amount) out.push(`${s.id} internal ${t.operationId}`);
  return out;
}

describe('SubscriptionIndex against a model', () => {
  it('matches like the naive matcher after any adds and removes', () => {
    const block = everythingBlock();
    fc.assert(
      fc.property(fc.array(command, { maxLength: 120 }), (commands) => {
        const index = new SubscriptionIndex('ethereum', 'mainnet');
        const live = new Map<string, IndexableSubscription>();
        commands.forEach((c, step) => {
          if (c.op === 'remove') {
            expect(index.remove(IDS[c.id] as string)).toBe(live.delete(IDS[c.id] as string));
          } else {
            const r = row(c);
            live.delete(r.id);
            if (r.isActive) live.set(r.id, r);
            expect(index.add(r)).toBe(r.isActive);
          }
          // Match in the middle of the sequence too: it settles pending thresholds mid-way.
          if (step % 17 === 16) expect(describeMatches(index, block)).toEqual(naiveMatches(live, block));
        });
        expect(index.size).toBe(live.size);
        for (const id of IDS) {
          const s = live.get(id);
          expect(index.has(id)).toBe(s !== undefined);
          if (s)
            expect(index.get(id)).toMatchObject({
              customerId: s.customerId,
              eventType: s.eventType,
              target: s.target,
              amountHigherThan: s.amountHigherThan,
              receiveCallbackOn: s.eventType === 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED' ? s.receiveCallbackOn : null,
            });
        }
        expect(describeMatches(index, block)).toEqual(naiveMatches(live, block));
      }),
      { numRuns: 300, seed: 20240501 },
    );
  });
});

function describeMatches(index: SubscriptionIndex, block: NormalizedBlock): string[] {
  return matchBlock(index, block, 'ethereum').map((m) => {
    if (m.eventType === 'TRANSACTION_MINED') return `${m.subscription.id} mined ${m.transactionId}`;
    if (m.eventType === 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED') return `${m.subscription.id} token ${m.transfer.logIndex} ${m.direction}`;
    if (m.eventType === 'CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER') return `${m.subscription.id} internal ${m.transfer.operationId}`;
    return `${m.subscription.id} block ${m.eventType}`;
  });
}

/** Slot words of `slots` slots, each on no chain. */
function unlinkedWords(slots: number): Int32Array {
  const words = new Int32Array(slots * SLOT_WORDS);
  for (let slot = 0; slot < slots; slot++) words[slot * SLOT_WORDS + NEXT] = UNLINKED;
  return words;
}

describe('TargetTable', () => {
  it('finds every key after growth, thousands of removals (filter rebuilt) and re-adds', () => {
    const links: SlotLinks = { words: unlinkedWords(20_000) };
    const table = new TargetTable(links);
    const key = (i: number) => `0x${i.toString(16).padStart(40, '0')}`;
    const add = (slot: number, k: string) => table.add(k, slot);
    for (let i = 0; i < 5000; i++) add(i, key(i));
    for (let i = 0; i < 1000; i++) add(5000 + i, key(i)); // a second subscription on the first 1,000 keys
    expect(table.size).toBe(5000);
    // 4,000 removals, 3,200 of them a key's last slot: stale keys outnumber live ones, the filter is rebuilt.
    for (let i = 0; i < 5000; i++) {
      if (i % 5 === 4) continue;
      expect(table.remove(key(i), i)).toBe(true);
      expect(table.remove(key(i), i)).toBe(false);
    }
    expect(table.remove(key(99_999), 1)).toBe(false);
    for (let i = 0; i < 5000; i++) {
      const slots: number[] = [];
      for (let s = table.first(Buffer.from(key(i)).toString()); s >= 0; s = links.words[s * SLOT_WORDS + NEXT] as number) slots.push(s);
      const own = i % 5 === 4 ? [i] : [];
      expect(slots).toEqual(i < 1000 ? [...own, 5000 + i] : own);
    }
    expect(table.size).toBe(1800);
    for (let i = 10_000; i < 12_000; i++) add(i, key(i));
    for (let i = 10_000; i < 12_000; i++) expect(table.first(key(i))).toBe(i);
    expect(table.first('0xnothing')).toBe(-1);
  });

  it('firstOfEach answers as first() key by key: present, removed, absent and repeated keys, fresh strings', () => {
    const links: SlotLinks = { words: unlinkedWords(30_000) };
    const table = new TargetTable(links);
    const key = (i: number) => `0x${i.toString(16).padStart(40, '0')}`;
    const none = new Int32Array(3).fill(7);
    table.firstOfEach([key(1), key(2), key(3)], 3, none);
    expect([...none]).toEqual([-1, -1, -1]); // an empty table
    for (let i = 0; i < 20_000; i++) {
      table.add(key(i % 15_000), i);
    }
    for (let i = 0; i < 15_000; i += 3) table.remove(key(i), i);
    // Every key once, then absent ones, then some twice; only the first `count` are looked up.
    const keys = [...Array.from({ length: 16_000 }, (_, i) => Buffer.from(key(i)).toString()), key(3), key(4), key(3), key(16)];
    const out = new Int32Array(keys.length + 1).fill(7);
    table.firstOfEach(keys, keys.length, out);
    expect(out[keys.length]).toBe(7);
    const expected = keys.map((k) => table.first(k));
    expect([...out.subarray(0, keys.length)]).toEqual(expected);
    // Keys 5,000..14,999 divisible by 3 lost their only slot (3,333 of them); the last four are found again.
    expect(expected.filter((slot) => slot >= 0).length).toBe(15_000 - 3333 + 4);
  });
});
