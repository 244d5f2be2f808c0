/**
 * Random (version 4) against time-ordered (version 7, uuidV7 of src/domain/ids.ts) callback ids, on a callback log
 * that has lived: what the outbox's database work costs per callback in each case.
 *
 * One embedded PostgreSQL (opened and migrated with the store code) holding BENCH_IDS_ROWS (default
 * 3,000,000) delivered callbacks with one attempt each, random ids, over 1,000 subscriptions: the log of an
 * installation that ran with random ids (its indexes larger than shared buffers, as they are after months).
 * Then LOOPS concurrent loops, each round trip the outbox's life of a block's callbacks with the store's own
 * statements: enqueueCallbacks (100 callbacks over 100 of the subscriptions), claimDueCallbacks, and
 * recordOutcomes (delivered, with its attempt row). No HTTP: the database's share alone.
 *
 * Rounds of BENCH_DURATION / 6 s (at least 5 s), alternating the two kinds of id, ROUNDS each. Each round
 * starts just after a CHECKPOINT (a page's first change after a checkpoint writes the whole page to the WAL:
 * the cost random keys multiply), so both kinds start alike. Figures: medians of callbacks/s, WAL bytes and
 * full-page images per callback, and the ratio time-ordered / random. No target: a measurement (README
 * "Callback ids").
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/config/config.ts';
import { uuidV7 } from '../src/domain/ids.ts';
import { claimDueCallbacks, enqueueCallbacks, type NewCallback, recordOutcomes } from '../src/store/callbacks.ts';
import { createCustomer } from '../src/store/customers.ts';
import { createDb, type Db } from '../src/store/db.ts';
import { openDatabase } from '../src/store/open.ts';
import { envInt, log, median, removeDataDirOnCleanup } from './lib.ts';
import type { Benchmark } from './run.ts';
import { insertBenchSubscription } from './subscriptions.ts';

const ROUNDS = 4;
const LOOPS = 4;
const POOL = 8;
const PER_BLOCK = 100;
const SUBSCRIPTIONS = 1_000;
const BODY = JSON.stringify({ apiVersion: '2021-03-20', data: { item: { blockchain: 'bitcoin', network: 'testnet', height: 1, hash: 'x'.repeat(64) } } });

const ID_KINDS = { random: () => randomUUID(), 'time-ordered': () => uuidV7() };
type IdKind = keyof typeof ID_KINDS;

/** `total` delivered callbacks with random ids and one attempt each, in chunks; then vacuumed. */
async function buildLog(db: Db, customerId: string, subscriptions: string[], total: number): Promise<void> {
  const chunk = 250_000;
  for (let from = 1; from <= total; from += chunk) {
    const to = Math.min(total, from + chunk - 1);
    const started = performance.now();
    await db.query(
      'bench:build-log',
      `WITH made AS (
         INSERT INTO callbacks (id, customer_id, subscription_id, event_type, idempotency_key, body, callback_url, destination, status,
           attempts, next_attempt_at, created_at, finished_at)
         SELECT gen_random_uuid(), $1::bigint, ($2::uuid[])[g % cardinality($2::uuid[]) + 1], 'BLOCK_MINED', 'old-' || g, $5,
           'https://localhost/cb', 'https://localhost:443', 'delivered', 1, now(), now() - interval '1 day', now() - interval '1 day'
         FROM generate_series($3::int, $4::int) g
         RETURNING id)
       INSERT INTO callback_attempts (callback_id, attempt, started_at, duration_ms, http_status)
       SELECT id, 1, now() - interval '1 day', 3, 200 FROM made`,
      [customerId, subscriptions, from, to, BODY],
    );
    log(`built callbacks ${from}..${to} with their attempts in ${Math.round(performance.now() - started)} ms`);
  }
  await db.query('bench:vacuum', 'VACUUM (ANALYZE) callbacks, callback_attempts');
}

interface RoundFigures {
  callbacksPerSecond: number;
  walBytesPerCallback: number;
  fullPageImagesPerCallback: number;
}

const run: Benchmark = async ({ duration }) => {
  const total = envInt('BENCH_IDS_ROWS', 3_000_000);
  const dataDir = mkdtempSync(join(tmpdir(), 'herald-bench-callback-ids-'));
  const database = await openDatabase(loadConfig({ dataDir }, {}), { poolSize: 2 });
  removeDataDirOnCleanup(dataDir, () => database.close());
  const db = createDb(database.url, { poolSize: POOL });
  try {
    const customer = await createCustomer(db, 'bench', { mainnetAllowed: true, maxActiveSubscriptions: null, requestsPerSecond: 1_000_000 }, 10n ** 15n);
    const subscriptions: string[] = [];
    for (let i = 0; i < SUBSCRIPTIONS; i++) subscriptions.push(await insertBenchSubscription(db, customer.id, `https://localhost/cb/${i}`, 'BLOCK_MINED'));
    log(`building a log of ${total} delivered callbacks with random ids`);
    await buildLog(db, customer.id, subscriptions, total);
    const [size] = await db.query<{ callbacks: string; attempts: string }>(
      'bench:sizes',
      `SELECT pg_size_pretty(pg_total_relation_size('callbacks')) AS callbacks, pg_size_pretty(pg_total_relation_size('callback_attempts')) AS attempts`,
    );
    log(`callbacks ${size?.callbacks} with indexes, callback_attempts ${size?.attempts}`);

    let block = 0;
    const makeBlock = (kind: IdKind): NewCallback[] => {
      const n = block++;
      return Array.from({ length: PER_BLOCK }, (_, i) => ({
        id: ID_KINDS[kind](),
        customerId: customer.id,
        subscriptionId: subscriptions[(n * 37 + i * 7) % SUBSCRIPTIONS] as string,
        eventType: 'BLOCK_MINED',
        idempotencyKey: `b${n}-${i}`,
        body: BODY,
        callbackUrl: 'https://localhost/cb',
      }));
    };
    const walNow = async () => {
      const [row] = await db.query<{ lsn: string; fpi: string }>(
        'bench:wal',
        'SELECT pg_current_wal_lsn()::text AS lsn, (SELECT wal_fpi FROM pg_stat_wal)::text AS fpi',
      );
      return row as { lsn: string; fpi: string };
    };
    /** Claims up to `limit` due callbacks and records them delivered, as the worker does; gives how many. */
    const deliverDue = async (limit: number): Promise<number> => {
      const now = new Date();
      const claimed = await claimDueCallbacks(db, { now, limit, leaseMs: 60_000, skipDestinations: [] });
      await recordOutcomes(
        db,
        claimed.map((c) => ({
          callbackId: c.id,
          destination: c.destination,
          probe: c.probe,
          result: 'delivered' as const,
          nextAttemptAt: null,
          startedAt: now,
          durationMs: 3,
          httpStatus: 200,
          errorClass: null,
          errorMessage: null,
          responseBody: null,
        })),
        new Date(),
      );
      return claimed.length;
    };
    /**
     * Each backend sends its WAL statistics to pg_stat_wal at most once a second (and an idle one up to 10 s
     * later): one query per pool connection, held a moment so that each lands on its own, has every backend
     * send them now, so that a round's full-page images are not counted in the next.
     */
    const flushStats = () => Promise.all(Array.from({ length: POOL }, () => db.query('bench:stat-flush', 'SELECT pg_stat_force_next_flush(), pg_sleep(0.05)')));
    const measure = async (kind: IdKind, ms: number): Promise<RoundFigures> => {
      // A claim may leave a few callbacks of another loop's block behind: delivered here, outside the round.
      while ((await deliverDue(1_000)) > 0) {}
      await db.query('bench:checkpoint', 'CHECKPOINT');
      await flushStats();
      const wal0 = await walNow();
      let delivered = 0;
      const started = performance.now();
      const end = started + ms;
      await Promise.all(
        Array.from({ length: LOOPS }, async () => {
          while (performance.now() < end) {
            await db.transaction('bench:block', (tx) => enqueueCallbacks(tx, makeBlock(kind)));
            delivered += await deliverDue(PER_BLOCK);
          }
        }),
      );
      const seconds = (performance.now() - started) / 1000;
      await flushStats();
      const wal1 = await walNow();
      const [diff] = await db.query<{ bytes: string }>('bench:wal-diff', 'SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)::text AS bytes', [wal1.lsn, wal0.lsn]);
      return {
        callbacksPerSecond: delivered / seconds,
        walBytesPerCallback: Number(diff?.bytes) / Math.max(1, delivered),
        fullPageImagesPerCallback: (Number(wal1.fpi) - Number(wal0.fpi)) / Math.max(1, delivered),
      };
    };

    const roundMs = Math.max(5_000, (duration * 1000) / 6);
    await measure('random', 2_000); // warm-up of both
    await measure('time-ordered', 2_000);
    const rounds: Record<IdKind, RoundFigures[]> = { random: [], 'time-ordered': [] };
    for (let round = 0; round < ROUNDS; round++) {
      for (const kind of round % 2 === 0 ? (['random', 'time-ordered'] as const) : (['time-ordered', 'random'] as const)) {
        const figures = await measure(kind, roundMs);
        rounds[kind].push(figures);
        log(
          `round ${round + 1}, ${kind}: ${Math.round(figures.callbacksPerSecond)} callbacks/s, ${Math.round(figures.walBytesPerCallback)} WAL bytes and ${figures.fullPageImagesPerCallback.toFixed(2)} full-page images per callback`,
        );
      }
    }
    const summary = (kind: IdKind) => ({
      callbacksPerSecond: Math.round(median(rounds[kind].map((r) => r.callbacksPerSecond))),
      walBytesPerCallback: Math.round(median(rounds[kind].map((r) => r.walBytesPerCallback))),
      fullPageImagesPerCallback: Number(median(rounds[kind].map((r) => r.fullPageImagesPerCallback)).toFixed(2)),
      rounds: rounds[kind].map((r) => Math.round(r.callbacksPerSecond)),
    });
    const random = summary('random');
    const ordered = summary('time-ordered');
    return {
      benchmark: 'callback-ids',
      target: null,
      logRows: total,
      loops: LOOPS,
      callbacksPerBlock: PER_BLOCK,
      roundMs,
      random,
      timeOrdered: ordered,
      timeOrderedOverRandom: Number((ordered.callbacksPerSecond / random.callbacksPerSecond).toFixed(3)),
      walBytesRatio: Number((ordered.walBytesPerCallback / random.walBytesPerCallback).toFixed(3)),
    };
  } finally {
    await db.close();
  }
};

export default run;
