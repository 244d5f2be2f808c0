/**
 * The mempool loop's seen-set on the real database (mempool_seen): persisted with each batch, loaded after
 * a restart so nothing is read twice, bounded by count and by age (memory and table), and a failed read
 * keeps its backlog. The node is a scripted MempoolReader (the readers themselves are tested on litecoind
 * and the EVM test node).
 */
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { MempoolReader, PendingTransactions } from '../src/chains/types.ts';
import { FollowerGate } from '../src/ingest/gate.ts';
import { type MempoolDeps, newMempoolState, pollMempool } from '../src/ingest/mempool.ts';
import { SubscriptionIndex } from '../src/matching/index.ts';
import type { Db } from '../src/store/db.ts';
import { startTestApp, type TestApp } from './harness.ts';

let t: TestApp;
let db: Db;
beforeAll(async () => {
  t = await startTestApp();
  db = t.app.database.db;
});
afterAll(async () => t?.close());

const chain = { blockchain: 'litecoin', network: 'testnet' } as const;
const id = (n: number) => n.toString(16).padStart(64, '0');

/** Lists `listed()` at each poll; records what it was asked to read; fails once when told to (the next read, or the n-th). */
function scriptedReader(listed: () => string[]) {
  const reads: string[][] = [];
  let failIn = 0;
  const reader: MempoolReader = {
    method: 'scripted',
    newTransactionIds: async () => listed(),
    async readPending(ids): Promise<PendingTransactions> {
      if (failIn > 0 && --failIn === 0) throw new Error('node down');
      reads.push(ids);
      return { transactionIds: ids, coinMovements: [], tokenTransfers: [], conflicts: [] };
    },
  };
  return { reader, reads, failOnce: (nth = 1) => (failIn = nth) };
}

function indexWithUnconfirmed(): SubscriptionIndex {
  const index = new SubscriptionIndex('litecoin', 'testnet');
  index.add({
    id: randomUUID(),
    customerId: '1',
    eventType: 'ADDRESS_COINS_TRANSACTION_UNCONFIRMED',
    blockchain: 'litecoin',
    network: 'testnet',
    target: 'rltc1qexample',
    receiveCallbackOn: null,
    amountHigherThan: null,
    isActive: true,
  });
  index.settle();
  return index;
}

const storedIds = async () =>
  (
    await db.query<{ transaction_id: string }>(
      'test:seen',
      'SELECT transaction_id FROM mempool_seen WHERE blockchain = $1 AND network = $2 ORDER BY transaction_id',
      [chain.blockchain, chain.network],
    )
  ).map((r) => r.transaction_id);

it('persists the seen-set with each batch, reads nothing twice after a restart, keeps a failed backlog, and bounds the set by count and age', async () => {
  let mempool = [id(1), id(2), id(3)];
  const node = scriptedReader(() => mempool);
  let clock = new Date('2026-11-24T12:00:00Z');
  const index = indexWithUnconfirmed();
  const deps: MempoolDeps = { db, reader: node.reader, chain, index: () => index, logger: pino({ level: 'silent' }), now: () => clock, batchSize: 2 };

  let state = newMempoolState();
  expect(await pollMempool(deps, state)).toEqual({ read: 3, fired: 0 });
  expect(node.reads).toEqual([[id(1), id(2)], [id(3)]]);
  expect(await storedIds()).toEqual([id(1), id(2), id(3)]);

  // A restart: a new state, loaded from the store; the node lists the old ones and a new one.
  mempool = [id(1), id(2), id(3), id(4)];
  state = newMempoolState();
  node.failOnce();
  await expect(pollMempool(deps, state)).rejects.toThrow('node down');
  expect(state.backlog).toEqual([id(4)]);
  mempool = [];
  expect(await pollMempool(deps, state)).toEqual({ read: 1, fired: 0 });
  expect(node.reads.at(-1)).toEqual([id(4)]);
  expect(state.backlog).toEqual([]);

  // Count: at most 2 kept (the newest); age: a day later, everything older goes.
  clock = new Date(clock.getTime() + 61_000);
  mempool = [id(5)];
  await pollMempool({ ...deps, maxSeen: 2 }, state);
  expect(state.seen.size).toBeLessThanOrEqual(2);
  expect((await storedIds()).length).toBeLessThanOrEqual(2);
  expect(await storedIds()).toContain(id(5));
  clock = new Date(clock.getTime() + 25 * 3600_000);
  mempool = [id(6)];
  await pollMempool(deps, state);
  expect([...state.seen.keys()]).toEqual([id(6)]);
  expect(await storedIds()).toEqual([id(6)]);
});

it('does not read the node while the chain has no unconfirmed subscription', async () => {
  const node = scriptedReader(() => {
    throw new Error('the node must not be asked');
  });
  const state = newMempoolState();
  const deps: MempoolDeps = { db, reader: node.reader, chain, index: () => new SubscriptionIndex('litecoin', 'testnet'), logger: pino({ level: 'silent' }) };
  expect(await pollMempool(deps, state)).toEqual({ read: 0, fired: 0 });
  expect(state.idle).toBe(true);
});

it('reads the next batch while one commits: a failed read ahead keeps its batch and the later ones in the backlog, the earlier batch committed', async () => {
  const ids = [id(101), id(102), id(103), id(104), id(105)];
  let mempool = ids;
  const node = scriptedReader(() => mempool);
  const index = indexWithUnconfirmed();
  const deps: MempoolDeps = { db, reader: node.reader, chain, index: () => index, logger: pino({ level: 'silent' }), batchSize: 2 };
  const state = newMempoolState();
  node.failOnce(2);
  await expect(pollMempool(deps, state)).rejects.toThrow('node down');
  expect(node.reads).toEqual([[id(101), id(102)]]);
  expect(state.backlog).toEqual([id(103), id(104), id(105)]);
  expect(await storedIds()).toEqual(expect.arrayContaining([id(101), id(102)]));
  expect(await storedIds()).not.toContain(id(103));
  mempool = [];
  expect(await pollMempool(deps, state)).toEqual({ read: 3, fired: 0 });
  expect(node.reads.slice(1)).toEqual([[id(103), id(104)], [id(105)]]);
  expect(state.backlog).toEqual([]);
});

it("gives way to the follower: no batch is read while the follower's block is in progress", async () => {
  const node = scriptedReader(() => [id(201), id(202)]);
  const gate = new FollowerGate();
  const index = indexWithUnconfirmed();
  const deps: MempoolDeps = { db, reader: node.reader, chain, index: () => index, logger: pino({ level: 'silent' }), gate };
  gate.enter();
  const round = pollMempool(deps, newMempoolState());
  await new Promise((resume) => setTimeout(resume, 200));
  expect(node.reads).toEqual([]);
  gate.leave();
  expect(await round).toEqual({ read: 2, fired: 0 });
  expect(node.reads).toEqual([[id(201), id(202)]]);
});

it('while the follower catches up (blocks back to back), reads a batch only once per catchUpYieldMs, then the rest at once', async () => {
  const node = scriptedReader(() => [id(301), id(302), id(303), id(304), id(305)]);
  const gate = new FollowerGate();
  const index = indexWithUnconfirmed();
  const deps: MempoolDeps = { db, reader: node.reader, chain, index: () => index, logger: pino({ level: 'silent' }), gate, batchSize: 1, catchUpYieldMs: 150 };
  // A follower catching up: each step some I/O, the next one started as the previous one ends.
  let catchingUp = true;
  const follower = (async () => {
    while (catchingUp) {
      gate.enter();
      await new Promise((resume) => setTimeout(resume, 3)).finally(() => gate.leave());
    }
  })();
  const started = performance.now();
  const round = pollMempool(deps, newMempoolState());
  await new Promise((resume) => setTimeout(resume, 400));
  // Timers fire late on a busy machine, never early: at most one batch per 150 ms (and the commits wait for gaps too).
  expect(node.reads.length).toBeLessThanOrEqual(2);
  catchingUp = false;
  await follower;
  // Caught up: nothing skipped, the rest without waiting for the yield.
  expect(await round).toEqual({ read: 5, fired: 0 });
  expect(node.reads).toEqual([[id(301)], [id(302)], [id(303)], [id(304)], [id(305)]]);
  expect(performance.now() - started).toBeLessThan(400 + 3 * 150);
});
