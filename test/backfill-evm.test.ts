/**
 * Issue 14 points 2 and 3 end to end on a real EVM node (EDR): backfill from a height and replay of a
 * block range.
 *
 * - 60 blocks each with one token transfer to a holder are mined before herald follows the chain. A
 *   token subscription created with fromBlockHeight 50 blocks back receives exactly those 50 blocks'
 *   transfers, then the live ones, in block order (x-callback-sequence 1, 2, 3, ... by block), each key
 *   once; the subscription item shows its backfill until it is done.
 * - A replay of the backfilled range: the dry run lists exactly the callbacks first sent (keys and bodies)
 *   and charges nothing; the replay sends them again, byte for byte, 5 credits each.
 * - Edge cases: fromBlockHeight in the future, too deep, below the node's lowest block, on an event that
 *   takes none; a replay range too big or past the processed height; an unknown subscription; a customer
 *   without credits (402, nothing queued).
 */
import { randomUUID } from 'node:crypto';
import type { Address } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/config.ts';
import { createBlockJob } from '../src/store/block-jobs.ts';
import { findCustomerByName } from '../src/store/customers.ts';
import { startTestApp, type TestApp, type TestCustomer } from './harness.ts';
import { compileContracts, deployContract, writeContract } from './support/evm-contracts.ts';
import { type EvmNode, startEvmNode } from './support/evm-node.ts';
import { type Callback, followHelpers } from './support/follow-helpers.ts';
import { receiverDelivery } from './support/followed-app.ts';
import { type Receiver, startReceiver } from './support/receiver.ts';
import { createTestCa, writeCaFile } from './support/tls.ts';
import { until } from './support/wait.ts';

const SECRET = 'whsec-backfill-evm';
const PAST = 60;
const BACK = 50;
const MAX_DEPTH = 55;
/** blockJobs.maxQueuedBlocksPerCustomer here: 40 replays of 50 blocks fit. */
const QUEUE_CAP = 2000;

let node: EvmNode;
let receiver: Receiver;
let t: TestApp;
let c: TestCustomer;
let token: Address;
let holder: Address;
/** The chain's head when herald started following (the past transfers end there). */
let start: number;
/** Block height -> the amount transferred to the holder in it. */
const amountAt = new Map<number, bigint>();

// Straight from the provider: viem's getBlockNumber caches the answer for seconds.
const head = async () => Number(await node.request<string>('eth_blockNumber'));

beforeAll(async () => {
  const ca = await createTestCa();
  [node, receiver] = await Promise.all([startEvmNode({ automine: true }), startReceiver({ ca })]);
  await compileContracts();
  token = await deployContract(node, 'TestToken', ['Herald Backfill Token', 'HBT', 6]);
  await writeContract(node, 'TestToken', token, 'mint', [node.accounts[0]?.address, 1_000_000n * 10n ** 6n]);
  holder = node.accounts[5]?.address as Address;
  // Automine: one block per transfer, each to the holder with an amount of its own.
  for (let i = 1; i <= PAST; i++) {
    await writeContract(node, 'TestToken', token, 'transfer', [holder, BigInt(i)]);
    amountAt.set(await head(), BigInt(i));
  }
  await node.setAutomine(false);
  start = await head();
  t = await startTestApp({
    chains: [
      {
        blockchain: 'ethereum',
        network: 'goerli',
        rpcUrl: node.url,
        pollIntervalMs: 50,
        concurrency: 8,
        requestTimeoutMs: 5000,
        // As a pruned node would be: nothing below this is served.
        lowestBlockHeight: start - MAX_DEPTH + 2,
      },
    ],
    blockJobs: { ...loadConfig({}, {}).blockJobs, maxBackfillDepth: MAX_DEPTH, batchBlocks: 7, maxQueuedBlocksPerCustomer: QUEUE_CAP },
    delivery: receiverDelivery(writeCaFile(ca.caPem)),
  });
  c = await t.customer({ domains: ['localhost'] });
  await processed(start);
}, 120_000);

afterAll(async () => {
  await t?.close();
  await receiver?.close();
  await node?.close();
});

const follow = followHelpers(() => ({ t, customer: c, receiver, blockchain: 'ethereum', network: 'goerli' }), SECRET);
const { processed, callbacksOf } = follow;
const PER_BLOCK = loadConfig({}, {}).costs.replayPerBlock;
const path = (event: string) => `/blockchain-events/ethereum/goerli/subscriptions/${event}`;
const heightOf = (cb: Callback) => (cb.json.data.item.minedInBlock as { height: number }).height;
const sequenceOf = (cb: Callback) => Number(cb.headers['x-callback-sequence']);

async function create(event: string, item: Record<string, unknown>, key = c.key) {
  return await t.request('POST', path(event), {
    key,
    body: { data: { item: { callbackUrl: `${receiver.url}/hooks/${event}`, callbackSecretKey: SECRET, ...item } } },
  });
}

async function subscriptionItem(id: string) {
  const r = await t.request('GET', `/blockchain-events/subscriptions/${id}`, { key: c.key });
  expect(r.status, r.text).toBe(200);
  return r.body.data.item;
}

async function mineTransfer(amount: bigint): Promise<number> {
  await writeContract(node, 'TestToken', token, 'transfer', [holder, amount], { wait: false });
  const height = await node.mine(1);
  amountAt.set(height, amount);
  await processed(height);
  return height;
}

describe('backfill from a height and replay of a block range (EVM)', () => {
  let referenceId: string;
  const from = () => start - BACK + 1;

  it('a token subscription created with fromBlockHeight 50 blocks back receives exactly those blocks’ transfers, then the live ones, in block order', async () => {
    const created = await create('address-tokens-transactions-confirmed', { address: holder, receiveCallbackOn: 2, fromBlockHeight: from() });
    expect(created.status, created.text).toBe(201);
    referenceId = created.body.data.item.referenceId;
    expect(created.body.data.item.backfill).toEqual({ fromBlockHeight: from(), toBlockHeight: start, processedHeight: from() - 1, state: 'running' });
    // Live blocks while (or after) the backfill runs: one transfer each.
    const live = [await mineTransfer(1001n), await mineTransfer(1002n), await mineTransfer(1003n)];
    await node.mine(1); // the last transfer's second confirmation
    await processed((live[2] as number) + 1);
    await until('the backfill to finish', async () => (await subscriptionItem(referenceId)).backfill === undefined, 30_000);
    const expected = [...amountAt.keys()].filter((h) => h >= from()).sort((a, b) => a - b);
    await until('every callback', async () => new Set(callbacksOf(referenceId).map((cb) => cb.json.idempotencyKey)).size >= expected.length, 30_000);
    await t.app.worker?.settled();
    const received = callbacksOf(referenceId);
    const keys = new Set(received.map((cb) => cb.json.idempotencyKey));
    expect(keys.size).toBe(expected.length);
    // Exactly the blocks from fromBlockHeight on: none before, none missing, each with its amount.
    const byHeight = new Map(received.map((cb) => [heightOf(cb), cb]));
    expect([...byHeight.keys()].sort((a, b) => a - b)).toEqual(expected);
    for (const h of expected) {
      const item = byHeight.get(h)?.json.data.item as { token: { amount: string }; direction: string };
      expect(item.direction).toBe('incoming');
      expect(item.token.amount).toBe((Number(amountAt.get(h)) / 1e6).toString());
    }
    // x-callback-sequence follows block order across the hand-over: 1..n by height.
    const ordered = [...received].sort((a, b) => sequenceOf(a) - sequenceOf(b));
    expect(ordered.map(sequenceOf)).toEqual(expected.map((_, i) => i + 1));
    expect(ordered.map(heightOf)).toEqual(expected);
    for (const cb of received) follow.expectSigned(cb);
  }, 90_000);

  it('a replay of the backfilled range: the dry run lists exactly what was first sent and charges its blocks; the replay sends it again, byte for byte, 5 credits each and its blocks', async () => {
    // In the order they were queued (arrival order is the receiver's: callbacks go out concurrently).
    const first = callbacksOf(referenceId)
      .filter((cb) => heightOf(cb) <= start)
      .sort((a, b) => sequenceOf(a) - sequenceOf(b));
    expect(first).toHaveLength(BACK);
    const body = (dryRun: boolean) => ({ data: { item: { fromBlockHeight: from(), toBlockHeight: start, dryRun } } });
    const creditsBefore = (await findCustomerByName(t.app.database.db, c.name))?.credits as bigint;
    const dry = await t.request('POST', `/blockchain-events/subscriptions/${referenceId}/replay`, { key: c.key, body: body(true) });
    expect(dry.status, dry.text).toBe(200);
    // The blocks read, whatever matched: costs.replayPerBlock each.
    expect(dry.headers.get('x-credits-consumed')).toBe(String(BACK * PER_BLOCK));
    expect((await findCustomerByName(t.app.database.db, c.name))?.credits).toBe(creditsBefore - BigInt(BACK * PER_BLOCK));
    const listed = dry.body.data.item.callbacks as { idempotencyKey: string; blockHeight: number; transactionId: string; event: string; body: unknown }[];
    expect(listed.map((l) => l.idempotencyKey)).toEqual(first.map((cb) => cb.json.idempotencyKey));
    for (const [i, l] of listed.entries()) {
      expect(l.body).toEqual(first[i]?.json);
      expect(l.blockHeight).toBe(heightOf(first[i] as Callback));
      expect(l.event).toBe('ADDRESS_TOKENS_TRANSACTION_CONFIRMED');
      expect(l.transactionId).toBe(first[i]?.json.data.item.transactionId);
    }

    const before = receiver.received.length;
    const started = await t.request('POST', `/blockchain-events/subscriptions/${referenceId}/replay`, { key: c.key, body: body(false) });
    expect(started.status, started.text).toBe(202);
    const replayId = started.body.data.item.replayId;
    const job = await until(
      'the replay to finish',
      async () => {
        const r = await t.request('GET', `/blockchain-events/replays/${replayId}`, { key: c.key });
        return r.body.data.item.state === 'done' && r.body.data.item;
      },
      30_000,
    );
    expect(started.headers.get('x-credits-consumed')).toBe(String(BACK * PER_BLOCK));
    expect(job).toMatchObject({ queued: BACK, creditsConsumed: 5 * BACK + BACK * PER_BLOCK, processedHeight: start });
    await until('the replayed callbacks', async () => receiver.received.length >= before + BACK, 30_000);
    await t.app.worker?.settled();
    const again = callbacksOf(referenceId).slice(BACK + 3);
    const firstByKey = new Map(first.map((cb) => [cb.json.idempotencyKey, cb]));
    expect(again).toHaveLength(BACK);
    for (const cb of again) {
      const original = firstByKey.get(cb.json.idempotencyKey);
      expect(original, 'a replayed key was first sent').toBeDefined();
      expect(cb.rawBody.equals(original?.rawBody as Buffer)).toBe(true);
      expect(cb.headers['x-callback-sequence']).toBe(original?.headers['x-callback-sequence']);
    }
  }, 90_000);

  it('fromBlockHeight in the future, too deep, below the lowest block the node serves, or on an event that takes none: 409 invalid_data naming it', async () => {
    const now = await head();
    const cases = [
      { from: now + 10, text: 'in the future' },
      { from: now - MAX_DEPTH, text: `at most ${MAX_DEPTH} blocks back` },
      { from: start - MAX_DEPTH + 1, text: 'serves blocks from height' },
    ];
    for (const k of cases) {
      const r = await create('address-tokens-transactions-confirmed', { address: node.accounts[6]?.address, fromBlockHeight: k.from });
      expect(r.status, r.text).toBe(409);
      expect(r.body.error.code).toBe('invalid_data');
      expect(r.body.error.details[0].attribute).toBe('fromBlockHeight');
      expect(r.body.error.message).toContain(k.text);
    }
    const mined = await create('transaction-mined', { transactionId: `0x${'ab'.repeat(32)}`, fromBlockHeight: start });
    expect(mined.status, mined.text).toBe(409);
    expect(mined.body.error.code).toBe('extra_body_attributes');
    const reverted = await create('block-mined', { fromBlockHeight: now + 1 });
    expect(reverted.status, reverted.text).toBe(409);
  });

  it('a replay range too big or past the processed height, an unknown subscription, a customer without credits: refused, nothing queued', async () => {
    const replay = (id: string, item: Record<string, unknown>, key = c.key) =>
      t.request('POST', `/blockchain-events/subscriptions/${id}/replay`, { key, body: { data: { item } } });
    const big = await replay(referenceId, { fromBlockHeight: 0, toBlockHeight: 10_000 });
    expect(big.status, big.text).toBe(409);
    expect(big.body.error.message).toContain('at most 10000 blocks');
    const dryBig = await replay(referenceId, { fromBlockHeight: 0, toBlockHeight: 1000, dryRun: true });
    expect(dryBig.status, dryBig.text).toBe(409);
    const ahead = await replay(referenceId, { fromBlockHeight: start, toBlockHeight: (await head()) + 100 });
    expect(ahead.status, ahead.text).toBe(409);
    expect(ahead.body.error.message).toContain('has processed');
    const unknown = await replay('7d3c1c8e-1a5e-4d7b-9f00-000000000000', { fromBlockHeight: start, toBlockHeight: start });
    expect(unknown.status, unknown.text).toBe(404);
    expect(unknown.body.error.code).toBe('resource_not_found');

    // Exactly the create's price: nothing left for a replay.
    const poor = await t.customer({ domains: ['localhost'], credits: BigInt(t.config.costs.addressTokensTransactionsConfirmed) });
    const created = await create('address-tokens-transactions-confirmed', { address: holder, allowDuplicates: true }, poor.key);
    expect(created.status, created.text).toBe(201);
    const id = created.body.data.item.referenceId;
    const refused = await replay(id, { fromBlockHeight: from(), toBlockHeight: start }, poor.key);
    expect(refused.status, refused.text).toBe(402);
    expect(refused.body.error.code).toBe('insufficient_credits');
    const log = await t.request('GET', `/blockchain-events/subscriptions/${id}/callbacks`, { key: poor.key });
    expect(log.body.data.items).toEqual([]);
    // A dry run costs its blocks: refused without them, answered with them.
    const dryRefused = await replay(id, { fromBlockHeight: from(), toBlockHeight: start, dryRun: true }, poor.key);
    expect(dryRefused.status, dryRefused.text).toBe(402);
    await t.app.database.db.query('test:add-credits', 'UPDATE customers SET credits = credits + $2 WHERE id = $1', [poor.id, BACK * PER_BLOCK]);
    const dry = await replay(id, { fromBlockHeight: from(), toBlockHeight: start, dryRun: true }, poor.key);
    expect(dry.status, dry.text).toBe(200);
    expect(dry.body.data.item.callbacks).toHaveLength(BACK);
    expect(dry.headers.get('x-credits-available')).toBe('0');
  });
});

describe('one customer does not stall another (issue 28 points 11 and 12)', () => {
  const from = () => start - BACK + 1;
  const replay = (id: string, item: Record<string, unknown>, key: string) =>
    t.request('POST', `/blockchain-events/subscriptions/${id}/replay`, { key, body: { data: { item } } });
  /** A token subscription of `customer` for an address nothing is sent to: its replays read blocks and match nothing. */
  async function quietSubscription(customer: TestCustomer): Promise<string> {
    const r = await create('address-tokens-transactions-confirmed', { address: node.accounts[7]?.address, allowDuplicates: true }, customer.key);
    expect(r.status, r.text).toBe(201);
    return r.body.data.item.referenceId;
  }
  const jobStates = async (customerId: string) =>
    (await t.app.database.db.query<{ state: string }>('test:job-states', 'SELECT state FROM block_jobs WHERE customer_id = $1', [customerId])).map(
      (r) => r.state,
    );

  it('a replay that matches nothing is charged for the blocks it reads (costs.replayPerBlock), in the request that queues it', async () => {
    const customer = await t.customer({ domains: ['localhost'] });
    const id = await quietSubscription(customer);
    const r = await replay(id, { fromBlockHeight: from(), toBlockHeight: start }, customer.key);
    expect(r.status, r.text).toBe(202);
    expect(r.headers.get('x-credits-consumed')).toBe(String(BACK * PER_BLOCK));
    const done = await until(
      'the replay to finish',
      async () => {
        const g = await t.request('GET', `/blockchain-events/replays/${r.body.data.item.replayId}`, { key: customer.key });
        return g.body.data.item.state === 'done' && g.body.data.item;
      },
      30_000,
    );
    expect(done).toMatchObject({ queued: 0, creditsConsumed: BACK * PER_BLOCK });
    // Without the credits for its blocks (and one callback): 402, nothing queued.
    const poor = await t.customer({ domains: ['localhost'], credits: BigInt(t.config.costs.addressTokensTransactionsConfirmed + BACK * PER_BLOCK) });
    const poorId = await quietSubscription(poor);
    const refused = await replay(poorId, { fromBlockHeight: from(), toBlockHeight: start }, poor.key);
    expect(refused.status, refused.text).toBe(402);
    expect(refused.body.error.message).toContain(`${BACK * PER_BLOCK} credits for the blocks read`);
    expect(await jobStates(poor.id)).toEqual([]);
  });

  it('dry runs: a customer has at most dryRunsPerCustomer (2) in progress, one more gets 429; another customer is answered promptly meanwhile', async () => {
    const heavy = await t.customer({ domains: ['localhost'] });
    const id = await quietSubscription(heavy);
    const other = await t.customer();
    const account = async () => {
      const began = performance.now();
      const r = await t.request('GET', '/account', { key: other.key });
      expect(r.status, r.text).toBe(200);
      return performance.now() - began;
    };
    const baseline: number[] = [];
    for (let i = 0; i < 10; i++) baseline.push(await account());
    const creditsBefore = (await findCustomerByName(t.app.database.db, heavy.name))?.credits as bigint;
    const burst = Promise.all(Array.from({ length: 30 }, () => replay(id, { fromBlockHeight: from(), toBlockHeight: start, dryRun: true }, heavy.key)));
    let finished = false;
    void burst.then(() => {
      finished = true;
    });
    const during: number[] = [];
    while (!finished) during.push(await account());
    const answers = await burst;
    const ok = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status === 429);
    expect(ok.length + refused.length, answers.map((a) => a.status).join(' ')).toBe(answers.length);
    expect(ok.length).toBeGreaterThanOrEqual(2);
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) {
      expect(r.body.error.code).toBe('request_limit_reached');
      expect(r.body.error.message).toContain('2 dry-run replays in progress');
      expect(r.headers.get('retry-after')).toBe('1');
    }
    // Only the answered ones are charged.
    expect((await findCustomerByName(t.app.database.db, heavy.name))?.credits).toBe(creditsBefore - BigInt(ok.length * BACK * PER_BLOCK));
    // Loosely: the other customer's slowest answer during the burst stays in the range of its ordinary ones.
    const slowest = Math.max(...during);
    const usual = [...baseline].sort((a, b) => a - b)[5] as number;
    expect(slowest, `slowest ${slowest.toFixed(0)} ms during the burst, median ${usual.toFixed(0)} ms before`).toBeLessThan(Math.max(500, 20 * usual));
  }, 60_000);

  it('replay jobs take turns between customers: a 5-block replay behind 40 long ones of another customer finishes while those are still running', async () => {
    const busy = await t.customer({ domains: ['localhost'] });
    const busyId = await quietSubscription(busy);
    for (let i = 0; i < 40; i++) {
      const r = await replay(busyId, { fromBlockHeight: from(), toBlockHeight: start }, busy.key);
      expect(r.status, r.text).toBe(202);
    }
    const small = await t.customer({ domains: ['localhost'] });
    const smallId = await quietSubscription(small);
    const r = await replay(smallId, { fromBlockHeight: start - 4, toBlockHeight: start }, small.key);
    expect(r.status, r.text).toBe(202);
    await until(
      'the small replay to finish',
      async () => (await t.request('GET', `/blockchain-events/replays/${r.body.data.item.replayId}`, { key: small.key })).body.data.item.state === 'done',
      30_000,
    );
    // First come, first served, it finished after all 40; in turns, after about one turn of theirs.
    const busyStates = await jobStates(busy.id);
    expect(busyStates.filter((s) => s === 'running').length, busyStates.join(' ')).toBeGreaterThanOrEqual(30);
    // Paused: the rest of their jobs wait, out of the next tests' way.
    await t.app.database.db.query('test:pause', 'UPDATE subscriptions SET is_active = false WHERE id = $1', [busyId]);
  }, 60_000);

  it('a customer’s waiting blocks are capped per chain (blockJobs.maxQueuedBlocksPerCustomer): a replay past it gets 429 and queues and charges nothing', async () => {
    const customer = await t.customer({ domains: ['localhost'] });
    const waiting = await quietSubscription(customer);
    const id = await quietSubscription(customer);
    // Jobs of a paused subscription wait (the runner takes none of them): QUEUE_CAP - 40 blocks queued.
    await t.app.database.db.query('test:pause', 'UPDATE subscriptions SET is_active = false WHERE id = $1', [waiting]);
    await t.app.database.db.transaction('test:queued-jobs', (tx) =>
      createBlockJob(tx, {
        id: randomUUID(),
        kind: 'replay',
        customerId: customer.id,
        subscriptionId: waiting,
        chain: { blockchain: 'ethereum', network: 'goerli' },
        fromHeight: 1,
        toHeight: QUEUE_CAP - 40,
      }),
    );
    const creditsBefore = (await findCustomerByName(t.app.database.db, customer.name))?.credits;
    const over = await replay(id, { fromBlockHeight: start - 40, toBlockHeight: start }, customer.key);
    expect(over.status, over.text).toBe(429);
    expect(over.body.error.code).toBe('request_limit_reached');
    expect(over.body.error.message).toContain(`has ${QUEUE_CAP - 40} blocks waiting`);
    expect(over.body.error.message).toContain(`cap of ${QUEUE_CAP}`);
    expect((await findCustomerByName(t.app.database.db, customer.name))?.credits).toBe(creditsBefore);
    expect(await jobStates(customer.id)).toHaveLength(1);
    const fits = await replay(id, { fromBlockHeight: start - 39, toBlockHeight: start }, customer.key);
    expect(fits.status, fits.text).toBe(202);
  });
});
