/**
 * The queue-stats benchmark: what a read of the queue gauges (herald_callbacks_due,
 * herald_callbacks_oldest_due_seconds; the console's delivery page) costs PostgreSQL beside a large backlog
 * of one destination (docs/reference/metrics.md, "How exact the queue gauges are"): the read of before (one
 * count of every due callback) against the read of now (src/store/queue-stats.ts), on the same outbox, one
 * right after the other. Target: a read takes at most 0.05 of the time of the count of before, in both
 * states below (the buffers are reported: the read's grow with the destinations, the count's with the backlog).
 *
 * The outbox (embedded PostgreSQL of a fresh data directory): 1,000,000 callbacks due for one destination
 * (a receiver that is down: due over the last two hours, as a backlog piles up), OTHERS destinations with
 * OTHER_DUE callbacks due each and a few due later, and HISTORY delivered callbacks. Measured twice: right
 * after the rows are written (the visibility map not yet set: a backlog that grows faster than autovacuum
 * passes) and after VACUUM (ANALYZE). For each: milliseconds per read (median of READS, client side) and the
 * buffers it touches (EXPLAIN (ANALYZE, BUFFERS), which do not move with the machine's load), and the recount
 * pass that counts the large destination whole (run once a minute at most, or once per 200 times its own
 * duration) with its cost spread over a scrape every 15 s.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/config/config.ts';
import { enqueueCallbacks } from '../src/store/callbacks.ts';
import { createCustomer } from '../src/store/customers.ts';
import type { Db, Queryable } from '../src/store/db.ts';
import { type OpenDatabase, openDatabase } from '../src/store/open.ts';
import {
  QUEUE_EXACT_PER_DESTINATION,
  queueRecountRunning,
  queueStats,
  RECOUNT_COST_RATIO,
  RECOUNT_MIN_INTERVAL_MS,
  recountQueueDepth,
} from '../src/store/queue-stats.ts';
import { type BenchSubscription, createSubscriptions, makeCallback } from './delivery.ts';
import { envScale, log, median, removeDataDirOnCleanup, runCleanups } from './lib.ts';

/** BENCH_QUEUE_SCALE (e.g. 0.05) makes every count that much smaller, for a quick try: the figures are then an experiment. */
const SCALE = envScale('BENCH_QUEUE_SCALE');
const BACKLOG = Math.max(10, Math.round(1_000_000 * SCALE));
const HISTORY = Math.max(10, Math.round(500_000 * SCALE));
const OTHERS = 50;
const OTHER_DUE = 100;
const OTHER_LATER = 20;
const READS = 9;
const SCRAPE_INTERVAL_MS = 15_000;
const TARGET_RATIO = 0.05;

/** The read before migration 095: every due callback counted at each scrape. */
const BEFORE_SQL = `SELECT count(*)::int AS due, min(next_attempt_at) AS oldest FROM callbacks WHERE status = 'pending' AND NOT dormant AND next_attempt_at <= $1`;

const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

/** Runs `read` READS times, returns the median ms. */
async function timed(read: () => Promise<unknown>): Promise<number> {
  const ms: number[] = [];
  for (let i = 0; i < READS; i++) {
    const started = performance.now();
    await read();
    ms.push(performance.now() - started);
  }
  return round(median(ms), 2);
}

/** Shared plus read buffers of one run of the statement, from EXPLAIN (ANALYZE, BUFFERS). */
async function buffers(db: Db, label: string, sql: string, params: unknown[]): Promise<number> {
  const [row] = await db.query<{ 'QUERY PLAN': [{ Plan: { 'Shared Hit Blocks': number; 'Shared Read Blocks': number } }] }>(
    `bench:explain-${label}`,
    `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${sql}`,
    params,
  );
  if (process.env.BENCH_QUEUE_EXPLAIN) {
    const text = await db.query<{ 'QUERY PLAN': string }>(`bench:explain-text-${label}`, `EXPLAIN (ANALYZE, BUFFERS) ${sql}`, params);
    log(`${label}:\n${text.map((r) => r['QUERY PLAN']).join('\n')}`);
  }
  const plan = row?.['QUERY PLAN'][0].Plan;
  return plan ? plan['Shared Hit Blocks'] + plan['Shared Read Blocks'] : 0;
}

/** Records the statements a read sends, to EXPLAIN them with the same parameters. */
function recording(db: Db): { db: Db; statements: { label: string; sql: string; params: unknown[] }[] } {
  const statements: { label: string; sql: string; params: unknown[] }[] = [];
  const wrap = (q: Queryable): Queryable => ({
    query: (label, sql, params, options) => {
      statements.push({ label, sql, params: [...(params ?? [])] });
      return q.query(label, sql, params, options);
    },
  });
  const wrapped: Db = { ...db, ...wrap(db), transaction: (label, work, options) => db.transaction(label, (tx) => work(wrap(tx)), options) };
  return { db: wrapped, statements };
}

async function measure(db: Db, label: string): Promise<Record<string, unknown>> {
  const now = new Date();
  const [exact] = await db.query<{ due: number; oldest: Date }>('bench:before', BEFORE_SQL, [now]);
  // The recount pass, forced: what the first read after the backlog passed the cap sets off.
  await db.query('bench:clear-counts', 'DELETE FROM queue_depth_counts');
  const started = performance.now();
  await recountQueueDepth(db, [await deadDestination(db)], now);
  const recountMs = round(performance.now() - started, 1);
  const after = await queueStats(db, now);
  await queueRecountRunning(db);
  if (after.due !== exact?.due || Math.abs(after.oldestDueSeconds - (now.getTime() - (exact?.oldest.getTime() ?? 0)) / 1000) > 0.001) {
    throw new Error(`${label}: the reads disagree: before ${JSON.stringify(exact)}, after ${JSON.stringify(after)}`);
  }
  const beforeMs = await timed(() => db.query('bench:before', BEFORE_SQL, [new Date()]));
  const afterMs = await timed(() => queueStats(db, now));
  const rec = recording(db);
  await queueStats(rec.db, now);
  await db.query('bench:clear-counts', 'DELETE FROM queue_depth_counts');
  await recountQueueDepth(rec.db, [await deadDestination(db)], now);
  const read = rec.statements.find((s) => s.label === 'callbacks:queue-stats');
  const count = rec.statements.find((s) => s.label === 'callbacks:queue-recount-count');
  if (!read || !count) throw new Error('the read or the recount sent no statement');
  const beforeBuffers = await buffers(db, 'before', BEFORE_SQL, [now]);
  const afterBuffers = await buffers(db, 'after', read.sql, read.params);
  const recountBuffers = await buffers(db, 'recount', count.sql, count.params);
  // The pass's cost spread over the scrapes: it runs at most every max(60 s, RECOUNT_COST_RATIO x its duration).
  const recountEveryMs = Math.max(RECOUNT_MIN_INTERVAL_MS, RECOUNT_COST_RATIO * recountMs);
  const recountPerScrapeMs = round((recountMs * SCRAPE_INTERVAL_MS) / recountEveryMs, 2);
  const figures = {
    due: exact?.due,
    beforeMs,
    afterMs,
    ratio: round(afterMs / beforeMs, 4),
    beforeBuffers,
    afterBuffers,
    buffersRatio: round(afterBuffers / beforeBuffers, 4),
    recountMs,
    recountBuffers,
    recountPerScrapeMs,
    afterWithRecountPerScrapeMs: round(afterMs + recountPerScrapeMs, 2),
  };
  log(`${label}: ${JSON.stringify(figures)}`);
  return figures;
}

let deadDestinationValue: string | undefined;
async function deadDestination(db: Db): Promise<string> {
  if (deadDestinationValue) return deadDestinationValue;
  const [row] = await db.query<{ destination: string }>('bench:dead', `SELECT destination FROM callbacks WHERE callback_url LIKE '%/down' LIMIT 1`);
  deadDestinationValue = row?.destination as string;
  return deadDestinationValue;
}

export default async function queueStatsBenchmark(): Promise<Record<string, unknown>> {
  const dataDir = mkdtempSync(join(tmpdir(), 'herald-bench-queue-'));
  let database: OpenDatabase | undefined;
  removeDataDirOnCleanup(dataDir, () => database?.close());
  try {
    database = await openDatabase({ ...loadConfig({ dataDir }, {}), databasePoolSize: 4 });
    const db = database.db;
    const customer = await createCustomer(db, 'queue', { mainnetAllowed: true, maxActiveSubscriptions: null, requestsPerSecond: 1_000_000 }, 10n ** 15n);
    const [down] = (await createSubscriptions(db, customer.id, ['https://down.example:8443/down'])) as [BenchSubscription];
    const others = await createSubscriptions(
      db,
      customer.id,
      Array.from({ length: OTHERS }, (_, i) => `https://receiver-${i}.example/hook`),
    );
    // Measured on the outbox as it is: no autovacuum in between (the first measure is of rows not yet vacuumed).
    await db.query('bench:no-autovacuum', 'ALTER TABLE callbacks SET (autovacuum_enabled = false)');
    let started = performance.now();
    const template = makeCallback(customer.id, down);
    await db.transaction('bench:enqueue-template', (tx) => enqueueCallbacks(tx, [template]));
    const now = Date.now();
    // The backlog, due over the last two hours; then the history, delivered.
    await db.query(
      'bench:backlog',
      `INSERT INTO callbacks (id, customer_id, subscription_id, event_type, idempotency_key, body, callback_url, destination, next_attempt_at, sequence)
       SELECT gen_random_uuid(), t.customer_id, t.subscription_id, t.event_type, md5(g::text) || md5((-g)::text), t.body, t.callback_url,
         t.destination, $3::timestamptz - (g * 7200000.0 / $2) * interval '1 millisecond', g + 1
       FROM callbacks t, generate_series(1, $2::int - 1) g WHERE t.id = $1`,
      [template.id, BACKLOG, new Date(now)],
    );
    await db.query(
      'bench:history',
      `INSERT INTO callbacks (id, customer_id, subscription_id, event_type, idempotency_key, body, callback_url, destination, next_attempt_at,
         status, attempts, finished_at, sequence)
       SELECT gen_random_uuid(), t.customer_id, t.subscription_id, t.event_type, 'h' || md5(g::text), t.body, t.callback_url,
         t.destination, $3::timestamptz - g * interval '1 second', 'delivered', 1, $3::timestamptz - g * interval '1 second', $2 + g
       FROM callbacks t, generate_series(1, $4::int) g WHERE t.id = $1`,
      [template.id, BACKLOG, new Date(now), HISTORY],
    );
    const due = others.flatMap((s) => Array.from({ length: OTHER_DUE }, () => makeCallback(customer.id, s)));
    const later = others.flatMap((s) => Array.from({ length: OTHER_LATER }, () => makeCallback(customer.id, s)));
    await db.transaction('bench:enqueue-others', async (tx) => {
      await enqueueCallbacks(tx, due, new Date(now - 60_000));
      await enqueueCallbacks(tx, later, new Date(now + 3_600_000));
    });
    log(
      `outbox: ${BACKLOG} due for one destination, ${OTHERS} x ${OTHER_DUE} for others, ${HISTORY} delivered, in ${Math.round(performance.now() - started)} ms`,
    );
    await db.query('bench:analyze', 'ANALYZE callbacks');
    const unvacuumed = await measure(db, 'not vacuumed');
    started = performance.now();
    await db.query('bench:vacuum', 'VACUUM (ANALYZE) callbacks');
    log(`vacuumed in ${Math.round(performance.now() - started)} ms`);
    const vacuumed = await measure(db, 'vacuumed');
    return {
      bench: 'queue-stats',
      ...(SCALE !== 1 && { experiment: { scale: SCALE } }),
      backlog: BACKLOG,
      others: { destinations: OTHERS, dueEach: OTHER_DUE, laterEach: OTHER_LATER },
      history: HISTORY,
      exactPerDestination: QUEUE_EXACT_PER_DESTINATION,
      reads: READS,
      unvacuumed,
      vacuumed,
      targets: { ratio: `<=${TARGET_RATIO}` },
      pass: [unvacuumed, vacuumed].every((m) => (m.ratio as number) <= TARGET_RATIO),
    };
  } finally {
    await runCleanups();
  }
}
