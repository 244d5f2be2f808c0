/**
 * TRANSACTION_MINED subscriptions made just after their transactions were mined, racing a stream of
 * blocks: every one gets exactly one callback (issue 10, point 0). The already-mined check and the
 * follower applying the same block must never both leave it to the other.
 *
 * 1. One process with every role, a fake Bitcoin Core mining a block every few milliseconds, and
 *    hundreds of subscriptions made the moment their block exists (while the follower applies it, or
 *    while it catches up on a burst of blocks).
 * 2. The roles split: API and delivery in this process, ingest in a child process that is SIGKILLed
 *    while blocks are mined and subscriptions are made, then started again. Subscriptions made while no
 *    ingest process listened, for blocks it had already processed, get their callback at its restart.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/config.ts';
import { startTestApp, type TestApp, type TestCustomer } from './harness.ts';
import { startFakeUtxoDriver } from './support/fake-utxo-node.ts';
import { followHelpers } from './support/follow-helpers.ts';
import { type HeraldProcess, killAllHeralds, spawnHerald } from './support/herald-process.ts';
import { type Receiver, startReceiver } from './support/receiver.ts';
import { createTestCa, writeCaFile } from './support/tls.ts';
import { until } from './support/wait.ts';

const SECRET = 'whsec-subscribe-race';
const AMOUNT = 10_000n;

type Driver = Awaited<ReturnType<typeof startFakeUtxoDriver>>;

interface Setup {
  node: Driver;
  receiver: Receiver;
  t: TestApp;
  c: TestCustomer;
  caFile: string;
}

async function setUp(roles: ('api' | 'delivery' | 'ingest')[]): Promise<Setup> {
  const ca = await createTestCa();
  const [node, receiver] = await Promise.all([startFakeUtxoDriver('bitcoin'), startReceiver({ ca })]);
  const caFile = writeCaFile(ca.caPem);
  const t = await startTestApp({
    roles,
    chains: [
      {
        blockchain: node.blockchain,
        network: node.network,
        rpcUrl: node.rpcUrl,
        ...node.chainConfig,
        confirmations: 2,
        pollIntervalMs: 10,
        concurrency: 8,
        requestTimeoutMs: 5000,
      },
    ],
    delivery: { ...loadConfig({}, {}).delivery, allowNetworks: ['127.0.0.1/32', '::1/128'], caFile, pollIntervalMs: 20 },
  });
  const c = await t.customer({ domains: ['localhost'] });
  return { node, receiver, t, c, caFile };
}

/** Every subscription has exactly one callback, for the block its transaction was mined in. */
async function expectOneCallbackEach(s: Setup, subscribed: Map<string, { transactionId: string; height: number }>) {
  const { callbacksOf } = helpersOf(s);
  const missing = () => [...subscribed.keys()].filter((id) => callbacksOf(id).length === 0);
  try {
    await until('a callback for every subscription', async () => missing().length === 0, 60_000);
  } catch {
    const ids = missing();
    // What the outbox holds for them tells a lost callback (none) from a slow delivery (pending).
    const rows = await s.t.app.database.db.query<{ status: string; n: string }>(
      'test:missing-callbacks',
      'SELECT status, count(*) AS n FROM callbacks WHERE subscription_id = ANY ($1::uuid[]) GROUP BY status',
      [ids],
    );
    const activity = await s.t.app.database.db.query(
      'test:activity',
      'SELECT state, wait_event_type, wait_event, left(query, 120) AS q, now() - xact_start AS age FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
    );
    console.error(JSON.stringify(activity, null, 1));
    const heights = [...new Set(ids.map((id) => subscribed.get(id)?.height))];
    const status = (await s.t.request('GET', '/blockchain-events/status', { key: s.c.key })).body?.data?.items;
    throw new Error(
      `${ids.length} of ${subscribed.size} subscriptions got no callback, mined at heights ${heights.join(',')}; their outbox rows: ${JSON.stringify(rows)}; status: ${JSON.stringify(status)}`,
    );
  }
  for (const [id, { transactionId, height }] of subscribed) {
    const callbacks = callbacksOf(id);
    // At-least-once: a repeat carries the same key; here no delivery failed, so there is exactly one.
    expect(new Set(callbacks.map((cb) => cb.json.idempotencyKey)).size, id).toBe(1);
    expect(callbacks[0]?.json.data.item).toMatchObject({ transactionId, minedInBlock: { height, hash: await s.node.blockHash(height) } });
  }
}

function helpersOf(s: Setup) {
  return followHelpers(() => ({ t: s.t, customer: s.c, receiver: s.receiver, blockchain: s.node.blockchain, network: s.node.network }), SECRET);
}

/**
 * Mines `blocks` blocks of `perBlock` transactions (`burst` blocks at a time), subscribing to each
 * block's transactions as soon as the node has it, without waiting for the follower.
 */
async function raceBlocks(s: Setup, blocks: number, perBlock: number, burst: number, subscribed: Map<string, { transactionId: string; height: number }>) {
  const { subscribeMined } = helpersOf(s);
  const to = await s.node.newAddress();
  const creates: Promise<void>[] = [];
  for (let b = 0; b < blocks; b += burst) {
    const mined: { transactionId: string; height: number }[] = [];
    for (let i = 0; i < burst; i++) {
      const ids: string[] = [];
      for (let k = 0; k < perBlock; k++) ids.push(await s.node.send(to, AMOUNT));
      const height = await s.node.mine(1);
      for (const transactionId of ids) mined.push({ transactionId, height });
    }
    for (const m of mined) {
      creates.push(
        subscribeMined(m.transactionId, 'race').then((id) => {
          subscribed.set(id, m);
        }),
      );
    }
    // A few milliseconds between blocks: the follower applies each while its subscriptions arrive.
    await new Promise((r) => setTimeout(r, 3 + (b % 7)));
  }
  await Promise.all(creates);
}

describe('transaction-mined subscriptions racing the follower, one process', () => {
  let s: Setup;
  beforeAll(async () => {
    s = await setUp(['api', 'delivery', 'ingest']);
    await helpersOf(s).processed(await s.node.height());
  }, 60_000);
  afterAll(async () => {
    await s?.t.close();
    await s?.receiver.close();
    await s?.node.close();
  });

  it('400 subscriptions made as their blocks are applied (and during catch-up bursts) all get exactly one callback', { timeout: 90_000 }, async () => {
    const subscribed = new Map<string, { transactionId: string; height: number }>();
    await raceBlocks(s, 40, 5, 1, subscribed); // 200: one block at a time, applied as they arrive
    await raceBlocks(s, 40, 5, 8, subscribed); // 200: bursts of 8 blocks, the follower catching up
    expect(subscribed.size).toBe(400);
    await expectOneCallbackEach(s, subscribed);
  });

  it('block-height-reached subscriptions made as their height is applied (just before, at, just after) all get exactly one callback, with the block at that height', {
    timeout: 90_000,
  }, async () => {
    const { subscribe, callbacksOf } = helpersOf(s);
    const subscribed = new Map<string, number>();
    const creates: Promise<unknown>[] = [];
    for (let b = 0; b < 60; b++) {
      const height = await s.node.mine(1);
      for (const target of [height - 1, height, height + 1]) {
        creates.push(
          subscribe('block-height-reached', { blockHeightReached: target, allowDuplicates: true }, 'heights').then((r) =>
            subscribed.set(r.referenceId, target),
          ),
        );
      }
      await new Promise((r) => setTimeout(r, 3 + (b % 7)));
    }
    await Promise.all(creates);
    await s.node.mine(1); // the last round's height + 1
    expect(subscribed.size).toBe(180);
    const missing = () => [...subscribed.keys()].filter((id) => callbacksOf(id).length === 0);
    await until('a callback for every height subscription', async () => missing().length === 0, 60_000).catch(() => {
      throw new Error(`${missing().length} of 180 height subscriptions got no callback, heights ${missing().map((id) => subscribed.get(id))}`);
    });
    for (const [id, height] of subscribed) {
      const callbacks = callbacksOf(id);
      expect(new Set(callbacks.map((cb) => cb.json.idempotencyKey)).size, id).toBe(1);
      expect(callbacks[0]?.json.data.item).toEqual({
        blockchain: 'bitcoin',
        network: 'testnet',
        height,
        hash: await s.node.blockHash(height),
        timestamp: expect.any(Number),
      });
    }
  });
});

describe('transaction-mined subscriptions across a killed ingest process (roles split)', () => {
  let s: Setup;
  let dir: string;
  let configFile: string;
  let ingest: HeraldProcess | undefined;

  beforeAll(async () => {
    s = await setUp(['api', 'delivery']);
    dir = mkdtempSync(join(tmpdir(), 'herald-subscribe-race-'));
    configFile = join(dir, 'herald.config.json');
    writeFileSync(configFile, JSON.stringify({ chains: [{ blockchain: s.node.blockchain, network: s.node.network, confirmations: 2, pollIntervalMs: 10 }] }));
  }, 60_000);
  afterAll(async () => {
    killAllHeralds();
    await s?.t.close();
    await s?.receiver.close();
    await s?.node.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const startIngest = () => {
    ingest = spawnHerald(['--roles', 'ingest'], {
      DATABASE_URL: s.t.config.databaseUrl,
      HERALD_CONFIG: configFile,
      HERALD_ROLES: '',
      HERALD_RPC_BITCOIN_TESTNET: s.node.rpcUrl,
      HERALD_CHAIN_ID_BITCOIN_TESTNET: 'test', // the fake's own chain (docs/reference/chains.md "Chain identity")
      HERALD_LOG_LEVEL: 'warn',
    });
  };

  it('subscriptions made while the ingest process is dead, for blocks it already processed, get their callback when it is back', {
    timeout: 120_000,
  }, async () => {
    const { processed } = helpersOf(s);
    startIngest();
    const subscribed = new Map<string, { transactionId: string; height: number }>();
    try {
      await processed(await s.node.height());
      await raceBlocks(s, 20, 5, 1, subscribed); // racing the child's follower
      await processed(await s.node.height());

      // Transactions mined and processed before anyone subscribed to them...
      const to = await s.node.newAddress();
      const unsubscribed: { transactionId: string; height: number }[] = [];
      for (let b = 0; b < 10; b++) {
        const ids = [];
        for (let k = 0; k < 5; k++) ids.push(await s.node.send(to, AMOUNT));
        const height = await s.node.mine(1);
        for (const transactionId of ids) unsubscribed.push({ transactionId, height });
      }
      await processed(await s.node.height());

      // ...subscribed to while the ingest process is dead (killed mid-stream); blocks keep coming and
      // more subscriptions are made for blocks it never saw.
      ingest?.child.kill('SIGKILL');
      await ingest?.exited;
      await Promise.all(unsubscribed.map(async (m) => subscribed.set(await helpersOf(s).subscribeMined(m.transactionId, 'race'), m)));
      await raceBlocks(s, 20, 5, 4, subscribed);
      expect(subscribed.size).toBe(250);

      startIngest();
      await raceBlocks(s, 20, 5, 2, subscribed); // and racing it again while it catches up
      await processed(await s.node.height());
      expect(subscribed.size).toBe(350);
      await expectOneCallbackEach(s, subscribed);
    } catch (error) {
      throw new Error(`${(error as Error).message}\ningest output:\n${ingest?.output().slice(-4000)}`);
    }
  });

  it('the look-back at start waits for the catch-up: those callbacks are enqueued after the follower has applied the head', {
    timeout: 120_000,
  }, async () => {
    const { processed, subscribeMined, callbacksOf } = helpersOf(s);
    ingest?.child.kill('SIGKILL'); // the test before leaves its ingest process running
    await ingest?.exited;
    startIngest();
    try {
      const to = await s.node.newAddress();
      const ids: string[] = [];
      for (let k = 0; k < 5; k++) ids.push(await s.node.send(to, AMOUNT));
      await s.node.mine(1);
      await processed(await s.node.height());
      ingest?.child.kill('SIGKILL');
      await ingest?.exited;

      // Subscribed while no ingest process runs, to transactions it has already passed; then a backlog to catch up on.
      const subscriptions = await Promise.all(ids.map((id) => subscribeMined(id, 'look-back')));
      await s.node.mine(300);
      const head = await s.node.height();
      startIngest();
      await processed(head, 60_000); // a 300-block catch-up by a process that is starting
      await until('the look-back callbacks', async () => subscriptions.every((id) => callbacksOf(id).length === 1));

      const [row] = await s.t.app.database.db.query<{ appliedHead: Date; firstCallback: Date; cursor: string }>(
        'test:look-back-order',
        `SELECT (SELECT updated_at FROM chain_cursors WHERE blockchain = $1 AND network = $2) AS "appliedHead",
                (SELECT height FROM chain_cursors WHERE blockchain = $1 AND network = $2) AS cursor,
                (SELECT min(created_at) FROM callbacks WHERE subscription_id = ANY ($3::uuid[])) AS "firstCallback"`,
        [s.node.blockchain, s.node.network, subscriptions],
      );
      expect(Number(row?.cursor)).toBe(head);
      // Looked back for only once the head was applied (the cursor has not moved since: no block was mined).
      expect(row?.firstCallback.getTime()).toBeGreaterThan(row?.appliedHead.getTime() as number);
    } catch (error) {
      throw new Error(`${(error as Error).message}\ningest output:\n${ingest?.output().slice(-4000)}`);
    }
  });
});
