/**
 * Benchmark entry: `npm run bench -- <name>...` runs the named benchmarks, `npm run bench` runs all.
 * Each benchmark logs progress to stderr and ends with ONE JSON line of figures on stdout, also appended
 * to bench/results/<name>.jsonl with the date, the commit, the machine and its load (bench/results.ts).
 * BENCH_DURATION sets the seconds of each measured load (default 10).
 *
 * To add a benchmark: a module under bench/ whose default export is a Benchmark, and a line below.
 */
import { benchDuration, log, runCleanups } from './lib.ts';
import { appendResult, runContext } from './results.ts';

export type Benchmark = (options: { duration: number }) => Promise<Record<string, unknown>>;

const BENCHMARKS: Record<string, () => Promise<{ default: Benchmark }>> = {
  api: () => import('./api.ts'),
  bulk: () => import('./bulk.ts'),
  capacity: () => import('./capacity.ts'),
  console: () => import('./console.ts'),
  delivery: () => import('./delivery.ts'),
  'delivery-outage': () => import('./delivery-outage.ts'),
  'e2e-latency': () => import('./e2e-latency.ts'),
  'event-stream': () => import('./event-stream.ts'),
  'evm-ingest': () => import('./evm-ingest.ts'),
  matching: () => import('./matching.ts'),
  mempool: () => import('./mempool.ts'),
  'queue-stats': () => import('./queue-stats.ts'),
  recovery: () => import('./recovery.ts'),
  retention: () => import('./retention.ts'),
  'tron-block': () => import('./tron-block.ts'),
  'utxo-block': () => import('./utxo-block.ts'),
  'xrp-ledger': () => import('./xrp-ledger.ts'),
  'xpub-scale': () => import('./xpub-scale.ts'),
  backfill: () => import('./backfill.ts'),
  'xpub-past-use': () => import('./xpub-past-use.ts'),
  'wallet-keys': () => import('./wallet-keys.ts'),
};

const names = process.argv.slice(2).filter((a) => a !== '--');
const unknown = names.filter((n) => !Object.hasOwn(BENCHMARKS, n));
if (unknown.length > 0) {
  process.stderr.write(
    `bench: unknown benchmark${unknown.length > 1 ? 's' : ''} ${unknown.map((n) => `'${n}'`).join(', ')}. Known: ${Object.keys(BENCHMARKS).join(', ')}.\n`,
  );
  process.stderr.write('usage: npm run bench -- [name...]   (no name: run them all)\n');
  process.exit(2);
}

let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    log(`${signal}: stopping the processes started by the benchmark`);
    void runCleanups().finally(() => process.exit(130));
  });
}

let duration: number;
try {
  duration = benchDuration();
} catch (error) {
  process.stderr.write(`bench: ${(error as Error).message}\n`);
  process.exit(2);
}

let failed = false;
for (const name of names.length > 0 ? names : Object.keys(BENCHMARKS)) {
  const load = BENCHMARKS[name] as () => Promise<{ default: Benchmark }>;
  log(`=== ${name} ===`);
  try {
    const context = runContext();
    const figures = await (await load()).default({ duration });
    process.stdout.write(`${JSON.stringify(figures)}\n`);
    // Every run's figures, appended: the docs show the latest; the file keeps the history.
    appendResult(name, context, figures);
  } catch (error) {
    failed = true;
    process.stderr.write(`bench ${name} failed: ${(error as Error).stack ?? String(error)}\n`);
  } finally {
    await runCleanups();
  }
}
process.exit(failed ? 1 : 0);
