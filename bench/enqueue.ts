/**
 * The cost of numbering callbacks (issue 14, point 4: x-callback-sequence) in the block transaction.
 * enqueueCallbacks now also bumps a per-subscription counter row (callback_sequences) and numbers the
 * rows it inserts; the baseline is the statement it replaced (a plain INSERT ... ON CONFLICT DO
 * NOTHING), measured in the same run on the same database.
 *
 * One embedded PostgreSQL (opened and migrated with the store code), a pool of 8, and 4 concurrent loops,
 * one per chain as followers run, each enqueueing "blocks" in their own transactions over subscriptions
 * of their own (a counter row is only ever written by its chain's follower):
 *   - one: 1 callback of 1 subscription per block (BLOCK_MINED-like: the same counter row every block);
 *   - spread: 100 callbacks over 100 subscriptions (a busy block);
 *   - burst: 100 callbacks of 1 subscription (an exchange's hot deposit address).
 * Rounds of BENCH_DURATION / 10 s (at least 0.5 s), alternating the two statements, five rounds each;
 * figures are medians of blocks per second, and the ratio numbered / plain. No target: a measurement
 * (README "Callback order" has the figures). BENCH_UNNAMED=1 runs with unnamed statements (a custom plan
 * each time): how a generic plan gone wrong was found (numbered 0.04 of plain with named statements,
 * 0.56 without, until the UPDATE named its rows by id = ANY).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/config/config.ts';
import { callbackOfEvent, destinationOf, enqueueCallbacks, type NewCallback } from '../src/store/callbacks.ts';
import { createDb, type Queryable } from '../src/store/db.ts';
import { openDatabase } from '../src/store/open.ts';
import { log, median, removeDataDirOnCleanup } from './lib.ts';
import type { Benchmark } from './run.ts';

const ROUNDS = 5;
const LOOPS = 4;
const POOL = 8;

/** The statement enqueueCallbacks ran before the numbering: the baseline. */
async function plainEnqueue(tx: Queryable, callbacks: NewCallback[], now = new Date()): Promise<number> {
  const rows = await tx.query(
    'bench:enqueue-plain',
    `INSERT INTO callbacks (id, customer_id, subscription_id, event_type, idempotency_key, body, callback_url, destination, next_attempt_at)
     SELECT *, $9::timestamptz FROM unnest($1::uuid[], $2::bigint[], $3::uuid[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
     ON CONFLICT (subscription_id, idempotency_key) DO NOTHING
     RETURNING id`,
    [
      callbacks.map((c) => c.id),
      callbacks.map((c) => c.customerId),
      callbacks.map((c) => c.subscriptionId),
      callbacks.map((c) => c.eventType),
      callbacks.map((c) => c.idempotencyKey),
      callbacks.map((c) => c.body),
      callbacks.map((c) => c.callbackUrl),
      callbacks.map((c) => destinationOf(c.callbackUrl)),
      now,
    ],
  );
  await tx.query('callbacks:notify', `SELECT pg_notify('herald_callbacks', '')`);
  return rows.length;
}

const STATEMENTS = { plain: plainEnqueue, numbered: enqueueCallbacks };
type Mode = keyof typeof STATEMENTS;

const BODY = JSON.stringify({ apiVersion: '2021-03-20', data: { item: { blockchain: 'bitcoin', network: 'testnet', height: 1, hash: 'x'.repeat(64) } } });

const run: Benchmark = async ({ duration }) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'herald-bench-enqueue-'));
  const database = await openDatabase(loadConfig({ dataDir }, {}), { poolSize: 2 });
  removeDataDirOnCleanup(dataDir, () => database.close());
  const db = createDb(database.url, { poolSize: POOL, preparedStatements: process.env.BENCH_UNNAMED !== '1' });
  // Subscriptions per loop and workload; callbacks need no subscription row (no foreign key).
  const subscriptions = (n: number) => Array.from({ length: LOOPS }, () => Array.from({ length: n }, () => randomUUID()));
  const workloads: Record<string, { subs: string[][]; perBlock: number }> = {
    one: { subs: subscriptions(1), perBlock: 1 },
    spread: { subs: subscriptions(100), perBlock: 100 },
    burst: { subs: subscriptions(1), perBlock: 100 },
  };
  const block = (subs: string[], perBlock: number): NewCallback[] =>
    Array.from({ length: perBlock }, (_, i) =>
      callbackOfEvent({
        customerId: '1',
        subscriptionId: subs[i % subs.length] as string,
        eventType: 'BLOCK_MINED',
        idempotencyKey: randomUUID(),
        body: BODY,
        callbackUrl: 'https://hooks.example.com/cb',
      }),
    );
  const measure = async (mode: Mode, w: { subs: string[][]; perBlock: number }, ms: number) => {
    let done = 0;
    const started = performance.now();
    const end = started + ms;
    await Promise.all(
      w.subs.map(async (subs) => {
        while (performance.now() < end) {
          const callbacks = block(subs, w.perBlock);
          await db.transaction('bench:block', (tx) => STATEMENTS[mode](tx, callbacks));
          done++;
        }
      }),
    );
    return done / ((performance.now() - started) / 1000);
  };
  const roundMs = Math.max(500, (duration * 1000) / 10);
  const figures: Record<string, unknown> = {};
  try {
    for (const [name, w] of Object.entries(workloads)) {
      const rates: Record<Mode, number[]> = { plain: [], numbered: [] };
      for (const mode of ['plain', 'numbered'] as const) await measure(mode, w, 200); // warm-up
      for (let round = 0; round < ROUNDS; round++) {
        for (const mode of round % 2 === 0 ? (['plain', 'numbered'] as const) : (['numbered', 'plain'] as const))
          rates[mode].push(await measure(mode, w, roundMs));
      }
      const plain = median(rates.plain);
      const numbered = median(rates.numbered);
      const ratio = numbered / plain;
      log(`${name}: plain ${Math.round(plain)} blocks/s, numbered ${Math.round(numbered)} blocks/s (ratio ${ratio.toFixed(3)})`);
      figures[name] = { plainBlocksPerSecond: Math.round(plain), numberedBlocksPerSecond: Math.round(numbered), numberedOverPlain: Number(ratio.toFixed(3)) };
    }
  } finally {
    await db.close();
  }
  return { benchmark: 'enqueue', target: null, loops: LOOPS, poolSize: POOL, roundMs, rounds: ROUNDS, ...figures };
};

export default run;
