/**
 * The event stream (docs/concepts/event-stream.md) on a real database and a real EVM node (EDR): order,
 * filters, long-poll, the 410 of a cursor older than retention, a cursor standing on a block that a
 * reorganisation then drops, a restart between two reads, and tenant isolation.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callbackBody } from '../src/domain/callbacks.ts';
import { callbackOfEvent } from '../src/domain/events.ts';
import { enqueueCallbacks } from '../src/store/callbacks.ts';
import { pruneFinishedBatch } from '../src/store/retention.ts';
import { SAMPLE, startTestApp, type TestApp, type TestCustomer } from './harness.ts';
import { publicClient } from './support/evm-contracts.ts';
import { type EvmNode, startEvmNode } from './support/evm-node.ts';
import { followHelpers } from './support/follow-helpers.ts';
import { streamSettled } from './support/stream-settled.ts';
import { until } from './support/wait.ts';

let node: EvmNode;
let t: TestApp;
let c: TestCustomer;

beforeAll(async () => {
  node = await startEvmNode({ automine: false });
  t = await startTestApp({
    chains: [{ blockchain: 'ethereum', network: 'goerli', rpcUrl: node.url, confirmations: 1, pollIntervalMs: 30, concurrency: 4, requestTimeoutMs: 5000 }],
  });
  c = await t.customer();
}, 60_000);

afterAll(async () => {
  await t?.close();
  await node?.close();
});

const follow = followHelpers(() => ({ t, customer: c, receiver: undefined as never, blockchain: 'ethereum', network: 'goerli' }), 'unused');

async function subscribe(customer: TestCustomer, path: string, item: Record<string, unknown>): Promise<string> {
  const res = await t.request('POST', `/blockchain-events/${path}`, {
    key: customer.key,
    body: { data: { item: { callbackUrl: SAMPLE.callbackUrl, ...item } } },
  });
  expect(res.status, res.text).toBeLessThan(300);
  return res.body.data.item.referenceId as string;
}

/** Enqueues BLOCK_MINED callbacks of `subscriptionId` for `heights`, through the producers' own store call, one transaction. */
async function enqueueBlocks(customer: TestCustomer, subscriptionId: string, chain: [string, string], heights: number[]): Promise<void> {
  const callbacks = heights.map((height) =>
    callbackOfEvent({
      customerId: customer.id,
      subscriptionId,
      eventType: 'BLOCK_MINED',
      idempotencyKey: `${subscriptionId}-${height}`,
      body: callbackBody({ id: subscriptionId, eventType: 'BLOCK_MINED', apiVersion: '2021-03-20' }, `${subscriptionId}-${height}`, {
        blockchain: chain[0],
        network: chain[1],
        height,
        hash: `0x${height.toString(16).padStart(64, '0')}`,
        timestamp: 1_700_000_000 + height,
      }),
      callbackUrl: SAMPLE.callbackUrl,
    }),
  );
  await t.app.database.db.transaction('test:enqueue', (tx) => enqueueCallbacks(tx, callbacks));
  await settled(customer);
}

/** Until the customer's entries are readable (test/support/stream-settled.ts). */
async function settled(customer: TestCustomer): Promise<void> {
  await streamSettled(t.app.database.db, customer.id);
}

async function read(customer: TestCustomer, query: Record<string, string | number> = {}) {
  const qs = new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)])).toString();
  return t.request('GET', `/blockchain-events/events${qs ? `?${qs}` : ''}`, { key: customer.key });
}

/** Every entry from `cursor` on, page by page. */
async function readAll(customer: TestCustomer, query: Record<string, string | number> = {}) {
  const items: Record<string, unknown>[] = [];
  let cursor = query.cursor;
  for (;;) {
    const res = await read(customer, { ...query, ...(cursor !== undefined && { cursor }) });
    expect(res.status, res.text).toBe(200);
    items.push(...res.body.data.items);
    cursor = res.body.data.nextCursor;
    if (!res.body.data.hasMore) return { items, cursor: cursor as string };
  }
}

describe('the event stream', () => {
  it("gives the customer's events in order, page by page, each the callback body plus sequence, createdAt and blockHash, filtered on demand, and no other customer's", async () => {
    const a = await t.customer();
    const b = await t.customer();
    const btc = await subscribe(a, 'bitcoin/testnet/subscriptions/block-mined', {});
    const eth = await subscribe(a, 'ethereum/sepolia/subscriptions/block-mined', {});
    const foreign = await subscribe(b, 'bitcoin/testnet/subscriptions/block-mined', {});
    await enqueueBlocks(a, btc, ['bitcoin', 'testnet'], [1, 2, 3]);
    await enqueueBlocks(a, eth, ['ethereum', 'sepolia'], [10, 11]);
    await enqueueBlocks(b, foreign, ['bitcoin', 'testnet'], [7]);
    await enqueueBlocks(a, btc, ['bitcoin', 'testnet'], [4]);

    const first = await read(a, { limit: 2 });
    expect(first.status, first.text).toBe(200);
    expect(first.body.data.items).toHaveLength(2);
    expect(first.body.data.hasMore).toBe(true);
    expect(first.headers.get('x-credits-consumed')).toBe(String(2 * t.config.costs.streamPerEvent));
    const { items } = await readAll(a, { limit: 2 });
    expect(items.map((i) => [i.referenceId, (i.data as { item: { height: number } }).item.height, i.sequence])).toEqual([
      [btc, 1, 1],
      [btc, 2, 2],
      [btc, 3, 3],
      [eth, 10, 1],
      [eth, 11, 2],
      [btc, 4, 4],
    ]);
    const stored = await t.app.database.db.query<{ body: string }>('test:body', 'SELECT body FROM callbacks WHERE subscription_id = $1 AND sequence = 1', [
      btc,
    ]);
    const { sequence, createdAt, blockHash, ...body } = items[0] as Record<string, unknown>;
    expect(JSON.stringify(body)).toBe(stored[0]?.body);
    expect(blockHash).toBe(`0x${'1'.padStart(64, '0')}`);
    expect(Math.abs((createdAt as number) - Date.now() / 1000)).toBeLessThan(60);

    // Filters: by subscription, by chain, by type.
    expect((await readAll(a, { referenceId: eth })).items.map((i) => i.referenceId)).toEqual([eth, eth]);
    expect((await readAll(a, { blockchain: 'bitcoin', network: 'testnet' })).items).toHaveLength(4);
    expect((await readAll(a, { eventType: 'TRANSACTION_MINED' })).items).toEqual([]);
    // Another customer sees only its own, even with the first one's subscription id or cursor.
    expect((await readAll(b)).items.map((i) => i.referenceId)).toEqual([foreign]);
    expect((await readAll(b, { referenceId: btc })).items).toEqual([]);
    expect((await readAll(b, { cursor: first.body.data.nextCursor })).items.map((i) => i.referenceId)).toEqual([foreign]);
    // Bad input: the contract's envelope, never a 500.
    const bad = await read(a, { cursor: 'not-a-cursor' });
    expect(bad.status).toBe(409);
    expect(bad.body.error).toMatchObject({ code: 'invalid_data', details: [{ attribute: 'cursor' }] });
    expect((await read(a, { limit: 1001 })).status).toBe(400);
    expect((await read(a, { waitSeconds: 31 })).status).toBe(409);
  });

  it('long-polls: an answer as soon as an event is committed, and an empty one when waitSeconds runs out', async () => {
    const a = await t.customer();
    const sub = await subscribe(a, 'bitcoin/testnet/subscriptions/block-mined', {});
    const { cursor } = await readAll(a);
    const started = Date.now();
    const empty = await read(a, { cursor, waitSeconds: 1 });
    expect(empty.body.data).toMatchObject({ items: [], nextCursor: cursor, hasMore: false });
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);

    const waiting = read(a, { cursor, waitSeconds: 20 });
    await new Promise((r) => setTimeout(r, 300));
    const committed = Date.now();
    await enqueueBlocks(a, sub, ['bitcoin', 'testnet'], [42]);
    const answer = await waiting;
    expect(Date.now() - committed).toBeLessThan(1000);
    expect(answer.body.data.items.map((i: { data: { item: { height: number } } }) => i.data.item.height)).toEqual([42]);
  });

  it("charges a page's entries in the statement that reads them: an empty read is free, a balance short of the page answers 402 with nothing read and nothing taken, the usage is recorded", async () => {
    const price = BigInt(t.config.costs.streamPerEvent);
    expect(price).toBeGreaterThan(0n);
    const a = await t.customer();
    const sub = await subscribe(a, 'bitcoin/testnet/subscriptions/block-mined', {});
    await t.app.database.db.query('test:set-balance', 'UPDATE customers SET credits = $2 WHERE id = $1', [a.id, String(3n * price)]);
    const balance = async () =>
      BigInt((await t.app.database.db.query<{ credits: string }>('test:balance', 'SELECT credits FROM customers WHERE id = $1', [a.id]))[0]?.credits ?? -1);
    const afterCreate = await balance();

    const empty = await read(a);
    expect(empty.status, empty.text).toBe(200);
    expect(empty.body.data.items).toEqual([]);
    expect(empty.headers.get('x-credits-consumed')).toBe('0');
    expect(await balance()).toBe(afterCreate);

    await enqueueBlocks(a, sub, ['bitcoin', 'testnet'], [1, 2, 3, 4, 5]);
    const tooMany = await read(a, { limit: 5 });
    expect(tooMany.status, tooMany.text).toBe(402);
    expect(tooMany.body.error.code).toBe('insufficient_credits');
    expect(tooMany.text).not.toContain('BLOCK_MINED');
    expect(await balance()).toBe(afterCreate);

    const affordable = Number(afterCreate / price);
    const ok = await read(a, { limit: affordable });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.data.items).toHaveLength(affordable);
    expect(ok.headers.get('x-credits-consumed')).toBe(String(BigInt(affordable) * price));
    expect(ok.headers.get('x-credits-available')).toBe(String(afterCreate - BigInt(affordable) * price));
    expect(await balance()).toBe(afterCreate - BigInt(affordable) * price);
    const [usage] = await t.app.database.db.query<{ requests: string; credits: string }>(
      'test:usage',
      "SELECT requests, credits FROM credit_usage WHERE customer_id = $1 AND endpoint = 'events'",
      [a.id],
    );
    expect(usage).toEqual({ requests: '1', credits: String(BigInt(affordable) * price) });
  });

  it('answers 410 with the oldest complete cursor once retention deleted events after a cursor; from that cursor on, nothing is missing', async () => {
    const a = await t.customer();
    const sub = await subscribe(a, 'bitcoin/testnet/subscriptions/block-mined', {});
    const { cursor: start } = await readAll(a);
    await enqueueBlocks(a, sub, ['bitcoin', 'testnet'], [1, 2]);
    await enqueueBlocks(a, sub, ['bitcoin', 'testnet'], [3]);
    // The first two delivered long ago, and pruned; the third delivered now, kept.
    await t.app.database.db.query(
      'test:delivered',
      `UPDATE callbacks SET status = 'delivered', finished_at = now() - CASE WHEN sequence <= 2 THEN interval '100 days' ELSE interval '0' END
       WHERE subscription_id = $1`,
      [sub],
    );
    const pruned = await pruneFinishedBatch(t.app.database.db, { status: 'delivered', before: new Date(Date.now() - 86_400_000), limit: 100 });
    expect(pruned.callbacks).toBeGreaterThanOrEqual(2);

    await settled(a);
    const gone = await read(a, { cursor: start });
    expect(gone.status, gone.text).toBe(410);
    expect(gone.body.error.code).toBe('cursor_expired');
    const oldest = gone.headers.get('x-oldest-cursor') as string;
    expect(gone.body.error.details).toEqual([{ attribute: 'cursor', message: oldest }]);
    expect((await readAll(a, { cursor: oldest })).items.map((i) => (i.data as { item: { height: number } }).item.height)).toEqual([3]);
    // Without a cursor the stream starts there too.
    expect((await readAll(a)).items.map((i) => (i.data as { item: { height: number } }).item.height)).toEqual([3]);
  });

  it('a cursor on a block a reorganisation then drops resumes with the retractions of its events first, then the replacement events with new keys; across a restart', async () => {
    const sub = await subscribe(c, 'ethereum/goerli/subscriptions/block-mined', {});
    await follow.indexed();
    const base = Number(await publicClient(node).getBlockNumber());
    const snapshot = await node.snapshot();
    const top = await node.mine(2);
    await follow.processed(top);
    const before = await until('the two blocks in the stream', async () => {
      const r = await readAll(c, { referenceId: sub });
      return r.items.length === 2 && r;
    });
    const orphaned = await Promise.all([base + 1, base + 2].map(async (h) => (await publicClient(node).getBlock({ blockNumber: BigInt(h) })).hash));
    expect(before.items.map((i) => i.blockHash)).toEqual(orphaned);

    // Another branch from the snapshot, one block longer (other timestamps, so other hashes).
    await node.revert(snapshot);
    const latest = await publicClient(node).getBlock();
    const newTop = await node.mine(3, { timestamp: Number(latest.timestamp) + 1000 });
    await follow.processed(newTop);
    await t.restart();
    const after = await until('the retractions and the new branch', async () => {
      const r = await readAll(c, { cursor: before.cursor, referenceId: sub });
      return r.items.length === 5 && r;
    });
    const retractions = after.items.slice(0, 2);
    expect(retractions).toEqual(
      before.items.map((e, i) =>
        expect.objectContaining({ retracted: true, idempotencyKey: e.idempotencyKey, referenceId: sub, blockHash: orphaned[i], blockHeight: base + 1 + i }),
      ),
    );
    const replacements = after.items.slice(2);
    expect(replacements.map((e) => (e.data as { item: { height: number } }).item.height)).toEqual([base + 1, base + 2, base + 3]);
    expect(replacements.every((e) => !before.items.some((b) => b.idempotencyKey === e.idempotencyKey))).toBe(true);
    expect(replacements.map((e) => e.sequence)).toEqual([3, 4, 5]);
  });
});
