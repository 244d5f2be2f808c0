/**
 * The capacity model of docs/operations/production-topology.md ("Capacity model") (issue 12, point 8): per-process figures
 * measured here, turned into how many processes and PostgreSQL cores a deployment needs.
 *
 * It runs three of the other benchmarks and reads their CPU samples (each process's share of one core,
 * from /proc, over the measured window):
 *   - api (subscribe, endpoint 1): the server's CPU and PostgreSQL's per request;
 *   - delivery (the 50,000-callback throughput phase): the worker's CPU and PostgreSQL's per callback;
 *   - utxo-block part (b) (catch-up of blocks of 2,000 transactions, 100,000 subscriptions, 400 watched
 *     addresses): the ingest process's CPU and PostgreSQL's per block.
 * CPU per unit of work, not throughput, is what the model is built on: on a shared 2-core machine a
 * process's throughput says how busy the machine was, while the CPU seconds a request costs hardly
 * change with load. The model then assumes processes run at HEADROOM of a core and PostgreSQL at
 * HEADROOM of its cores, so a deployment sized by it has room for spikes and the rest of the machine.
 *
 * Environment: BENCH_DURATION (the api loads, default 10 s); BENCH_UTXO_BLOCKS (default 200 here) and
 * BENCH_UTXO_RUNS (default 1 here) for the block part.
 */
import type { Benchmark } from './run.ts';

/** The share of a core (or of PostgreSQL's cores) the model lets a process use. */
const HEADROOM = 0.6;
const SCENARIO = { subscriptions: 10_000_000, sustainedCallbacksPerSecond: 1_000, burstCallbacksPerSecond: 20_000, apiRequestsPerSecond: 2_000 };
/** Bytes per subscription of the matching index (the matching benchmark's mix): every ingest process holds the whole index. */
const INDEX_BYTES_PER_SUBSCRIPTION = 143;

const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits;
const cores = (cpuPct: Record<string, number>, key: string) => (cpuPct[key] ?? 0) / 100;

interface UnitCost {
  /** Units per second measured. */
  rate: number;
  /** CPU milliseconds of the herald process per unit. */
  processMs: number;
  /** CPU milliseconds of PostgreSQL per unit. */
  postgresMs: number;
  /** Units per second one core of the herald process gives. */
  perCore: number;
}

function unitCost(rate: number, cpuPct: Record<string, number>, processKey: string): UnitCost {
  const processCores = cores(cpuPct, processKey);
  return {
    rate: round(rate, 1),
    processMs: round((processCores / rate) * 1000, 3),
    postgresMs: round((cores(cpuPct, 'postgres') / rate) * 1000, 3),
    perCore: Math.round(rate / processCores),
  };
}

const capacity: Benchmark = async (options) => {
  process.env.BENCH_UTXO_PART = 'b';
  process.env.BENCH_UTXO_BLOCKS ??= '200';
  process.env.BENCH_UTXO_RUNS ??= '1';
  const api = (await (await import('./api.ts')).default(options)) as { subscribe: { rps: number; cpuPct: Record<string, number> } };
  const delivery = (await (await import('./delivery.ts')).default(options)) as {
    throughput: { callbacksPerSecond: number; cpuPct: Record<string, number> };
  };
  const utxo = (await (await import('./utxo-block.ts')).default()) as {
    catchUp: { chain: { transactionsPerBlock: number }; service: { runs: { blocksPerSecond: number; cpuPct: Record<string, number> }[] } };
  };

  const subscribe = unitCost(api.subscribe.rps, api.subscribe.cpuPct, 'server');
  const callback = unitCost(delivery.throughput.callbacksPerSecond, delivery.throughput.cpuPct, 'worker');
  const run = utxo.catchUp.service.runs[0] as { blocksPerSecond: number; cpuPct: Record<string, number> };
  const block = unitCost(run.blocksPerSecond, run.cpuPct, 'service');

  // Processes at HEADROOM of a core each; PostgreSQL cores at HEADROOM.
  const processes = (rate: number, cost: UnitCost) => Math.max(1, Math.ceil(rate / (cost.perCore * HEADROOM)));
  const postgresCores = (rate: number, cost: UnitCost) => round((rate * cost.postgresMs) / 1000 / HEADROOM, 1);
  const model = {
    assumptions: { headroom: HEADROOM, ...SCENARIO, indexBytesPerSubscription: INDEX_BYTES_PER_SUBSCRIPTION },
    apiProcesses: processes(SCENARIO.apiRequestsPerSecond, subscribe),
    deliveryProcessesSustained: processes(SCENARIO.sustainedCallbacksPerSecond, callback),
    deliveryProcessesBurst: processes(SCENARIO.burstCallbacksPerSecond, callback),
    postgresCoresSustained: round(postgresCores(SCENARIO.sustainedCallbacksPerSecond, callback) + postgresCores(SCENARIO.apiRequestsPerSecond, subscribe), 1),
    postgresCoresBurst: postgresCores(SCENARIO.burstCallbacksPerSecond, callback),
    /** Callbacks/s a PostgreSQL server of 16 cores carries (delivery alone): where partitioning by chain or a second cluster comes in. */
    callbacksPerSecondOn16PostgresCores: Math.round((16 * HEADROOM * 1000) / callback.postgresMs),
    ingestIndexMegabytes: Math.round((SCENARIO.subscriptions * INDEX_BYTES_PER_SUBSCRIPTION) / 1e6),
  };
  return {
    bench: 'capacity',
    measured: { subscribe, callback, block: { ...block, transactionsPerBlock: utxo.catchUp.chain.transactionsPerBlock } },
    model,
  };
};

export default capacity;
