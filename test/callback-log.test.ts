/**
 * The callback log's store query on a real database: the total is read from the subscription's counter
 * (callback_counts, kept by triggers: migration 018), not counted over its callbacks, and only for the
 * customer the subscription belongs to.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listCallbacks } from '../src/store/callbacks.ts';
import { debitCredits } from '../src/store/customers.ts';
import { createDb } from '../src/store/db.ts';
import { startTestApp, type TestApp } from './harness.ts';

describe("a subscription's callback log", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it("counts the subscription's callbacks for its customer and nothing for another", async () => {
    const db = t.app.database.db;
    const owner = await t.customer();
    const other = await t.customer();
    const [subscription] = await db.query<{ id: string }>(
      'test:subscription',
      `INSERT INTO subscriptions (id, customer_id, event_type, blockchain, network, transaction_id, target, callback_url, callback_host,
         allow_duplicates, duplicate_key, api_version)
       VALUES (gen_random_uuid(), $1, 'TRANSACTION_MINED', 'ethereum', 'goerli', $2::text, $2::text, 'https://hooks.example.com/x', 'hooks.example.com', true, sha256(convert_to($2::text, 'UTF8')), '2021-03-20')
       RETURNING id`,
      [owner.id, `0x${'ab'.repeat(32)}`],
    );
    const subscriptionId = subscription?.id as string;
    await db.query(
      'test:insert-callbacks',
      `INSERT INTO callbacks (id, customer_id, subscription_id, event_type, idempotency_key, body, callback_url, destination, status, next_attempt_at)
       SELECT gen_random_uuid(), $2, $1, 'TRANSACTION_MINED', 'k' || g, '{}', 'https://hooks.example.com/x', 'https://hooks.example.com:443', 'pending', now()
       FROM generate_series(1, 120) g`,
      [subscriptionId, owner.id],
    );
    const own = await listCallbacks(db, owner.id, subscriptionId, { limit: 50, offset: 100 });
    expect(own.total).toBe(120);
    expect(own.items).toHaveLength(20);
    const foreign = await listCallbacks(db, other.id, subscriptionId, { limit: 50, offset: 0 });
    expect(foreign).toEqual({ total: 0, items: [], subscriptionFound: false });
    expect(await listCallbacks(db, owner.id, randomUUID(), { limit: 50, offset: 0 })).toEqual({ total: 0, items: [], subscriptionFound: false });

    // Through the API: the owner's page is charged per callback listed; another customer gets the
    // contract's 404 and pays nothing, though no look-up of the subscription precedes the page.
    const credits = async (id: string) =>
      BigInt((await db.query<{ credits: string }>('test:credits', 'SELECT credits::text FROM customers WHERE id = $1', [id]))[0]?.credits ?? -1);
    const path = `/blockchain-events/subscriptions/${subscriptionId}/callbacks?limit=50&offset=100`;
    const [ownerBefore, otherBefore] = [await credits(owner.id), await credits(other.id)];
    const page = await t.request('GET', path, { key: owner.key });
    expect(page.status).toBe(200);
    expect(page.body.data).toMatchObject({ total: 120 });
    expect(ownerBefore - (await credits(owner.id))).toBe(20n * BigInt(t.config.costs.getSubscription));
    const refused = await t.request('GET', path, { key: other.key });
    expect(refused.status).toBe(404);
    expect(refused.text).toContain('resource_not_found');
    expect(await credits(other.id)).toBe(otherBefore);
  });

  it("charges a read without waiting for the WAL flush, for that transaction only: the connection's next commit waits again", async () => {
    const customer = await t.customer();
    const session = createDb(t.config.databaseUrl as string, { poolSize: 1 });
    try {
      const result = await debitCredits(session, customer.id, 3n, [{ endpoint: 'test', requests: 1, credits: 3n }], { waitForFlush: false });
      expect(result.ok).toBe(true);
      const [setting] = await session.query<{ synchronous_commit: string }>('test:show', 'SHOW synchronous_commit');
      expect(setting?.synchronous_commit).toBe('on');
      const [row] = await session.query<{ requests: number }>(
        'test:usage',
        "SELECT requests::int FROM credit_usage WHERE customer_id = $1 AND endpoint = 'test'",
        [customer.id],
      );
      expect(row?.requests).toBe(1);
    } finally {
      await session.close();
    }
  });
});
