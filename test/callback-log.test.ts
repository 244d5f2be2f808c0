/**
 * The callback log's store query on a real database: the total is counted from the index alone (no
 * heap page per callback: bench/retention.ts), yet only for the customer the subscription's callbacks
 * belong to.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listCallbacks } from '../src/store/callbacks.ts';
import { startTestApp, type TestApp } from './harness.ts';

describe("a subscription's callback log", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it("counts the subscription's callbacks for its customer and nothing for another", async () => {
    const db = t.app.database.db;
    const subscriptionId = randomUUID();
    await db.query(
      'test:insert-callbacks',
      `INSERT INTO callbacks (id, customer_id, subscription_id, event_type, idempotency_key, body, callback_url, destination, status, next_attempt_at)
       SELECT gen_random_uuid(), 7, $1, 'BLOCK_MINED', 'k' || g, '{}', 'https://hooks.example.com/x', 'https://hooks.example.com:443', 'pending', now()
       FROM generate_series(1, 120) g`,
      [subscriptionId],
    );
    const own = await listCallbacks(db, '7', subscriptionId, { limit: 50, offset: 100 });
    expect(own.total).toBe(120);
    expect(own.items).toHaveLength(20);
    const foreign = await listCallbacks(db, '8', subscriptionId, { limit: 50, offset: 0 });
    expect(foreign).toEqual({ total: 0, items: [] });
    expect(await listCallbacks(db, '7', randomUUID(), { limit: 50, offset: 0 })).toEqual({ total: 0, items: [] });
  });
});
