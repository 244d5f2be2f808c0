/**
 * The statement-naming benchmark (issue 12, point 3): what named prepared statements save over unnamed
 * ones, which a pooler in transaction mode (PgBouncer 1.18) requires. A measurement behind a decision,
 * without a target: unnamed statements cost about half the throughput here (0.53-0.71 in our runs on
 * 2 shared cores; the server parses and plans every statement again), so named statements stay the
 * default and `databasePreparedStatements: false` is for installs behind a transaction-mode pooler.
 *
 * One embedded PostgreSQL in a fresh temporary data directory (opened and migrated with the store code),
 * two pools of 8 connections on it through the store wrapper, one naming its statements and one not, and
 * 16 concurrent loops per workload, all through the store's own query functions:
 *   - key: findKeyOwner, the API's key lookup (a join), as on a cache miss;
 *   - block: one transaction as a follower's step makes them (lockChain, getCursor, saveNodeHead) plus a
 *     credit debit (debitCredits), i.e. BEGIN, four parameterised statements, COMMIT.
 * Rounds of BENCH_DURATION / 10 seconds (at least 0.5 s), alternating the two pools, five rounds each per
 * workload; figures are the medians of operations per second, and the ratio unnamed / named.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/config/config.ts';
import { type ChainKey, getCursor, lockChain, saveNodeHead } from '../src/store/chain-state.ts';
import { createApiKey, createCustomer, debitCredits, findKeyOwner } from '../src/store/customers.ts';
import { createDb, type Db } from '../src/store/db.ts';
import { openDatabase } from '../src/store/open.ts';
import { log, median, removeDataDirOnCleanup } from './lib.ts';
import type { Benchmark } from './run.ts';

const ROUNDS = 5;
const LOOPS = 16;
const POOL = 8;

type Workload = (db: Db, loop: number) => Promise<void>;

const run: Benchmark = async ({ duration }) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'herald-bench-statements-'));
  const database = await openDatabase(loadConfig({ dataDir }, {}), { poolSize: 2 });
  removeDataDirOnCleanup(dataDir, () => database.close());
  // One customer per loop: the debits do not queue on one row's lock.
  const customers: { id: string }[] = [];
  for (let i = 0; i < LOOPS; i++) {
    customers.push(await createCustomer(database.db, `bench-${i}`, { mainnetAllowed: true, maxActiveSubscriptions: null, requestsPerSecond: 100 }, 10n ** 15n));
  }
  const { key } = await createApiKey(database.db, (customers[0] as { id: string }).id);
  const chains: ChainKey[] = ['ethereum', 'polygon', 'bitcoin', 'litecoin'].flatMap((blockchain) =>
    ['mainnet', 'testnet'].map((network) => ({ blockchain, network }) as ChainKey),
  );

  const workloads: Record<string, Workload> = {
    key: async (db) => {
      if (!(await findKeyOwner(db, key))) throw new Error('the key was not found');
    },
    block: async (db, loop) => {
      const chain = chains[loop % chains.length] as ChainKey; // two loops per chain: they take turns on its lock, as followers would
      await db.transaction('bench:block', async (tx) => {
        await lockChain(tx, chain);
        await getCursor(tx, chain);
        await saveNodeHead(tx, chain, loop);
        await debitCredits(tx, (customers[loop] ?? customers[0])?.id as string, 1n, [{ endpoint: 'bench', requests: 1, credits: 1n }]);
      });
    },
  };

  const pools = {
    named: createDb(database.url, { poolSize: POOL, preparedStatements: true }),
    unnamed: createDb(database.url, { poolSize: POOL, preparedStatements: false }),
  };
  const roundMs = Math.max(500, (duration * 1000) / 10);
  const figures: Record<string, unknown> = {};
  try {
    for (const [name, work] of Object.entries(workloads)) {
      const rates: Record<keyof typeof pools, number[]> = { named: [], unnamed: [] };
      for (const mode of ['named', 'unnamed'] as const) await measure(pools[mode], work, 200); // warm-up: connections, plans
      for (let round = 0; round < ROUNDS; round++) {
        const order: (keyof typeof pools)[] = round % 2 === 0 ? ['named', 'unnamed'] : ['unnamed', 'named'];
        for (const mode of order) {
          rates[mode].push(await measure(pools[mode], work, roundMs));
        }
      }
      const named = median(rates.named);
      const unnamed = median(rates.unnamed);
      const ratio = unnamed / named;
      log(`${name}: named ${Math.round(named)}/s, unnamed ${Math.round(unnamed)}/s (ratio ${ratio.toFixed(3)})`);
      figures[name] = { namedPerSecond: Math.round(named), unnamedPerSecond: Math.round(unnamed), unnamedOverNamed: Number(ratio.toFixed(3)) };
    }
  } finally {
    await Promise.all(Object.values(pools).map((p) => p.close()));
  }
  return { benchmark: 'db-statements', target: null, loops: LOOPS, poolSize: POOL, roundMs, rounds: ROUNDS, ...figures };
};

/** Operations per second of LOOPS concurrent loops running `work` for `ms`. */
async function measure(db: Db, work: Workload, ms: number): Promise<number> {
  let done = 0;
  const started = performance.now();
  const until = started + ms;
  await Promise.all(
    Array.from({ length: LOOPS }, async (_, loop) => {
      while (performance.now() < until) {
        await work(db, loop);
        done++;
      }
    }),
  );
  return done / ((performance.now() - started) / 1000);
}

export default run;
