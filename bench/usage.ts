/**
 * The cost of recording credit usage (issue 13): debitCredits now adds the call to credit_usage in the
 * debit's own statement. Compared in the same run with the debit statement it replaced (no usage), as
 * the API makes it: autocommit, one statement per charge.
 *
 * One embedded PostgreSQL in a fresh temporary data directory (opened and migrated with the store code),
 * a pool of 8 connections, 16 concurrent loops, two workloads:
 *   - spread: one customer per loop (debits never wait on each other's row lock);
 *   - one customer: every loop debits the same customer (the row lock serialises them; what the
 *     CreditCharger's group commit exists for).
 * Rounds of BENCH_DURATION / 10 seconds (at least 0.5 s), alternating the two statements, five rounds
 * each per workload; figures are the medians of debits per second and the ratio with usage / without.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/config/config.ts';
import { createCustomer, debitCredits } from '../src/store/customers.ts';
import { createDb, type Db } from '../src/store/db.ts';
import { openDatabase } from '../src/store/open.ts';
import { log, median, removeDataDirOnCleanup } from './lib.ts';
import type { Benchmark } from './run.ts';

const ROUNDS = 5;
const LOOPS = 16;
const POOL = 8;
const ENDPOINTS = ['get-subscription', 'transaction-mined', 'callbacks'];

/** The debit statement before usage was recorded (src/store/customers.ts up to migration 018). */
async function plainDebit(db: Db, customerId: string, cost: bigint): Promise<void> {
  await db.query(
    'bench:plain-debit',
    `WITH d AS (UPDATE customers SET credits = credits - $2 WHERE id = $1 AND credits >= $2 RETURNING credits)
     SELECT coalesce((SELECT credits FROM d), (SELECT credits FROM customers WHERE id = $1), 0) AS credits, EXISTS (SELECT 1 FROM d) AS debited`,
    [customerId, String(cost)],
  );
}

const run: Benchmark = async ({ duration }) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'herald-bench-usage-'));
  const database = await openDatabase(loadConfig({ dataDir }, {}), { poolSize: 2 });
  removeDataDirOnCleanup(dataDir, () => database.close());
  const customers: string[] = [];
  for (let i = 0; i < LOOPS; i++) {
    customers.push(
      (await createCustomer(database.db, `bench-${i}`, { mainnetAllowed: true, maxActiveSubscriptions: null, requestsPerSecond: 100 }, 10n ** 15n)).id,
    );
  }
  const db = createDb(database.url, { poolSize: POOL, preparedStatements: true });
  const roundMs = Math.max(500, (duration * 1000) / 10);
  const figures: Record<string, unknown> = {};
  try {
    for (const [workload, customerOf] of [
      ['spread', (loop: number) => customers[loop] as string],
      ['one customer', () => customers[0] as string],
    ] as const) {
      const statements = {
        plain: (loop: number) => plainDebit(db, customerOf(loop), 1n),
        usage: (loop: number, n: number) =>
          debitCredits(db, customerOf(loop), 1n, [{ endpoint: ENDPOINTS[n % ENDPOINTS.length] as string, requests: 1, credits: 1n }]).then(() => undefined),
      };
      const rates: Record<keyof typeof statements, number[]> = { plain: [], usage: [] };
      for (const mode of ['plain', 'usage'] as const) await measure(statements[mode], 200); // warm-up: connections, plans
      for (let round = 0; round < ROUNDS; round++) {
        const order: (keyof typeof statements)[] = round % 2 === 0 ? ['plain', 'usage'] : ['usage', 'plain'];
        for (const mode of order) rates[mode].push(await measure(statements[mode], roundMs));
      }
      const plain = median(rates.plain);
      const usage = median(rates.usage);
      log(`${workload}: without usage ${Math.round(plain)}/s, with usage ${Math.round(usage)}/s (ratio ${(usage / plain).toFixed(3)})`);
      figures[workload] = { plainPerSecond: Math.round(plain), usagePerSecond: Math.round(usage), usageOverPlain: Number((usage / plain).toFixed(3)) };
    }
  } finally {
    await db.close();
  }
  return { benchmark: 'usage', target: null, loops: LOOPS, poolSize: POOL, roundMs, rounds: ROUNDS, ...figures };
};

/** Debits per second of LOOPS concurrent loops running `work` for `ms`. */
async function measure(work: (loop: number, n: number) => Promise<void>, ms: number): Promise<number> {
  let done = 0;
  const started = performance.now();
  const until = started + ms;
  await Promise.all(
    Array.from({ length: LOOPS }, async (_, loop) => {
      for (let n = 0; performance.now() < until; n++) {
        await work(loop, n);
        done++;
      }
    }),
  );
  return done / ((performance.now() - started) / 1000);
}

export default run;
