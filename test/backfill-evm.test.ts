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
import type { Address } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/config.ts';
import { findCustomerByName } from '../src/store/customers.ts';
import { startTestApp, type TestApp, type TestCustomer } from './harness.ts';
import { compileContracts, deployContract, writeContract } from './support/evm-contracts.ts';
import { type EvmNode, startEvmNode } from './support/evm-node.ts';
import { type Callback, followHelpers } from './support/follow-helpers.ts';
import { type Receiver, startReceiver } from './support/receiver.ts';
import { createTestCa, writeCaFile } from './support/tls.ts';
import { until } from './support/wait.ts';

const SECRET = 'whsec-backfill-evm';
const PAST = 60;
const BACK = 50;
const MAX_DEPTH = 55;

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
    blockJobs: { ...loadConfig({}, {}).blockJobs, maxBackfillDepth: MAX_DEPTH, batchBlocks: 7 },
    delivery: { ...loadConfig({}, {}).delivery, allowNetworks: ['127.0.0.1/32', '::1/128'], caFile: writeCaFile(ca.caPem), pollIntervalMs: 20 },
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

  it('a replay of the backfilled range: the dry run lists exactly what was first sent and charges nothing; the replay sends it again, byte for byte, 5 credits each', async () => {
    // In the order they were queued (arrival order is the receiver's: callbacks go out concurrently).
    const first = callbacksOf(referenceId)
      .filter((cb) => heightOf(cb) <= start)
      .sort((a, b) => sequenceOf(a) - sequenceOf(b));
    expect(first).toHaveLength(BACK);
    const body = (dryRun: boolean) => ({ data: { item: { fromBlockHeight: from(), toBlockHeight: start, dryRun } } });
    const creditsBefore = (await findCustomerByName(t.app.database.db, c.name))?.credits as bigint;
    const dry = await t.request('POST', `/blockchain-events/subscriptions/${referenceId}/replay`, { key: c.key, body: body(true) });
    expect(dry.status, dry.text).toBe(200);
    expect((await findCustomerByName(t.app.database.db, c.name))?.credits).toBe(creditsBefore);
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
    expect(job).toMatchObject({ queued: BACK, creditsConsumed: 5 * BACK, processedHeight: start });
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
    // A dry run is free.
    const dry = await replay(id, { fromBlockHeight: from(), toBlockHeight: start, dryRun: true }, poor.key);
    expect(dry.status, dry.text).toBe(200);
    expect(dry.body.data.item.callbacks).toHaveLength(BACK);
  });
});
