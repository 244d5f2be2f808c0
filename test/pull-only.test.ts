/**
 * Pull-only subscriptions (docs/concepts/event-stream.md#pull-only-subscriptions) on a real database and
 * a real EVM node (EDR): created with pullOnly: true and no callbackUrl, on every create endpoint and in
 * bulk, without a verified domain; their events are in the event stream as any other's, stored already
 * finished so that delivery never sends them and the queue never counts them; a reorganisation retracts
 * them and the chain coming back reinstates them; the callback tools answer 409 pull_only_subscription.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pullOnlyConflict } from '../src/services/subscriptions.ts';
import { recordBlockCallbacks } from '../src/store/chain-state.ts';
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
  // No callback domain at all: a pull-only subscription needs none.
  c = await t.customer({ domains: [] });
}, 60_000);

afterAll(async () => {
  await t?.close();
  await node?.close();
});

const follow = followHelpers(() => ({ t, customer: c, receiver: undefined as never, blockchain: 'ethereum', network: 'goerli' }), 'unused');
const ADDRESS = '0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed';

function create(customer: TestCustomer, path: string, item: Record<string, unknown>) {
  return t.request('POST', `/blockchain-events/${path}`, { key: customer.key, body: { data: { item } } });
}

async function readAll(customer: TestCustomer, query: Record<string, string> = {}) {
  await streamSettled(t.app.database.db, customer.id);
  const items: Record<string, unknown>[] = [];
  let cursor = query.cursor;
  for (;;) {
    const qs = new URLSearchParams({ ...query, ...(cursor !== undefined && { cursor }) }).toString();
    const res = await t.request('GET', `/blockchain-events/events?${qs}`, { key: customer.key });
    expect(res.status, res.text).toBe(200);
    items.push(...res.body.data.items);
    cursor = res.body.data.nextCursor;
    if (!res.body.data.hasMore) return { items, cursor: cursor as string };
  }
}

async function callbackRows(subscriptionId: string) {
  return await t.app.database.db.query<{ id: string; status: string; outcome: string | null; callback_url: string | null; destination: string | null }>(
    'test:pull-only-rows',
    'SELECT id, status, outcome, callback_url, destination FROM callbacks WHERE subscription_id = $1 ORDER BY sequence',
    [subscriptionId],
  );
}

describe('pull-only subscriptions', () => {
  it('are created with pullOnly: true on every create endpoint, also those whose contract requires a secret, with no domain; the answer says pullOnly and an empty callbackUrl', async () => {
    const cases: [string, Record<string, unknown>][] = [
      ['ethereum/goerli/subscriptions/block-mined', {}],
      ['ethereum/goerli/subscriptions/transaction-mined', { transactionId: `0x${'a'.repeat(64)}` }],
      ['ethereum/goerli/subscriptions/reverted-block', {}],
      ['ethereum/goerli/subscriptions/address-internal-transactions-confirmed', { address: ADDRESS, allowDuplicates: false }],
      ['ethereum/goerli/subscriptions/address-coins-transactions-confirmed', { address: ADDRESS }],
      ['ethereum/goerli/subscriptions/tokens-transfers-for-specific-amount', { contractAddress: ADDRESS, amountHigherThan: 1 }],
    ];
    for (const [path, item] of cases) {
      const res = await create(c, path, { ...item, pullOnly: true });
      expect(res.status, `${path}: ${res.text}`).toBeLessThan(300);
      expect(res.body.data.item, path).toMatchObject({ pullOnly: true, callbackUrl: '' });
      const got = await t.request('GET', `/blockchain-events/subscriptions/${res.body.data.item.referenceId}`, { key: c.key });
      expect(got.body.data.item, path).toMatchObject({ pullOnly: true, callbackUrl: '', isActive: true });
    }
    // A subscription with a URL says nothing new.
    const d = await t.customer();
    const plain = await create(d, 'ethereum/goerli/subscriptions/block-mined', { callbackUrl: SAMPLE.callbackUrl });
    expect(plain.body.data.item.callbackUrl).toBe(SAMPLE.callbackUrl);
    expect(plain.body.data.item).not.toHaveProperty('pullOnly');

    // Bulk: the same rule per item.
    const bulk = await t.request('POST', '/blockchain-events/ethereum/goerli/subscriptions/transaction-mined/bulk', {
      key: c.key,
      body: {
        data: {
          items: [
            { transactionId: `0x${'b'.repeat(64)}`, pullOnly: true },
            { transactionId: `0x${'c'.repeat(64)}`, pullOnly: true, callbackUrl: SAMPLE.callbackUrl },
            { transactionId: `0x${'d'.repeat(64)}` },
          ],
        },
      },
    });
    expect(bulk.status, bulk.text).toBe(200);
    expect(bulk.body.data.items[0]).toMatchObject({ status: 'created', item: { pullOnly: true, callbackUrl: '' } });
    expect(bulk.body.data.items[1]).toMatchObject({ status: 'failed', error: { code: 'invalid_data', details: [{ attribute: 'callbackUrl' }] } });
    expect(bulk.body.data.items[2]).toMatchObject({
      status: 'failed',
      error: { code: 'missing_required_attributes', details: [{ attribute: 'callbackUrl' }] },
    });
  });

  it('refuses a callbackUrl or a secret beside pullOnly: true, and still requires callbackUrl (and the secret where the contract does) without it; nothing charged', async () => {
    const d = await t.customer();
    const before = await t.request('GET', '/account', { key: d.key });
    const both = await create(d, 'ethereum/goerli/subscriptions/block-mined', { pullOnly: true, callbackUrl: SAMPLE.callbackUrl, callbackSecretKey: 's' });
    expect(both.status, both.text).toBe(409);
    expect(both.body.error.code).toBe('invalid_data');
    expect(both.body.error.details).toEqual([
      { attribute: 'callbackUrl', message: pullOnlyConflict('callbackUrl') },
      { attribute: 'callbackSecretKey', message: pullOnlyConflict('callbackSecretKey') },
    ]);
    const coins = await create(d, 'ethereum/goerli/subscriptions/address-coins-transactions-confirmed', {
      address: ADDRESS,
      pullOnly: true,
      callbackURL: SAMPLE.callbackUrl,
    });
    expect(coins.status).toBe(409);
    expect(coins.body.error.details).toEqual([{ attribute: 'callbackURL', message: pullOnlyConflict('callbackURL') }]);
    const missing = await create(d, 'ethereum/goerli/subscriptions/reverted-block', { pullOnly: false });
    expect(missing.status).toBe(409);
    expect(missing.body.error.code).toBe('missing_required_attributes');
    expect(missing.body.error.details.map((x: { attribute: string }) => x.attribute).sort()).toEqual(['callbackSecretKey', 'callbackUrl']);
    const notBoolean = await create(d, 'ethereum/goerli/subscriptions/block-mined', { pullOnly: 'true' });
    expect(notBoolean.status).toBe(409);
    expect(notBoolean.body.error.details.map((x: { attribute: string }) => x.attribute)).toContain('pullOnly');
    const after = await t.request('GET', '/account', { key: d.key });
    expect(after.body.data.item.credits).toBe(before.body.data.item.credits);
  });

  it('gives its events in the stream like any other, stored finished (never pending, never attempted); a reorganisation retracts them, the chain coming back reinstates them', async () => {
    // Twins of the first test's (same event, no target, no URL): allowed as such.
    const created = await create(c, 'ethereum/goerli/subscriptions/block-mined', { pullOnly: true, allowDuplicates: true });
    expect(created.status, created.text).toBeLessThan(300);
    const sub = created.body.data.item.referenceId as string;
    await follow.indexed();
    const { cursor: start } = await readAll(c, { referenceId: sub });
    const base = Number(await publicClient(node).getBlockNumber());
    const snapshot = await node.snapshot();
    const top = await node.mine(2);
    await follow.processed(top);
    const first = await until('the two blocks in the stream', async () => {
      const r = await readAll(c, { referenceId: sub, cursor: start });
      return r.items.length === 2 && r;
    });
    expect(first.items.map((i) => (i.data as { item: { height: number } }).item.height)).toEqual([base + 1, base + 2]);
    expect(first.items.map((i) => i.sequence)).toEqual([1, 2]);
    const rows = await callbackRows(sub);
    expect(rows.map((r) => [r.status, r.outcome, r.callback_url, r.destination])).toEqual([
      ['cancelled', 'pull_only', null, null],
      ['cancelled', 'pull_only', null, null],
    ]);
    // Delivery had time to claim anything due: no attempt, and the operator's queue counts nothing of them.
    await new Promise((r) => setTimeout(r, 300));
    const [attempts] = await t.app.database.db.query<{ n: number }>(
      'test:attempts',
      'SELECT count(*)::int AS n FROM callback_attempts a JOIN callbacks c ON c.id = a.callback_id WHERE c.subscription_id = $1',
      [sub],
    );
    expect(attempts?.n).toBe(0);
    const [pending] = await t.app.database.db.query<{ n: number }>(
      'test:pending',
      "SELECT count(*)::int AS n FROM callbacks WHERE customer_id = $1 AND status = 'pending'",
      [c.id],
    );
    expect(pending?.n).toBe(0);
    // The callback log shows them as such.
    const log = await t.request('GET', `/blockchain-events/subscriptions/${sub}/callbacks`, { key: c.key });
    expect(log.status, log.text).toBe(200);

    // A longer branch from the snapshot: the two events are retracted, three new ones follow.
    await node.revert(snapshot);
    const latest = await publicClient(node).getBlock();
    const newTop = await node.mine(3, { timestamp: Number(latest.timestamp) + 1000 });
    await follow.processed(newTop);
    const second = await until('the retractions and the new branch', async () => {
      const r = await readAll(c, { referenceId: sub, cursor: first.cursor });
      return r.items.length === 5 && r;
    });
    expect(second.items.slice(0, 2)).toEqual(first.items.map((e) => expect.objectContaining({ retracted: true, idempotencyKey: e.idempotencyKey })));
    const afterReorg = await callbackRows(sub);
    expect(afterReorg.map((r) => [r.status, r.outcome])).toEqual([
      ['cancelled', 'reorganised'],
      ['cancelled', 'reorganised'],
      ['cancelled', 'pull_only'],
      ['cancelled', 'pull_only'],
      ['cancelled', 'pull_only'],
    ]);

    // The chain coming back to the first branch's block records its callback again (the follower's own
    // store call): the event is reinstated in the stream and its row is pull-only again, not pending.
    const firstKey = first.items[0]?.idempotencyKey as string;
    await t.app.database.db.transaction('test:revive', (tx) =>
      recordBlockCallbacks(tx, { blockchain: 'ethereum', network: 'goerli' }, [{ blockHeight: base + 1, subscriptionId: sub, idempotencyKey: firstKey }]),
    );
    const third = await until('the reinstatement', async () => {
      const r = await readAll(c, { referenceId: sub, cursor: second.cursor });
      return r.items.length === 1 && r;
    });
    expect(third.items[0]).toMatchObject({ reinstated: true, idempotencyKey: firstKey });
    const revived = await callbackRows(sub);
    expect(revived.map((r) => [r.status, r.outcome])[0]).toEqual(['cancelled', 'pull_only']);
  });

  it('backfills into the stream: a pull-only create with fromBlockHeight gives the past blocks as events, none pending', async () => {
    const top = await node.mine(1);
    await follow.processed(top);
    const created = await create(c, 'ethereum/goerli/subscriptions/block-mined', { pullOnly: true, allowDuplicates: true, fromBlockHeight: top - 2 });
    expect(created.status, created.text).toBeLessThan(300);
    const sub = created.body.data.item.referenceId as string;
    const { items } = await until('the backfilled blocks', async () => {
      const r = await readAll(c, { referenceId: sub });
      return r.items.length >= 3 && r;
    });
    expect(items.slice(0, 3).map((i) => (i.data as { item: { height: number } }).item.height)).toEqual([top - 2, top - 1, top]);
    expect((await callbackRows(sub)).every((r) => r.status === 'cancelled' && r.outcome === 'pull_only')).toBe(true);
  });

  it('answers 409 pull_only_subscription to a test callback, a resend, a recovery, activate with recoverSince, a replay and a secret rotation, charging nothing', async () => {
    // Twins of the first test's (same event, no target, no URL): allowed as such.
    const created = await create(c, 'ethereum/goerli/subscriptions/block-mined', { pullOnly: true, allowDuplicates: true });
    const sub = created.body.data.item.referenceId as string;
    const top = await node.mine(1);
    await follow.processed(top);
    const row = await until('a callback row', async () => (await callbackRows(sub))[0]);
    const now = Math.floor(Date.now() / 1000);
    const calls: [string, string, Record<string, unknown> | undefined][] = [
      ['POST', `/blockchain-events/subscriptions/${sub}/test-callback`, undefined],
      ['POST', `/blockchain-events/callbacks/${row.id}/resend`, undefined],
      ['POST', `/blockchain-events/subscriptions/${sub}/recover`, { data: { item: { since: now - 3600 } } }],
      ['POST', `/blockchain-events/subscriptions/${sub}/activate?recoverSince=${now - 3600}`, undefined],
      ['POST', `/blockchain-events/subscriptions/${sub}/replay`, { data: { item: { fromBlockHeight: 1, toBlockHeight: 1 } } }],
      ['POST', `/blockchain-events/subscriptions/${sub}/replay`, { data: { item: { fromBlockHeight: 1, toBlockHeight: 1, dryRun: true } } }],
      ['POST', `/blockchain-events/subscriptions/${sub}/rotate-secret`, { data: { item: { callbackSecretKey: 'new' } } }],
    ];
    for (const [method, path, body] of calls) {
      const res = await t.request(method, path, { key: c.key, ...(body && { body }) });
      expect(res.status, `${path}: ${res.text}`).toBe(409);
      expect(res.body.error.code, path).toBe('pull_only_subscription');
      expect(res.body.error.message, path).toContain('GET /blockchain-events/events');
      expect(res.body.error.details, path).toEqual([{ attribute: 'referenceId', message: res.body.error.message }]);
      expect(res.headers.get('x-credits-consumed') ?? '0', path).toBe('0');
    }
    expect((await callbackRows(sub)).every((r) => r.status === 'cancelled' && r.outcome === 'pull_only')).toBe(true);
  });
});
