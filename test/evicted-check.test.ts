/**
 * The eviction check's decision (src/ingest/evicted.ts, docs/concepts/deposit-safety.md#evicted) on the real
 * database, the node scripted (the readers' own calls are tested on litecoind and the EVM test node:
 * test/litecoin-evicted.test.ts, test/evm-evicted.test.ts):
 * - a check the node fails counts nothing and puts the next one off (backoff);
 * - a transaction found in the mempool again starts its count over;
 * - three checks missing that do not span mempoolEvictionSpanMs make no candidate (no proof asked);
 * - a proof at a tip other than the follower's cursor (the follower behind, or the tip moved) closes
 *   nothing; the next one at the cursor closes the announcement and queues one DROPPED, evicted;
 * - closed, it is never checked nor sent again;
 * - more candidates than one proof can ask about between two blocks: proven a part at a time, all closed;
 * - more open announcements than one check asks about, the oldest never provable: the newer are checked in
 *   turn, and closed.
 */
import type pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { MempoolReader } from '../src/chains/types.ts';
import { checkEvictions, checkEvictionsWhenDue, MAX_CHECKED, newEvictionState } from '../src/ingest/evicted.ts';
import { saveCursor } from '../src/store/chain-state.ts';
import type { Db } from '../src/store/db.ts';
import { recordAnnounced } from '../src/store/dropped.ts';
import { insertUnlessTwin } from '../src/store/subscriptions.ts';
import { startTestApp, type TestApp } from './harness.ts';
import { ethereumSubscription } from './support/subscription-rows.ts';

const chain = { blockchain: 'ethereum', network: 'mainnet' } as const;
const CURSOR = `0x${'c'.repeat(64)}`;
const OTHER_TIP = `0x${'d'.repeat(64)}`;
const ADDRESS = `0x${'1'.repeat(40)}`;
const SENDER = `0x${'2'.repeat(40)}`;
const SPAN_MS = 1_000;
const tx = (n: number) => `0x${n.toString(16).padStart(64, '0')}`;

let t: TestApp;
let db: Db;
let subscriptionId: string;

beforeAll(async () => {
  t = await startTestApp();
  db = t.app.database.db;
  const customerId = (await t.customer()).id;
  const subscription = await insertUnlessTwin(
    db,
    customerId,
    ethereumSubscription({ eventType: 'ADDRESS_COINS_TRANSACTION_UNCONFIRMED', target: ADDRESS, address: ADDRESS }),
  );
  if (!subscription) throw new Error('subscription not inserted');
  subscriptionId = subscription.id;
  await db.transaction('test:cursor', (q) => saveCursor(q, chain, { height: 100, hash: CURSOR, timestamp: 1_700_000_000 }));
}, 60_000);

afterAll(async () => t?.close());

/** A node that says `gone` are in no mempool, proves every candidate at `tip`, and fails when told to. */
function scriptedNode() {
  const node = { gone: new Set<string>(), tip: CURSOR, fail: false, proofs: [] as string[][] };
  const reader: MempoolReader = {
    method: 'scripted',
    newTransactionIds: async () => [],
    readPending: async () => ({ transactionIds: [], coinMovements: [], tokenTransfers: [], conflicts: [] }),
    async missing(ids) {
      if (node.fail) throw new Error('node down');
      return ids.filter((id) => node.gone.has(id));
    },
    async provenUnmined(candidates) {
      node.proofs.push(candidates.map((c) => c.transactionId));
      return { tip: node.tip, unmined: candidates.map((c) => c.transactionId) };
    },
  };
  return { node, reader };
}

const announce = (id: string, nonce: number) =>
  recordAnnounced(
    db,
    chain,
    [{ transactionId: id, subscriptionId, eventType: 'ADDRESS_COINS_TRANSACTION_UNCONFIRMED', item: { ...chain, address: ADDRESS, transactionId: id } }],
    [{ transactionId: id, key: `${SENDER}:${nonce}` }],
    new Date(),
  );
const checksOf = async (id: string) =>
  (await db.query<{ missing_checks: number }>('test:checks', 'SELECT missing_checks FROM mempool_announced WHERE transaction_id = $1', [id]))[0]
    ?.missing_checks;
const droppedOf = (id: string) =>
  db.query<{ event_type: string; body: string }>(
    'test:dropped',
    "SELECT event_type, body FROM callbacks WHERE subscription_id = $1 AND body LIKE '%' || $2 || '%'",
    [subscriptionId, id],
  );

it('counts consecutive misses over the span, decides only at the follower cursor, sends once; a failed check counts nothing', async () => {
  const { node, reader } = scriptedNode();
  const warnings: string[] = [];
  const logger = { warn: (_: unknown, message: string) => warnings.push(message) } as unknown as pino.Logger;
  const deps = { db, reader, chain, logger };
  const evicted = tx(1);
  const back = tx(2);
  await announce(evicted, 7);
  await announce(back, 8);
  const at = (ms: number) => new Date(Date.UTC(2026, 11, 2, 12) + ms);

  // The node fails: nothing counted, the next check put off by the backoff.
  let clock = at(0);
  const state = newEvictionState();
  node.fail = true;
  node.gone = new Set([evicted, back]);
  expect(await checkEvictionsWhenDue({ ...deps, spanMs: SPAN_MS, now: () => clock }, state)).toBe(0);
  expect(warnings).toHaveLength(1);
  expect(state.nextAt).toBeGreaterThan(clock.getTime());
  expect(await checksOf(evicted)).toBe(0);
  node.fail = false;

  // Three misses within 200 ms: no candidate yet (the span is 1 s); `back` is found again at the third.
  expect(await checkEvictions(deps, at(0), SPAN_MS)).toBe(0);
  expect(await checkEvictions(deps, at(100), SPAN_MS)).toBe(0);
  node.gone = new Set([evicted]);
  expect(await checkEvictions(deps, at(200), SPAN_MS)).toBe(0);
  expect([await checksOf(evicted), await checksOf(back)]).toEqual([3, 0]);
  expect(node.proofs).toEqual([]);

  // Past the span: a candidate, proven at a tip the follower has not applied: nothing closed.
  node.tip = OTHER_TIP;
  expect(await checkEvictions(deps, at(1_000), SPAN_MS)).toBe(0);
  expect(node.proofs).toEqual([[evicted]]);
  expect(await checksOf(evicted)).toBe(4);
  expect(await droppedOf(evicted)).toEqual([]);

  // Proven at the cursor: closed, one DROPPED, evicted.
  node.tip = CURSOR;
  clock = at(1_100);
  state.nextAt = 0;
  expect(await checkEvictionsWhenDue({ ...deps, spanMs: SPAN_MS, now: () => clock }, state)).toBe(1);
  expect(await checksOf(evicted)).toBeUndefined();
  const [dropped, ...more] = await droppedOf(evicted);
  expect(more).toEqual([]);
  expect(dropped?.event_type).toBe('ADDRESS_COINS_TRANSACTION_UNCONFIRMED_DROPPED');
  expect(JSON.parse(dropped?.body as string).data.item).toEqual({ ...chain, address: ADDRESS, transactionId: evicted, reason: 'evicted' });

  // Closed: never checked nor sent again; `back`, in the mempool, stays open.
  node.gone = new Set([evicted]);
  expect(await checkEvictions(deps, at(5_000), SPAN_MS)).toBe(0);
  expect(await droppedOf(evicted)).toHaveLength(1);
  expect(await checksOf(back)).toBe(0);
  expect(node.proofs).toEqual([[evicted], [evicted]]);
});

/** Every open announcement of the chain closed: each of the next tests starts with none. */
const clearAnnouncements = () =>
  db.transaction('test:clear', async (q) => {
    await q.query('test:clear-announced', 'DELETE FROM mempool_announced WHERE blockchain = $1 AND network = $2', [chain.blockchain, chain.network]);
    await q.query('test:clear-spends', 'DELETE FROM mempool_announced_spends WHERE blockchain = $1 AND network = $2', [chain.blockchain, chain.network]);
  });
const announceMany = (ids: string[], at: Date) =>
  recordAnnounced(
    db,
    chain,
    ids.map((id) => ({
      transactionId: id,
      subscriptionId,
      eventType: 'ADDRESS_COINS_TRANSACTION_UNCONFIRMED',
      item: { ...chain, address: ADDRESS, transactionId: id },
    })),
    ids.map((id, i) => ({ transactionId: id, key: `${SENDER}:${1_000 + i}` })),
    at,
  );
const openCount = async () =>
  (
    await db.query<{ n: number }>(
      'test:open',
      'SELECT count(DISTINCT transaction_id)::int AS n FROM mempool_announced WHERE blockchain = $1 AND network = $2',
      [chain.blockchain, chain.network],
    )
  )[0]?.n;

it('candidates more than a block time can prove at once: proven a part at a time, each part between two blocks, all closed', async () => {
  await clearAnnouncements();
  const { node, reader } = scriptedNode();
  // The node makes a block every 120 of the proof's per-candidate calls (EVM: one eth_getTransactionCount
  // each), and the follower applies each block at once: a proof asking about more candidates than that
  // always sees the tip move, and proves nothing.
  const BLOCK_CALLS = 120;
  let calls = 0;
  const blockAt = (n: number) => Math.floor(n / BLOCK_CALLS);
  const hashOf = (block: number) => `0x${'e'.repeat(56)}${block.toString(16).padStart(8, '0')}`;
  const follow = (block: number) =>
    db.transaction('test:cursor', (q) => saveCursor(q, chain, { height: 200 + block, hash: hashOf(block), timestamp: 1_700_000_000 }));
  await follow(0);
  reader.provenUnmined = async (candidates) => {
    const before = blockAt(calls);
    calls += candidates.length;
    const after = blockAt(calls);
    if (after !== before) await follow(after);
    return after === before ? { tip: hashOf(before), unmined: candidates.map((c) => c.transactionId) } : undefined;
  };
  const ids = Array.from({ length: 200 }, (_, i) => tx(10_000 + i));
  await announceMany(ids, new Date());
  node.gone = new Set(ids);
  const deps = { db, reader, chain, logger: { warn: () => undefined } as unknown as pino.Logger };
  const at = (ms: number) => new Date(Date.UTC(2026, 11, 2, 13) + ms);
  for (const ms of [0, 100, 200]) expect(await checkEvictions(deps, at(ms), SPAN_MS)).toBe(0);
  let closed = 0;
  for (let i = 0; i < 6 && closed < ids.length; i++) closed += await checkEvictions(deps, at(1_000 + i * 100), SPAN_MS);
  expect(closed).toBe(ids.length);
  expect(await openCount()).toBe(0);
  await db.transaction('test:cursor', (q) => saveCursor(q, chain, { height: 100, hash: CURSOR, timestamp: 1_700_000_000 }));
}, 60_000);

it('more open announcements than one check asks about, the oldest never provable: the newer are checked too, in turn, and closed', async () => {
  await clearAnnouncements();
  const { node, reader } = scriptedNode();
  // The oldest MAX_CHECKED spend only unconfirmed outputs (never proven, open for a day); one newer is evicted.
  const stuck = Array.from({ length: MAX_CHECKED }, (_, i) => tx(100_000 + i));
  const newer = tx(99);
  await announceMany(stuck, new Date(Date.now() - 3_600_000));
  await announceMany([newer], new Date());
  node.gone = new Set([...stuck, newer]);
  reader.provenUnmined = async (candidates) => ({ tip: CURSOR, unmined: candidates.map((c) => c.transactionId).filter((id) => id === newer) });
  const deps = { db, reader, chain, logger: { warn: () => undefined } as unknown as pino.Logger };
  const at = (ms: number) => new Date(Date.UTC(2026, 11, 2, 14) + ms);
  const state = newEvictionState();
  let closed = 0;
  for (let i = 0; i < 8 && closed === 0; i++) {
    state.nextAt = 0;
    closed += await checkEvictionsWhenDue({ ...deps, spanMs: SPAN_MS, now: () => at(i * 300) }, state);
  }
  expect(closed).toBe(1);
  expect(await checksOf(newer)).toBeUndefined();
  expect(await openCount()).toBe(MAX_CHECKED);
  await clearAnnouncements();
}, 120_000);
