/**
 * The queue gauges' read (herald_callbacks_due, herald_callbacks_oldest_due_seconds, the console's delivery
 * page): exact below the cap per destination, the oldest due always exact, and a destination at the cap
 * counted whole by a recount pass, one process at a time, at most once a minute
 * (docs/reference/metrics.md, "How exact the queue gauges are"). Real PostgreSQL, a database of its own.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../src/store/db.ts';
import {
  QUEUE_EXACT_PER_DESTINATION,
  queueRecountRunning,
  queueStats,
  RECOUNT_COST_RATIO,
  RECOUNT_MIN_INTERVAL_MS,
  recountQueueDepth,
} from '../src/store/queue-stats.ts';
import { openMigratedTestDatabase } from './harness.ts';

let db: Db;
beforeAll(async () => {
  db = await openMigratedTestDatabase(4);
});
afterAll(() => db?.close());

const T0 = new Date('2026-12-03T00:00:00Z');
const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);

/** n pending callbacks for `destination`, due `dueAt` (the i-th one i ms later), dormant or not. */
async function add(destination: string, n: number, dueAt: Date | 'infinity', options: { dormant?: boolean; status?: string } = {}): Promise<void> {
  await db.query(
    'test:add-callbacks',
    `INSERT INTO callbacks (id, customer_id, subscription_id, event_type, idempotency_key, body, callback_url, destination, next_attempt_at, status, dormant, finished_at)
     SELECT gen_random_uuid(), 1, $1, 'TRANSACTION_MINED', md5(random()::text) || g, '{}', $2 || '/hook', $2,
       CASE WHEN $3::text = 'infinity' THEN 'infinity'::timestamptz ELSE $3::timestamptz + g * interval '1 millisecond' END,
       $5, $6, CASE WHEN $5 = 'pending' THEN NULL ELSE now() END
     FROM generate_series(0, $4::int - 1) g`,
    [randomUUID(), destination, dueAt === 'infinity' ? 'infinity' : dueAt.toISOString(), n, options.status ?? 'pending', options.dormant ?? false],
  );
}

/** A read, then the recount pass it set off (if any) to its end. */
async function read(now: Date) {
  const stats = await queueStats(db, now, {
    onRecountError: (error) => {
      throw error;
    },
  });
  await queueRecountRunning(db);
  return stats;
}

describe('queue stats', () => {
  it('counts exactly below the cap: only pending, not dormant, due by now; the oldest is exact', async () => {
    expect(await read(at(0))).toEqual({ due: 0, oldestDueSeconds: 0 });
    await add('https://a.example', 3, at(-120));
    await add('https://b.example', 5, at(-30));
    await add('https://b.example', 4, at(600)); // due later
    await add('https://c.example', 7, at(-900), { dormant: true }); // an inactive subscription's
    await add('https://c.example', 2, 'infinity'); // held by the deep-reorganisation breaker
    await add('https://d.example', 6, at(-3600), { status: 'delivered' });
    expect(await read(at(0))).toEqual({ due: 8, oldestDueSeconds: 120 });
    // Later, the four of b due later are due too.
    const later = await read(at(700));
    expect(later.due).toBe(12);
    expect(later.oldestDueSeconds).toBe(820);
    expect((await db.query('test:counts', 'SELECT * FROM queue_depth_counts')).length).toBe(0);
  });

  it('counts a destination at the cap as the cap until a pass counts it whole, then by the pass until the next one', async () => {
    const big = 'https://big.example';
    const backlog = QUEUE_EXACT_PER_DESTINATION * 3 + 17;
    await add(big, backlog, at(-7200));
    // The read that finds it at the cap counts it as the cap, and sets off the pass.
    const first = await queueStats(db, at(0));
    expect(first.due).toBe(8 + QUEUE_EXACT_PER_DESTINATION);
    expect(first.oldestDueSeconds).toBe(7200);
    await queueRecountRunning(db);
    expect(await db.query('test:counts', 'SELECT destination, due::int AS due FROM queue_depth_counts')).toEqual([{ destination: big, due: backlog }]);
    expect(await read(at(1))).toEqual({ due: 8 + backlog, oldestDueSeconds: 7201 });

    // 500 more within the minute: the reads go on with the pass's figure (the small destinations stay exact).
    await add(big, 500, at(-60));
    await add('https://a.example', 1, at(-10));
    expect((await read(at(30))).due).toBe(9 + backlog);
    // A minute after the pass (or RECOUNT_COST_RATIO times its duration, on a slow machine), a read sets off
    // the next one; the read after it has the new figure.
    const [pass] = await db.query<{ pass_ms: number }>('test:pass', 'SELECT pass_ms FROM queue_depth_counts LIMIT 1');
    const next = Math.ceil(Math.max(RECOUNT_MIN_INTERVAL_MS, RECOUNT_COST_RATIO * (pass?.pass_ms ?? 0)) / 1000);
    expect((await read(at(next))).due).toBe(9 + backlog);
    expect((await read(at(next + 1))).due).toBe(9 + backlog + 500);

    // Drained below the cap: exact again at once, whatever the last pass said.
    await db.query('test:drain', `UPDATE callbacks SET status = 'delivered', finished_at = now() WHERE destination = $1 AND status = 'pending'`, [big]);
    await add(big, 10, at(-5));
    expect(await read(at(next + 2))).toEqual({ due: 19, oldestDueSeconds: next + 2 + 120 });
  });

  it('runs one pass at a time across processes, and none while the last one is fresh', async () => {
    const destinations = ['https://big.example'];
    const now = at(36_000);
    // Two processes at once: one counts, the other finds the lock taken and leaves the pass to it.
    const results = await Promise.all([recountQueueDepth(db, destinations, now), recountQueueDepth(db, destinations, now)]);
    expect(results.filter(Boolean)).toHaveLength(1);
    // Fresh: no pass before a minute has gone by (or RECOUNT_COST_RATIO times the pass's duration, if longer).
    expect(await recountQueueDepth(db, destinations, new Date(now.getTime() + RECOUNT_MIN_INTERVAL_MS - 1000))).toBe(false);
    const [last] = await db.query<{ pass_ms: number }>('test:pass', 'SELECT pass_ms FROM queue_depth_counts LIMIT 1');
    const next = new Date(now.getTime() + Math.max(RECOUNT_MIN_INTERVAL_MS, RECOUNT_COST_RATIO * (last?.pass_ms ?? 0)));
    expect(await recountQueueDepth(db, destinations, next)).toBe(true);
  });
});
