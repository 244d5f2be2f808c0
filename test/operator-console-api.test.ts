/**
 * The operator endpoints the console's operator pages added (docs/reference/api.md#operator-endpoints):
 * create a customer and change its plan (as herald customers create / update), and the failed callbacks
 * of every customer (GET /operator/callbacks), on the test PostgreSQL.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOperatorToken } from '../src/store/operator-tokens.ts';
import { insertUnlessTwin } from '../src/store/subscriptions.ts';
import { startTestApp, type TestApp, type TestResponse } from './harness.ts';
import { ethereumSubscription } from './support/subscription-rows.ts';

let t: TestApp;
let token: string;

beforeAll(async () => {
  t = await startTestApp({});
  token = (await createOperatorToken(t.app.database.db, `console-${randomUUID().slice(0, 8)}`))?.token as string;
});
afterAll(async () => {
  await t?.close();
});

const asOperator = (method: string, path: string, body?: unknown): Promise<TestResponse> =>
  t.request(method, path, { headers: { authorization: `Bearer ${token}` }, body });

describe('create a customer and change its plan', () => {
  it("creates with the configuration's defaults for the fields left out, refuses a twin, and the plan change is what the customer's key sees", async () => {
    const name = `made-${randomUUID().slice(0, 8)}`;
    const made = await asOperator('POST', '/operator/customers', { data: { item: { name, maxActiveSubscriptions: 2, credits: 500 } } });
    expect(made.status, made.text).toBe(201);
    const defaults = t.config.defaultPlan;
    expect(made.body.data.item).toEqual({
      name,
      plan: { mainnetAllowed: defaults.mainnetAllowed, maxActiveSubscriptions: 2, requestsPerSecond: defaults.requestsPerSecond },
      credits: 500,
    });
    const twin = await asOperator('POST', '/operator/customers', { data: { item: { name } } });
    expect(twin.status).toBe(409);
    expect(twin.body.error.code).toBe('already_exists');
    const blank = await asOperator('POST', '/operator/customers', { data: { item: { name: ' padded ' } } });
    expect([blank.status, blank.body.error.code]).toEqual([409, 'invalid_data']);

    // A key for it, then the plan changed: its account says so at once (the key cache forgot the old plan).
    const key = (await asOperator('POST', `/operator/customers/${name}/keys`)).body.data.item.apiKey as string;
    const before = await t.request('GET', '/account', { key });
    expect(before.body.data.item.plan.maxActiveSubscriptions).toBe(2);
    const changed = await asOperator('POST', `/operator/customers/${name}/plan`, { data: { item: { maxActiveSubscriptions: null, mainnetAllowed: false } } });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body.data.item.plan).toEqual({ mainnetAllowed: false, maxActiveSubscriptions: null, requestsPerSecond: defaults.requestsPerSecond });
    const after = await t.request('GET', '/account', { key });
    expect(after.body.data.item.plan).toEqual(changed.body.data.item.plan);
    // Only the fields given change.
    const rate = await asOperator('POST', `/operator/customers/${name}/plan`, { data: { item: { requestsPerSecond: 7 } } });
    expect(rate.body.data.item.plan).toEqual({ mainnetAllowed: false, maxActiveSubscriptions: null, requestsPerSecond: 7 });
    const bad = await asOperator('POST', `/operator/customers/${name}/plan`, { data: { item: { requestsPerSecond: 0 } } });
    expect([bad.status, bad.body.error.code]).toEqual([409, 'invalid_data']);
    const missing = await asOperator('POST', '/operator/customers/nobody-at-all/plan', { data: { item: { requestsPerSecond: 5 } } });
    expect(missing.status).toBe(404);
    // A customer's key is not an operator token.
    const refused = await t.request('POST', '/operator/customers', { key, body: { data: { item: { name: 'sneaky' } } } });
    expect(refused.status).toBe(401);
  });
});

describe('failed callbacks across customers', () => {
  it('lists the failed callbacks of every customer, newest finished first, with the last attempt; filtered by customer, status and window', async () => {
    const a = await t.customer({ name: `fail-a-${randomUUID().slice(0, 6)}` });
    const b = await t.customer({ name: `fail-b-${randomUUID().slice(0, 6)}` });
    const db = t.app.database.db;
    const subscriptionOf = async (customerId: string) =>
      (await insertUnlessTwin(db, customerId, ethereumSubscription({ eventType: 'BLOCK_MINED', target: null }))) as { id: string };
    const [sa, sb] = [await subscriptionOf(a.id), await subscriptionOf(b.id)];
    const rows: [string, string, string, string, number][] = [
      // customer, subscription, status, outcome, minutes ago finished
      [a.id, sa.id, 'failed', 'retries_exhausted', 5],
      [b.id, sb.id, 'failed', 'callback_url_gone', 2],
      [a.id, sa.id, 'delivered', '', 1],
      [b.id, sb.id, 'cancelled', 'subscription_deleted', 3],
      [a.id, sa.id, 'failed', 'retries_exhausted', 60 * 24 * 10],
    ];
    const ids: string[] = [];
    for (const [customerId, subscriptionId, status, outcome, ago] of rows) {
      const id = randomUUID();
      ids.push(id);
      await db.query(
        'test:callback',
        `INSERT INTO callbacks (id, customer_id, subscription_id, event_type, idempotency_key, body, callback_url, destination, status, attempts,
           next_attempt_at, created_at, finished_at, outcome)
         VALUES ($1::uuid, $2, $3, 'BLOCK_MINED', $1::text, '{}', 'https://hooks.example.com:8443/x', 'https://hooks.example.com:8443', $4, 2,
           now(), now() - make_interval(mins => $5 + 1), now() - make_interval(mins => $5), nullif($6, ''))`,
        [id, customerId, subscriptionId, status, ago, outcome],
      );
      await db.query(
        'test:attempts',
        `INSERT INTO callback_attempts (callback_id, attempt, started_at, duration_ms, http_status, error_class, error_message)
         VALUES ($1, 1, now() - make_interval(mins => $2 + 1), 10, 503, 'bad_status', 'HTTP 503'),
                ($1, 2, now() - make_interval(mins => $2), 12, NULL, 'connection_refused', 'connect ECONNREFUSED')`,
        [id, ago],
      );
    }
    const ours = (items: { callbackId: string }[]) => items.filter((i) => ids.includes(i.callbackId));

    const all = await asOperator('GET', '/operator/callbacks');
    expect(all.status, all.text).toBe(200);
    const listed = ours(all.body.data.items);
    // The two failed ones of the last 7 days, newest finished first; not the delivered, cancelled or old one.
    expect(listed.map((i) => i.callbackId)).toEqual([ids[1], ids[0]]);
    expect(listed[0]).toEqual({
      callbackId: ids[1],
      customer: b.name,
      referenceId: sb.id,
      blockchain: 'ethereum',
      network: 'mainnet',
      eventType: 'BLOCK_MINED',
      status: 'failed',
      outcome: 'callback_url_gone',
      destination: 'hooks.example.com:8443',
      attempts: 2,
      createdTimestamp: expect.any(Number),
      finishedTimestamp: expect.any(Number),
      lastAttempt: { startedTimestamp: expect.any(Number), httpStatus: null, errorClass: 'connection_refused', errorMessage: 'connect ECONNREFUSED' },
    });
    expect(all.body.data.untilTimestamp - all.body.data.sinceTimestamp).toBe(7 * 24 * 3600);

    const onlyA = await asOperator('GET', `/operator/callbacks?customer=${a.name}`);
    expect(onlyA.body.data.items.map((i: { callbackId: string }) => i.callbackId)).toEqual([ids[0]]);
    expect(onlyA.body.data.total).toBe(1);
    const cancelled = await asOperator('GET', `/operator/callbacks?status=cancelled&customer=${b.name}`);
    expect(cancelled.body.data.items.map((i: { callbackId: string }) => i.callbackId)).toEqual([ids[3]]);
    const now = Math.floor(Date.now() / 1000);
    const older = await asOperator('GET', `/operator/callbacks?customer=${a.name}&since=${now - 30 * 24 * 3600}&until=${now}`);
    expect(older.body.data.items.map((i: { callbackId: string }) => i.callbackId)).toEqual([ids[0], ids[4]]);
    const unknown = await asOperator('GET', '/operator/callbacks?customer=nobody-at-all');
    expect(unknown.status).toBe(404);
    const badStatus = await asOperator('GET', '/operator/callbacks?status=delivered');
    expect([badStatus.status, badStatus.body.error.code]).toEqual([409, 'invalid_data']);
  });
});
