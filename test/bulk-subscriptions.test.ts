/**
 * Bulk subscription creation (issue 16, point 3) and the per-customer counters (point 5): each item
 * answered on its own (created, duplicate, its error), charged per created item, the credits and the
 * plan cap stopping creation at an exact prefix, the request limits, the counters kept through
 * create, delete, deactivation and activation, a bulk-created subscription matched by the follower,
 * and `herald subscriptions import`.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { byteSize } from '../src/api/envelope.ts';
import { BULK_BODY_LIMIT } from '../src/api/routes/bulk-subscriptions.ts';
import { SAMPLE, startTestApp, type TestApp } from './harness.ts';
import { startFakeUtxoDriver } from './support/fake-utxo-node.ts';
import { until } from './support/wait.ts';

const run = promisify(execFile);
const CHAIN = '/blockchain-events/ethereum/goerli/subscriptions';
const BULK = `${CHAIN}/transaction-mined/bulk`;
const HOOK = 'https://hooks.example.com/cb';

let t: TestApp;
let btc: Awaited<ReturnType<typeof startFakeUtxoDriver>>;

const txid = (n: number) => `0x${n.toString(16).padStart(64, '0')}`;

beforeAll(async () => {
  btc = await startFakeUtxoDriver('bitcoin');
  t = await startTestApp({
    chains: [
      {
        blockchain: btc.blockchain,
        network: btc.network,
        rpcUrl: btc.rpcUrl,
        ...btc.chainConfig,
        confirmations: 1,
        pollIntervalMs: 20,
        concurrency: 4,
        requestTimeoutMs: 5000,
      },
    ],
  });
});

afterAll(async () => {
  await t?.close();
  await btc?.close();
});

async function counters(customerId: string) {
  const [row] = await t.app.database.db.query<{ total: string; active: string }>(
    'test:counters',
    'SELECT coalesce(sum(total), 0) AS total, coalesce(sum(active), 0) AS active FROM subscription_counts WHERE customer_id = $1',
    [customerId],
  );
  const [real] = await t.app.database.db.query<{ total: string; active: string }>(
    'test:counted',
    'SELECT count(*) AS total, count(*) FILTER (WHERE is_active) AS active FROM subscriptions WHERE customer_id = $1',
    [customerId],
  );
  expect({ total: Number(row?.total), active: Number(row?.active) }).toEqual({ total: Number(real?.total), active: Number(real?.active) });
  return { total: Number(row?.total), active: Number(row?.active) };
}

describe('bulk create', () => {
  it('answers each item on its own: created, duplicate (existing or earlier in the request), or its error', async () => {
    const c = await t.customer();
    const existing = await t.request('POST', `${CHAIN}/transaction-mined`, {
      key: c.key,
      body: { data: { item: { transactionId: txid(1), callbackUrl: HOOK } } },
    });
    expect(existing.status).toBe(200);
    const before = await t.request('GET', `${CHAIN}?limit=1&offset=0`, { key: c.key });
    const items = [
      { transactionId: txid(1), callbackUrl: HOOK }, // duplicate of the existing one
      { transactionId: txid(2), callbackUrl: HOOK, callbackSecretKey: 's' },
      { transactionId: 'not-a-txid', callbackUrl: HOOK },
      { transactionId: txid(3), callbackUrl: HOOK, extra: 1 },
      { transactionId: txid(4), callbackUrl: 'https://unverified.example.org/x' },
      { transactionId: txid(2), callbackUrl: HOOK }, // duplicate of item 1
      { transactionId: txid(2), callbackUrl: HOOK, allowDuplicates: true },
      { callbackUrl: HOOK },
      'not an object',
    ];
    const res = await t.request('POST', BULK, { key: c.key, body: { context: 'bulk-1', data: { items } } });
    expect(res.status, res.text).toBe(200);
    expect(res.body.context).toBe('bulk-1');
    const answers = res.body.data.items;
    expect(answers).toHaveLength(items.length);
    expect(answers[0]).toEqual({ status: 'duplicate', referenceId: existing.body.data.item.referenceId });
    expect(answers[1].status).toBe('created');
    expect(answers[1].item).toMatchObject({ transactionId: txid(2), callbackSecretKey: 's', isActive: true, eventType: 'TRANSACTION_MINED' });
    expect(answers[2]).toMatchObject({ status: 'failed', error: { code: 'invalid_data', details: [{ attribute: 'transactionId' }] } });
    expect(answers[3]).toMatchObject({ status: 'failed', error: { code: 'extra_body_attributes', details: [{ attribute: 'extra' }] } });
    expect(answers[4]).toMatchObject({ status: 'failed', error: { code: 'callback_url_not_verified' } });
    expect(answers[5]).toEqual({ status: 'duplicate', referenceId: answers[1].item.referenceId });
    expect(answers[6].status).toBe('created');
    expect(answers[7]).toMatchObject({ status: 'failed', error: { code: 'missing_required_attributes', details: [{ attribute: 'transactionId' }] } });
    expect(answers[8]).toMatchObject({ status: 'failed', error: { code: 'invalid_request_body_structure' } });
    expect(res.body.data).toMatchObject({ created: 2, duplicates: 2, failed: 5 });
    // Charged per created item only.
    expect(res.headers.get('x-credits-consumed')).toBe(String(2 * t.config.costs.transactionMined));
    // The items exist as single creates make them, and the list total counts them.
    const got = await t.request('GET', `/blockchain-events/subscriptions/${answers[1].item.referenceId}`, { key: c.key });
    expect(got.body.data.item.transactionId).toBe(txid(2));
    const after = await t.request('GET', `${CHAIN}?limit=50&offset=0`, { key: c.key });
    expect(after.body.data.total).toBe(before.body.data.total + 2);
    expect(after.body.data.items.map((i: { referenceId: string }) => i.referenceId)).toEqual([
      existing.body.data.item.referenceId,
      answers[1].item.referenceId,
      answers[6].item.referenceId,
    ]);
    await counters(c.id);
  });

  it('an active twin made with allowDuplicates (subscriptions_duplicates, migration 030) refuses a create without it, single or bulk', async () => {
    const c = await t.customer();
    const create = (allowDuplicates?: boolean) =>
      t.request('POST', `${CHAIN}/transaction-mined`, {
        key: c.key,
        body: { data: { item: { transactionId: txid(77), callbackUrl: HOOK, allowDuplicates } } },
      });
    const first = await create(true);
    const second = await create(true);
    expect([first.status, second.status]).toEqual([200, 200]);
    // Only rows with allowDuplicates are active for this identity: the single create finds them.
    expect((await create()).body.error?.code).toBe('already_exists');
    // The bulk read names the oldest of them.
    const bulk = await t.request('POST', BULK, { key: c.key, body: { data: { items: [{ transactionId: txid(77), callbackUrl: HOOK }] } } });
    expect(bulk.body.data.items[0]).toEqual({ status: 'duplicate', referenceId: first.body.data.item.referenceId });
    // Once they are gone, the identity is free again.
    for (const s of [first, second]) {
      const deleted = await t.request('DELETE', `${CHAIN}/${s.body.data.item.referenceId}`, { key: c.key });
      expect(deleted.status).toBe(200);
    }
    expect((await create()).status).toBe(200);
    await counters(c.id);
  });

  it('creates a prefix of the new items that the credits pay for; the rest answer insufficient_credits', async () => {
    const cost = BigInt(t.config.costs.transactionMined);
    const c = await t.customer({ credits: cost * 3n + 1n });
    const items = Array.from({ length: 6 }, (_, i) => ({ transactionId: txid(100 + i), callbackUrl: HOOK }));
    items.splice(1, 0, { transactionId: txid(100), callbackUrl: HOOK }); // a duplicate costs nothing
    const res = await t.request('POST', BULK, { key: c.key, body: { data: { items } } });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.items.map((a: { status: string }) => a.status)).toEqual(['created', 'duplicate', 'created', 'created', 'failed', 'failed', 'failed']);
    expect(res.body.data.items[4].error.code).toBe('insufficient_credits');
    expect(res.headers.get('x-credits-consumed')).toBe(String(cost * 3n));
    expect(res.headers.get('x-credits-available')).toBe('1');
    expect((await counters(c.id)).active).toBe(3);
    // Sent again with credits added: the created ones are duplicates (not charged again), the rest created.
    await t.app.database.db.query('test:add-credits', 'UPDATE customers SET credits = credits + $2 WHERE id = $1', [c.id, String(cost * 10n)]);
    const again = await t.request('POST', BULK, { key: c.key, body: { data: { items } } });
    expect(again.body.data).toMatchObject({ created: 3, duplicates: 4, failed: 0 });
    expect(again.headers.get('x-credits-consumed')).toBe(String(cost * 3n));
  });

  it("stops at the plan's cap; counters follow delete, deactivation and activation", async () => {
    const c = await t.customer({ plan: { maxActiveSubscriptions: 4 } });
    const one = await t.request('POST', `${CHAIN}/transaction-mined`, {
      key: c.key,
      body: { data: { item: { transactionId: txid(200), callbackUrl: HOOK } } },
    });
    expect(one.status).toBe(200);
    const items = Array.from({ length: 5 }, (_, i) => ({ transactionId: txid(201 + i), callbackUrl: HOOK }));
    const res = await t.request('POST', BULK, { key: c.key, body: { data: { items } } });
    expect(res.body.data.items.map((a: { status: string }) => a.status)).toEqual(['created', 'created', 'created', 'failed', 'failed']);
    expect(res.body.data.items[3].error.code).toBe('blockchain_events_callbacks_limit_reached');
    expect(await counters(c.id)).toEqual({ total: 4, active: 4 });
    const refused = await t.request('POST', `${CHAIN}/transaction-mined`, {
      key: c.key,
      body: { data: { item: { transactionId: txid(300), callbackUrl: HOOK } } },
    });
    expect(refused.body.error?.code).toBe('blockchain_events_callbacks_limit_reached');

    // Delete one: room for one more.
    const del = await t.request('DELETE', `${CHAIN}/${one.body.data.item.referenceId}`, { key: c.key });
    expect(del.status).toBe(200);
    expect(await counters(c.id)).toEqual({ total: 3, active: 3 });
    // Deactivated as the delivery worker does it (callbacks:deactivate): counted in that statement.
    const id = res.body.data.items[0].item.referenceId;
    await t.app.database.db.query('test:deactivate', 'UPDATE subscriptions SET is_active = false WHERE id = $1', [id]);
    expect(await counters(c.id)).toEqual({ total: 3, active: 2 });
    // Updates that leave is_active alone change nothing.
    await t.app.database.db.query('test:touch', "UPDATE subscriptions SET callback_secret_key = 'x' WHERE customer_id = $1", [c.id]);
    expect(await counters(c.id)).toEqual({ total: 3, active: 2 });
    const activated = await t.request('POST', `/blockchain-events/subscriptions/${id}/activate`, { key: c.key });
    expect(activated.status, activated.text).toBe(201);
    expect(await counters(c.id)).toEqual({ total: 3, active: 3 });
    const list = await t.request('GET', `${CHAIN}?limit=50&offset=0`, { key: c.key });
    expect(list.body.data.total).toBe(3);
  });

  it('concurrent single creates of a capped customer (grouped in one transaction) stop exactly at the cap and refuse twins', async () => {
    const cost = BigInt(t.config.costs.transactionMined);
    const c = await t.customer({ plan: { maxActiveSubscriptions: 10 }, credits: 1_000_000n });
    const ids = [...Array.from({ length: 25 }, (_, i) => txid(400 + i)), ...Array.from({ length: 5 }, () => txid(400))];
    const answers = await Promise.all(
      ids.map((transactionId) =>
        t.request('POST', `${CHAIN}/transaction-mined`, { key: c.key, body: { data: { item: { transactionId, callbackUrl: HOOK } } } }),
      ),
    );
    const created = answers.filter((a) => a.status === 200);
    expect(created).toHaveLength(10);
    expect(
      answers.filter((a) => a.status !== 200).every((a) => ['blockchain_events_callbacks_limit_reached', 'already_exists'].includes(a.body.error?.code)),
    ).toBe(true);
    expect(created.filter((a) => a.body.data.item.transactionId === txid(400)).length).toBeLessThanOrEqual(1);
    expect(await counters(c.id)).toEqual({ total: 10, active: 10 });
    const [balance] = await t.app.database.db.query<{ credits: string }>('test:balance', 'SELECT credits FROM customers WHERE id = $1', [c.id]);
    expect(BigInt(balance?.credits ?? 0)).toBe(1_000_000n - 10n * cost); // the refused ones were given back
  });

  it('refuses fromBlockHeight per item: a backfill is made by the single create', async () => {
    const c = await t.customer();
    const res = await t.request('POST', `${CHAIN}/address-tokens-transactions-confirmed/bulk`, {
      key: c.key,
      body: {
        data: {
          items: [
            { address: SAMPLE.evmAddress, callbackUrl: HOOK, fromBlockHeight: 1 },
            { address: SAMPLE.evmAddress, callbackUrl: HOOK },
          ],
        },
      },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.items[0]).toMatchObject({ status: 'failed', error: { code: 'invalid_data', details: [{ attribute: 'fromBlockHeight' }] } });
    expect(res.body.data.items[1].status).toBe('created');
    expect(await counters(c.id)).toEqual({ total: 1, active: 1 });
  });

  it('refuses a request over the limits as a whole', async () => {
    const c = await t.customer({ plan: { mainnetAllowed: false } });
    const item = { transactionId: txid(1), callbackUrl: HOOK };
    const tooMany = await t.request('POST', BULK, { key: c.key, body: { data: { items: Array.from({ length: 10_001 }, () => item) } } });
    expect(tooMany.status).toBe(422);
    expect(tooMany.body.error.message).toContain('1 to 10000 items');
    const none = await t.request('POST', BULK, { key: c.key, body: { data: { items: [] } } });
    expect(none.status).toBe(422);
    const singular = await t.request('POST', BULK, { key: c.key, body: { data: { item } } });
    expect(singular.status).toBe(422);
    const mainnet = await t.request('POST', '/blockchain-events/ethereum/mainnet/subscriptions/transaction-mined/bulk', {
      key: c.key,
      body: { data: { items: [item] } },
    });
    expect(mainnet.body.error.code).toBe('feature_mainnets_not_allowed_for_plan');
    const wrongChain = await t.request('POST', '/blockchain-events/xrp/testnet/subscriptions/address-tokens-transactions-confirmed/bulk', {
      key: c.key,
      body: { data: { items: [{ address: SAMPLE.evmAddress, callbackUrl: HOOK }] } },
    });
    expect(wrongChain.body.error.code).toBe('uri_not_found');
    // A key restricted to one create endpoint may bulk-create that event only.
    const restricted = await t.customer({ allowedEndpoints: ['block-mined'] });
    const denied = await t.request('POST', BULK, { key: restricted.key, body: { data: { items: [item] } } });
    expect(denied.body.error.code).toBe('endpoint_not_allowed_for_api_key');
  });

  it("a body over the bulk route's own limit is 413 naming that limit (16 MiB), not the single create's", async () => {
    const c = await t.customer();
    const filler = 'x'.repeat(BULK_BODY_LIMIT);
    const tooLarge = await t.request('POST', BULK, {
      key: c.key,
      rawBody: `{"context":"big","data":{"items":[]},"pad":"${filler}"}`,
      headers: { 'content-type': 'application/json' },
    });
    expect(tooLarge.status, tooLarge.text.slice(0, 300)).toBe(413);
    expect(tooLarge.body.error.code).toBe('request_entity_too_large');
    expect(tooLarge.body.error.message).toBe(`The request body is larger than this endpoint takes: at most ${byteSize(BULK_BODY_LIMIT)}.`);
    expect(byteSize(BULK_BODY_LIMIT)).toBe('16 MiB (16,777,216 bytes)');
    // The single create keeps the server's limit, and says so.
    const single = await t.request('POST', `${CHAIN}/transaction-mined`, {
      key: c.key,
      rawBody: `{"data":{"item":{"pad":"${'x'.repeat(70_000)}"}}}`,
      headers: { 'content-type': 'application/json' },
    });
    expect(single.status).toBe(413);
    expect(single.body.error.message).toBe(`The request body is larger than this endpoint takes: at most ${byteSize(t.config.bodyLimit)}.`);
    expect(byteSize(65_536)).toBe('64 KiB (65,536 bytes)');
  });

  it('10,000 items in one request, written in chunks', async () => {
    const c = await t.customer();
    const items = Array.from({ length: 10_000 }, (_, i) => ({ transactionId: txid(1_000_000 + i), callbackUrl: HOOK }));
    const res = await t.request('POST', BULK, { key: c.key, body: { data: { items } } });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ created: 10_000, duplicates: 0, failed: 0 });
    expect(await counters(c.id)).toEqual({ total: 10_000, active: 10_000 });
    // Written by the low-priority pool's connections (application_name herald-bulk), not the main pool's.
    const [bulk] = await t.app.database.db.query<{ n: number }>(
      'test:bulk-connections',
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'herald-bulk'",
    );
    expect(bulk?.n).toBeGreaterThan(0);
  }, 60_000);

  it('a bulk-created subscription is matched by the follower (one range announcement)', async () => {
    const c = await t.customer();
    const addresses = await Promise.all(Array.from({ length: 20 }, () => btc.newAddress()));
    const res = await t.request('POST', `/blockchain-events/${btc.blockchain}/${btc.network}/subscriptions/address-coins-transactions-confirmed/bulk`, {
      key: c.key,
      body: { data: { items: addresses.map((address) => ({ address, callbackUrl: HOOK, receiveCallbackOn: 1 })) } },
    });
    expect(res.body.data.created, res.text).toBe(20);
    const id = res.body.data.items[17].item.referenceId;
    // Indexed once the follower's index holds it: the ingest service applies the announcement asynchronously.
    await until('the bulk-created subscriptions indexed', async () => {
      await t.app.ingest?.settled();
      return true;
    });
    await btc.send(addresses[17] as string, 5_000n);
    await btc.mine(2);
    await until('a callback queued for the bulk-created subscription', async () => {
      const rows = await t.app.database.db.query('test:callbacks', 'SELECT 1 FROM callbacks WHERE subscription_id = $1', [id]);
      return rows.length > 0;
    });
    // The callback log's total is the counter the outbox triggers keep (inserts, and deletes as retention's).
    const log = await t.request('GET', `/blockchain-events/subscriptions/${id}/callbacks`, { key: c.key });
    expect(log.body.data.total).toBe(log.body.data.items.length);
    expect(log.body.data.total).toBeGreaterThan(0);
    await t.app.database.db.query('test:prune', 'DELETE FROM callbacks WHERE subscription_id = $1', [id]);
    expect((await t.request('GET', `/blockchain-events/subscriptions/${id}/callbacks`, { key: c.key })).body.data.total).toBe(0);
    const left = await t.app.database.db.query('test:callback-counted', 'SELECT 1 FROM callback_counts WHERE subscription_id = $1', [id]);
    expect(left).toHaveLength(0);
  });
});

/** A bulk request whose body is sent only in part: it stays in progress until `finish` (or `abort`). */
function bulkInProgress(key: string, body: string) {
  const bytes = Buffer.from(body);
  const req = request(`${t.url}${BULK}`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json', 'content-length': String(bytes.length) },
  });
  const answer = new Promise<{ status: number; text: string }>((resolve, reject) => {
    req.on('response', async (res) => {
      let text = '';
      for await (const chunk of res) text += chunk;
      resolve({ status: res.statusCode ?? 0, text });
    });
    req.on('error', reject);
  });
  answer.catch(() => undefined);
  const connected = new Promise<void>((resolve) => req.on('socket', (socket) => (socket.connecting ? socket.once('connect', () => resolve()) : resolve())));
  req.flushHeaders();
  req.write(bytes.subarray(0, 10));
  return { answer, connected, finish: () => req.end(bytes.subarray(10)), abort: () => req.destroy() };
}

describe('bulk bodies: nesting, size, requests in progress, credits (issue 28 point 13)', () => {
  const item = { transactionId: txid(7), callbackUrl: HOOK };

  it('a body nested deeper than the schema allows is refused from its first characters: 422, at once, without parsing it', async () => {
    const c = await t.customer();
    // Just under the bulk limit (16 MiB), valid JSON nested 8 million levels deep, as in the audit.
    const head = '{"data":{"items":[';
    // As bytes made beforehand: encoding 16 MiB of text is the test's own work, on the event loop measured here.
    const levels = 8 * 1024 * 1024 - head.length;
    const deep = Buffer.from(`${head}${'['.repeat(levels)}${']'.repeat(levels)}]}}`);
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    const heapBefore = process.memoryUsage().heapUsed;
    const started = performance.now();
    const sent = await fetch(`${t.url}${BULK}`, { method: 'POST', headers: { 'x-api-key': c.key, 'content-type': 'application/json' }, body: deep });
    const res = { status: sent.status, text: await sent.text(), body: undefined as unknown as { error: { code: string; message: string } } };
    res.body = JSON.parse(res.text);
    const took = performance.now() - started;
    const heapGrowth = process.memoryUsage().heapUsed - heapBefore;
    delay.disable();
    expect(res.status, res.text).toBe(422);
    expect(res.body.error.code).toBe('invalid_request_body_structure');
    expect(res.body.error.message).toContain('levels deep');
    // Loose bounds: parsed, it blocked the event loop for seconds (20 s on a loaded test machine) and took about 0.5 GB of heap.
    expect(delay.max / 1e6, 'the longest event-loop stall (ms)').toBeLessThan(2_000);
    expect(heapGrowth, 'heap grown by the request').toBeLessThan(200 * 1024 * 1024);
    expect(took).toBeLessThan(10_000);
    // A single create's body (3 levels) too; an attribute given as a small object still gets the schema's answer naming it.
    const single = (itemJson: string) =>
      t.request('POST', `${CHAIN}/transaction-mined`, {
        key: c.key,
        rawBody: `{"data":{"item":${itemJson}}}`,
        headers: { 'content-type': 'application/json' },
      });
    const nested = await single(`{"transactionId":[[[[1]]]],"callbackUrl":"${HOOK}"}`);
    expect(nested.status, nested.text).toBe(422);
    expect(nested.body.error.code).toBe('invalid_request_body_structure');
    const wrongType = await single(`{"transactionId":{"a":1},"callbackUrl":"${HOOK}"}`);
    expect(wrongType.status, wrongType.text).toBe(409);
    expect(wrongType.body.error.details[0].attribute).toBe('transactionId');
    // Brackets inside strings are text, not nesting.
    const inString = await single(`{"transactionId":"${'['.repeat(100)}","callbackUrl":"${HOOK}"}`);
    expect(inString.status, inString.text).toBe(409);
    expect(inString.body.error.code).toBe('invalid_data');
  }, 60_000);

  it('an API key has at most bulkRequestsPerKey (2) bulk requests in progress; one more is refused before its body is read, 429', async () => {
    const c = await t.customer();
    const other = await t.customer();
    const body = (n: number) => JSON.stringify({ data: { items: [{ ...item, transactionId: txid(500 + n) }] } });
    // Two requests left in progress, each given a moment to reach the server before anything else is sent
    // (a probe holding a place when one arrived would have it refused).
    const partial = [bulkInProgress(c.key, body(1)), bulkInProgress(c.key, body(2))];
    await Promise.all(partial.map((p) => p.connected));
    await new Promise((resolve) => setTimeout(resolve, 300));
    await until('both requests in progress', async () => {
      const third = await t.request('POST', BULK, { key: c.key, body: JSON.parse(body(3)) });
      if (third.status !== 429) return false;
      expect(third.body.error.code).toBe('request_limit_reached');
      expect(third.body.error.message).toContain('2 bulk requests in progress');
      expect(third.headers.get('retry-after')).toBe('1');
      return true;
    });
    const [first, second] = partial as [ReturnType<typeof bulkInProgress>, ReturnType<typeof bulkInProgress>];
    // Another customer's key is not held up.
    const others = await t.request('POST', BULK, { key: other.key, body: JSON.parse(body(4)) });
    expect(others.status, others.text).toBe(200);
    // A client that hangs up gives its place back; a finished request too.
    first.abort();
    await until(
      'the aborted request’s place given back',
      async () => (await t.request('POST', BULK, { key: c.key, body: JSON.parse(body(5)) })).status === 200,
    );
    second.finish();
    expect((await second.answer).status).toBe(200);
    const [a, b] = await Promise.all([1, 2].map((n) => t.request('POST', BULK, { key: c.key, body: JSON.parse(body(5 + n)) })));
    expect([a?.status, b?.status]).toEqual([200, 200]);
  });

  it('a customer without the credits for one item is refused (402) before the body is read, whatever the body holds', async () => {
    const cost = BigInt(t.config.costs.transactionMined);
    const poor = await t.customer({ credits: cost - 1n });
    const res = await t.request('POST', BULK, { key: poor.key, body: { data: { items: [item, { ...item, transactionId: txid(8) }] } } });
    expect(res.status, res.text).toBe(402);
    expect(res.body.error.code).toBe('insufficient_credits');
    expect(res.body.error.message).toContain(`costs ${cost} credits`);
    expect((await counters(poor.id)).total).toBe(0);
    const deep = await t.request('POST', BULK, {
      key: poor.key,
      rawBody: `{"data":{"items":${'['.repeat(100_000)}`,
      headers: { 'content-type': 'application/json' },
    });
    expect(deep.status, deep.text).toBe(402);
  });
});

describe('herald subscriptions import', () => {
  it('imports an NDJSON file with one answer per line and progress on stderr', async () => {
    const c = await t.customer();
    const dir = mkdtempSync(join(tmpdir(), 'herald-import-'));
    try {
      const file = join(dir, 'subs.ndjson');
      const lines = [
        JSON.stringify({ blockchain: 'ethereum', network: 'goerli', event: 'transaction-mined', item: { transactionId: txid(7), callbackUrl: HOOK } }),
        JSON.stringify({ blockchain: 'ethereum', network: 'goerli', event: 'transaction-mined', item: { transactionId: txid(7), callbackUrl: HOOK } }),
        JSON.stringify({ transactionId: txid(8), callbackUrl: HOOK }), // the flags give the rest
        '{not json',
        JSON.stringify({ blockchain: 'ethereum', network: 'goerli', event: 'no-such-event', item: {} }),
        JSON.stringify({
          blockchain: 'ethereum',
          network: 'goerli',
          event: 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED',
          item: { address: 'nope', callbackUrl: HOOK },
        }),
      ];
      writeFileSync(file, `${lines.join('\n')}\n`);
      const result = await run(
        process.execPath,
        [
          'bin/herald.js',
          'subscriptions',
          'import',
          '--customer',
          c.name,
          '--file',
          file,
          '--blockchain',
          'ethereum',
          '--network',
          'goerli',
          '--event',
          'transaction-mined',
        ],
        // ethereum goerli is not followed here (docs/reference/chains.md "Chains without a node"): accepted all the same.
        { env: { ...process.env, DATABASE_URL: t.config.databaseUrl, HERALD_LOG_LEVEL: 'warn', HERALD_SUBSCRIPTIONS_ALLOW_UNFOLLOWED_CHAINS: 'true' } },
      ).catch((error: { code: number; stdout: string; stderr: string }) => error);
      expect((result as { code?: number }).code).toBe(1); // some lines failed
      const answers = result.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(answers.map((a: { line: number; status: string }) => [a.line, a.status])).toEqual([
        [1, 'created'],
        [2, 'duplicate'],
        [3, 'created'],
        [4, 'failed'],
        [5, 'failed'],
        [6, 'failed'],
      ]);
      expect(answers[1].referenceId).toBe(answers[0].referenceId);
      expect(answers[3].error.code).toBe('bad_json');
      expect(answers[4].error.code).toBe('uri_not_found');
      expect(answers[5].error.code).toBe('invalid_data');
      expect(result.stderr).toMatch(/done: 6 lines, 2 created, 1 duplicates, 3 failed/);
      expect(await counters(c.id)).toEqual({ total: 2, active: 2 });
      const [balance] = await t.app.database.db.query<{ credits: string }>('test:balance', 'SELECT credits FROM customers WHERE id = $1', [c.id]);
      expect(BigInt(balance?.credits ?? 0)).toBe(100_000_000n - 2n * BigInt(t.config.costs.transactionMined));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
