/**
 * The backfill benchmark. Targets (issue 14): "10,000 blocks evaluated for one subscription at >= 0.7 of
 * the bare block-fetch rate of the same node, with live following's block-to-callback latency unchanged
 * (p99 within 20 %)."
 *
 * Processes: the fake Bitcoin Core node of bench/utxo-fake-node.ts (a child; blocks rendered once, so
 * serving one is writing a buffer) with BLOCKS + LIVE blocks of TX_PER_BLOCK transactions; this process
 * runs an embedded PostgreSQL and the code under test, in process, as the ingest role runs it.
 *
 * Per run (RUNS, figures are medians):
 *   (a) bare fetch: the chain adapter's getBlock (createChainAdapter, as the service builds it: RPC,
 *       parsing, normalisation) over blocks 1..BLOCKS, CONCURRENCY at once (BlockPrefetcher): blocks/s.
 *   (b) backfill: a coin subscription to one of the chain's paid addresses with a backfill job of blocks
 *       1..BLOCKS, worked by the ingest role's runner (src/ingest/block-jobs.ts, its own adapter, the same
 *       CONCURRENCY, batches of 200): from start to the job's state done, blocks/s. Ratio (b) / (a).
 *   (c) live alone: the follower (applyNextBlock) applies blocks BLOCKS+1.. one every PACE_MS (a live
 *       chain's pace, much faster than a real one), with a BLOCK_MINED subscription so that every block
 *       enqueues a callback: the step's time, block fetch to callback committed in the outbox, p50/p99.
 *   (d) live with a backfill: (c) again while (b) runs (steps counted only while the backfill runs, and
 *       run for as long as it runs), the runner giving way to the follower's steps as in the service
 *       (src/ingest/gate.ts: nothing started during a live step, nor anything that would still run when the
 *       next one is expected), its block workers at the background priority (the service's runner adapter).
 *       p99 (d) / p99 (c) is the target's ratio.
 * The runner's adapter (and its block worker) is made and warmed once, before the runs, as the service's
 * runner keeps its adapter from its first job to the process's end: a worker thread starting under tsx
 * (compiling its TypeScript) took 0.65–2.2 s of one live step per run, a start-up the service pays once.
 * Besides the median of the runs' ratios, the p99 ratio over every run's steps pooled (a p99 of ~300 steps
 * is their 3rd slowest: the pooled one is steadier).
 * (c) and (d) also log where the time of their slowest tenth of steps went: the node's head, the block
 * (fetch and parse), the block's transaction (commit), the rest (cursor read, event loop turns); (d) also
 * the steps that started with none of the backfill's block fetches in flight against those with some, and when
 * they started against the gate's forecast of the next live block.
 * Between runs the chain state, outbox and jobs are emptied (subscriptions stay).
 *
 * Environment: BENCH_BACKFILL_BLOCKS (10000), BENCH_BACKFILL_TX_PER_BLOCK (10), BENCH_BACKFILL_RUNS (3),
 * BENCH_BACKFILL_LIVE (300 live steps alone; beside a backfill, as many as it lasts, at most 4 times that), BENCH_BACKFILL_PACE_MS (25), BENCH_BACKFILL_WORKERS (the chain's blockWorkers,
 * default the service's: each adapter, the follower's and the backfill's, reads blocks in worker threads of its
 * own), BENCH_BACKFILL_JOB_CONCURRENCY (the backfill's blocks fetched at once, blockJobs.concurrency; default
 * 8, as the bare fetch). BENCH_DURATION does not apply.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { createChainAdapter } from '../src/chains/registry.ts';
import type { ChainAdapter } from '../src/chains/types.ts';
import { type ChainConfig, DEFAULT_BLOCK_WORKERS, loadConfig } from '../src/config/config.ts';
import type { ChainKey } from '../src/domain/chains.ts';
import type { NewSubscription, Subscription } from '../src/domain/subscriptions.ts';
import { startBlockJobRunner } from '../src/ingest/block-jobs.ts';
import { applyNextBlock, type FollowerDeps } from '../src/ingest/follower.ts';
import { FollowerGate } from '../src/ingest/gate.ts';
import { BlockPrefetcher } from '../src/ingest/prefetch.ts';
import { SubscriptionIndex } from '../src/matching/index.ts';
import { createBlockJob, getBlockJob } from '../src/store/block-jobs.ts';
import { saveCursor } from '../src/store/chain-state.ts';
import { createCustomer } from '../src/store/customers.ts';
import { type OpenDatabase, openDatabase } from '../src/store/open.ts';
import { insertUnlessTwin } from '../src/store/subscriptions.ts';
import { tokenMetadataCache } from '../src/store/token-metadata.ts';
import { type Child, envInt, firstStdoutLine, log, median, percentile, removeDataDirOnCleanup, sleep, startChild } from './lib.ts';
import type { FakeUtxoNodeInfo } from './utxo-fake-node.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const FAKE_NODE = join(ROOT, 'bench', 'utxo-fake-node.ts');
const CONCURRENCY = 8;
/** A live run beside a backfill takes at most this many times BENCH_BACKFILL_LIVE steps (the fake node's blocks). */
const MAX_DURING_STEPS = 4;
const CHAIN: ChainKey = { blockchain: 'bitcoin', network: 'testnet' };
const TARGETS = { rateRatio: 0.7, p99Ratio: 1.2 };
const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits;
const silent = pino({ level: process.env.BENCH_LOG_LEVEL ?? 'silent' });

async function startFakeNode(blocks: number, txPerBlock: number): Promise<{ child: Child; info: FakeUtxoNodeInfo }> {
  const child = startChild(process.execPath, ['--max-semi-space-size=64', '--import', 'tsx', FAKE_NODE, '--child', String(blocks), String(txPerBlock)], {
    label: 'fake Bitcoin node',
  });
  return { child, info: await firstStdoutLine<FakeUtxoNodeInfo>(child, { what: 'fake Bitcoin node', timeoutMs: 900_000, intervalMs: 100 }) };
}

function subscription(id: string, eventType: 'ADDRESS_COINS_TRANSACTION_CONFIRMED' | 'BLOCK_MINED', address: string | null): NewSubscription {
  return {
    id,
    eventType,
    ...CHAIN,
    transactionId: null,
    address,
    target: address,
    receiveCallbackOn: eventType === 'BLOCK_MINED' ? null : 1,
    amountHigherThan: null,
    blockHeight: null,
    contractAddress: null,
    callbackUrl: 'https://hooks.example.com/bench',
    callbackHost: 'hooks.example.com',
    callbackSecretKey: 'bench',
    allowDuplicates: true,
    duplicateKey: Buffer.from(id.replaceAll('-', ''), 'hex'),
    apiVersion: '2021-03-20',
  };
}

/** Empties the chain state, outbox and jobs; the cursor at `height` (the live follower's start). */
async function reset(database: OpenDatabase, adapter: ChainAdapter, height: number): Promise<void> {
  await database.db.query(
    'bench:reset',
    'TRUNCATE callbacks, callback_attempts, callback_sequences, block_jobs, chain_blocks, chain_cursors, pending_events, chain_block_callbacks',
  );
  const block = await adapter.getBlock(height);
  await database.db.transaction('bench:cursor', (tx) => saveCursor(tx, CHAIN, block, height));
}

async function bareFetch(adapter: ChainAdapter, blocks: number): Promise<number> {
  const prefetch = new BlockPrefetcher(adapter, CONCURRENCY);
  const started = performance.now();
  for (let h = 1; h <= blocks; h++) await prefetch.get(h, blocks);
  return blocks / ((performance.now() - started) / 1000);
}

/**
 * The backfill runner's adapter, made and warmed once (the service's runner keeps its own from its first
 * job on); `background`: its block workers at the background priority, as the service makes it.
 */
async function runnerAdapter(chainConfig: ChainConfig & ChainKey, database: OpenDatabase, background: boolean): Promise<ChainAdapter> {
  const adapter = countingFetches(
    createChainAdapter(chainConfig, { tokenMetadataCache: tokenMetadataCache(database.db), logger: silent, background }) as ChainAdapter,
  );
  await adapter.getBlock(1);
  return adapter;
}

/** Starts a backfill job of blocks 1..blocks and its runner; resolves with blocks/s and when it ended. */
async function backfill(database: OpenDatabase, adapter: ChainAdapter, sub: Subscription, blocks: number, gate: FollowerGate) {
  const job = await database.db.transaction('bench:job', (tx) =>
    createBlockJob(tx, {
      id: randomUUID(),
      kind: 'backfill',
      customerId: sub.customerId,
      subscriptionId: sub.id,
      chain: CHAIN,
      fromHeight: 1,
      toHeight: blocks,
    }),
  );
  const started = performance.now();
  const runner = startBlockJobRunner({
    db: database.db,
    chain: CHAIN,
    createAdapter: () => ({ ...adapter, close: undefined }), // closed after the runs
    logger: silent,
    defaultConfirmations: 1,
    costs: { backfillPerCallback: 0n, replayPerCallback: 0n },
    concurrency: envInt('BENCH_BACKFILL_JOB_CONCURRENCY', CONCURRENCY),
    pollMs: 20,
    gate,
  });
  for (;;) {
    const now = await getBlockJob(database.db, sub.customerId, 'backfill', job.id);
    if (now?.state !== 'running') break;
    await sleep(20);
  }
  const seconds = (performance.now() - started) / 1000;
  await runner.stop();
  const final = await getBlockJob(database.db, sub.customerId, 'backfill', job.id);
  return { blocksPerSecond: blocks / seconds, endedAt: performance.now(), queued: final?.queued ?? 0 };
}

/** The backfill's block fetches in flight (node request and parse), read by the live steps as they start. */
const backfillFetches = { inFlight: 0 };

function countingFetches(adapter: ChainAdapter): ChainAdapter {
  return {
    ...adapter,
    close: adapter.close?.bind(adapter),
    getBlock: async (height) => {
      backfillFetches.inFlight++;
      try {
        return await adapter.getBlock(height);
      } finally {
        backfillFetches.inFlight--;
      }
    },
  };
}

/**
 * The live follower applying `steps` blocks (or, with `until`, as many as it takes for it to resolve), one
 * every paceMs: each step's milliseconds (fetch to callback committed), and when it started.
 */
async function live(
  database: OpenDatabase,
  chainConfig: ChainConfig & ChainKey,
  sub: Subscription,
  steps: number,
  paceMs: number,
  gate: FollowerGate,
  until?: Promise<unknown>,
) {
  let over = false;
  void until?.finally(() => {
    over = true;
  });
  const index = new SubscriptionIndex(CHAIN.blockchain, CHAIN.network);
  index.add({ ...sub, isActive: true });
  const deps: FollowerDeps = {
    db: database.db,
    adapter: createChainAdapter(chainConfig, { tokenMetadataCache: tokenMetadataCache(database.db), logger: silent }) as ChainAdapter,
    index: () => index,
    logger: silent,
    defaultConfirmations: 1,
  };
  // Where a step's time goes (the node's head, its block, the block's transaction; the rest is the cursor
  // read and the event loop's turns): each call of the step timed by wrapping the adapter and the database.
  const parts = { head: 0, block: 0, commit: 0 };
  const timed =
    <A extends unknown[], R>(part: keyof typeof parts, call: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      const started = performance.now();
      try {
        return await call(...args);
      } finally {
        parts[part] += performance.now() - started;
      }
    };
  const adapter = deps.adapter;
  deps.adapter = { ...adapter, getHead: timed('head', adapter.getHead.bind(adapter)), getBlock: timed('block', adapter.getBlock.bind(adapter)) };
  deps.db = { ...database.db, transaction: timed('commit', database.db.transaction.bind(database.db)) as OpenDatabase['db']['transaction'] };
  const samples: { at: number; ms: number; parts: typeof parts; backfillInFlight: number; offset: number }[] = [];
  for (let i = 0; until ? !over && i < steps * MAX_DURING_STEPS : i < steps; i++) {
    parts.head = parts.block = parts.commit = 0;
    const at = performance.now();
    const backfillInFlight = backfillFetches.inFlight;
    // How far from the gate's forecast the step started (ms; negative: early), NaN without a forecast.
    const offset = at - (gate.nextBlockAt()?.at ?? Number.NaN);
    gate.enter(); // as followChain does
    let result: Awaited<ReturnType<typeof applyNextBlock>> | undefined;
    try {
      result = await applyNextBlock(deps, CHAIN);
    } finally {
      gate.leave(result?.kind === 'applied');
    }
    if (result.kind !== 'applied' || result.enqueued !== 1) throw new Error(`live step: ${JSON.stringify(result)}`);
    const ms = performance.now() - at;
    samples.push({ at, ms, parts: { ...parts }, backfillInFlight, offset });
    await sleep(Math.max(0, paceMs - ms));
  }
  await adapter.close?.();
  return samples;
}

/**
 * The steps that started with none of the backfill's fetches in flight against those that started with some: how
 * many, p50, p90, and when they started against the gate's forecast of them (p10/p50/p90 of the offset, ms;
 * negative: early; "no forecast": the first steps).
 */
function byInFlight(samples: { ms: number; backfillInFlight: number; offset: number }[]): string {
  const describe = (group: typeof samples) => {
    const ms = group.map((s) => s.ms);
    const offsets = group.map((s) => s.offset).filter((o) => !Number.isNaN(o));
    const when =
      offsets.length === 0
        ? 'no forecast'
        : `started ${round(p(offsets, 10), 1)} / ${round(p(offsets, 50), 1)} / ${round(p(offsets, 90), 1)} ms from the forecast (p10/p50/p90), ${group.length - offsets.length} without one`;
    return group.length === 0 ? 'none' : `${group.length} steps, p50 ${round(p(ms, 50), 1)} ms, p90 ${round(p(ms, 90), 1)} ms, ${when}`;
  };
  return `started with no backfill fetch in flight: ${describe(samples.filter((s) => s.backfillInFlight === 0))}; with some: ${describe(samples.filter((s) => s.backfillInFlight > 0))}`;
}

/** The mean of each part of the steps at or above the p90 step time (where the p99 comes from), ms. */
function slowParts(samples: { ms: number; parts: Record<string, number> }[]): Record<string, number> {
  const p90 = p(
    samples.map((x) => x.ms),
    90,
  );
  const slow = samples.filter((s) => s.ms >= p90);
  const mean = (f: (s: (typeof slow)[number]) => number) => round(slow.reduce((a, s) => a + f(s), 0) / slow.length, 1);
  const parts = Object.keys(slow[0]?.parts ?? {});
  const step = mean((s) => s.ms);
  const out: Record<string, number> = { step };
  for (const k of parts) out[k] = mean((s) => s.parts[k] ?? 0);
  out.rest = round(step - parts.reduce((a, k) => a + (out[k] ?? 0), 0), 1);
  return out;
}

const p = (values: number[], q: number) =>
  percentile(
    [...values].sort((a, b) => a - b),
    q,
  ) as number;

export default async function backfillBenchmark(): Promise<Record<string, unknown>> {
  const blocks = envInt('BENCH_BACKFILL_BLOCKS', 10_000);
  const txPerBlock = envInt('BENCH_BACKFILL_TX_PER_BLOCK', 10);
  const runs = envInt('BENCH_BACKFILL_RUNS', 3);
  const liveSteps = envInt('BENCH_BACKFILL_LIVE', 300);
  const paceMs = envInt('BENCH_BACKFILL_PACE_MS', 25);
  // 0 (blocks read on the main thread, as before workers) is a valid setting, which envInt refuses.
  const blockWorkers = Number(process.env.BENCH_BACKFILL_WORKERS || DEFAULT_BLOCK_WORKERS);
  if (!Number.isInteger(blockWorkers) || blockWorkers < 0)
    throw new Error(`BENCH_BACKFILL_WORKERS must be 0 or more, not '${process.env.BENCH_BACKFILL_WORKERS}'.`);
  const dataDir = mkdtempSync(join(tmpdir(), 'herald-bench-backfill-'));
  let database: OpenDatabase | undefined;
  removeDataDirOnCleanup(dataDir, () => database?.embedded?.stop());
  const chainBlocks = blocks + liveSteps * (MAX_DURING_STEPS + 1) + 5;
  log(`rendering ${chainBlocks} blocks of ${txPerBlock} transactions in the fake node (child process) ...`);
  const [{ info }, opened] = await Promise.all([
    startFakeNode(chainBlocks, txPerBlock),
    openDatabase({ ...loadConfig({ dataDir }, {}), databasePoolSize: 10 }),
  ]);
  database = opened;
  const chainConfig = {
    ...CHAIN,
    rpcUrl: info.url,
    rpcUser: info.user,
    rpcPassword: info.password,
    concurrency: CONCURRENCY,
    requestTimeoutMs: 30_000,
    pollIntervalMs: 1000,
    blockWorkers,
  };
  const adapter = createChainAdapter(chainConfig, { tokenMetadataCache: tokenMetadataCache(database.db), logger: silent }) as ChainAdapter;
  const customer = await createCustomer(database.db, 'bench', { mainnetAllowed: true, maxActiveSubscriptions: null, requestsPerSecond: 1000 }, 0n);
  // An address paid in the chain (the paid-address sample needs larger blocks), one callback or more.
  const address = info.paidAddresses[0] ?? ((await adapter.getBlock(Math.ceil(blocks / 2))).coinMovements.find((m) => m.delta > 0n)?.address as string);
  const coins = (await insertUnlessTwin(database.db, customer.id, subscription(randomUUID(), 'ADDRESS_COINS_TRANSACTION_CONFIRMED', address))) as Subscription;
  const mined = (await insertUnlessTwin(database.db, customer.id, subscription(randomUUID(), 'BLOCK_MINED', null))) as Subscription;

  const gate = new FollowerGate();
  const runnerAdapterNow = await runnerAdapter(chainConfig, database, true);
  await bareFetch(adapter, Math.min(500, blocks)); // warm-up (JIT, connections), not counted
  type Samples = Awaited<ReturnType<typeof live>>;
  const figures: {
    bare: number;
    backfill: number;
    queued: number;
    liveP50: number;
    liveP99: number;
    withP50: number;
    withP99: number;
    withSteps: number;
  }[] = [];
  const pooled: { alone: number[]; during: number[] } = { alone: [], during: [] };
  /** (d): live steps while a backfill of the whole range runs; the samples taken while it ran. */
  const during = async (runnerGate: FollowerGate, runnerAdapterOf: ChainAdapter, label: string, run: number): Promise<Samples> => {
    await reset(database as OpenDatabase, adapter, blocks);
    const job = backfill(database as OpenDatabase, runnerAdapterOf, coins, blocks, runnerGate);
    const samples = await live(database as OpenDatabase, chainConfig, mined, liveSteps, paceMs, runnerGate, job);
    const { endedAt, blocksPerSecond } = await job;
    const duringSamples = samples.filter((s) => s.at < endedAt);
    const ms = duringSamples.map((s) => s.ms);
    log(
      `run ${run}: ${label} p50 ${round(p(ms, 50), 1)} ms, p90 ${round(p(ms, 90), 1)} ms, p99 ${round(p(ms, 99), 1)} ms over ${ms.length} steps (the backfill ${round(blocksPerSecond, 0)} blocks/s); ` +
        `slowest tenth ${JSON.stringify(slowParts(duringSamples))}; ${byInFlight(duringSamples)}`,
    );
    return duringSamples;
  };
  for (let run = 1; run <= runs; run++) {
    const bare = await bareFetch(adapter, blocks);
    log(`run ${run}: (a) bare fetch ${round(bare, 0)} blocks/s`);
    await reset(database, adapter, blocks);
    const alone = await backfill(database, runnerAdapterNow, coins, blocks, gate);
    log(`run ${run}: (b) backfill ${round(alone.blocksPerSecond, 0)} blocks/s, ${alone.queued} callbacks queued, ratio ${round(alone.blocksPerSecond / bare)}`);
    await reset(database, adapter, blocks);
    const aloneSamples = await live(database, chainConfig, mined, liveSteps, paceMs, gate);
    const liveAlone = aloneSamples.map((s) => s.ms);
    log(
      `run ${run}: (c) live alone p50 ${round(p(liveAlone, 50), 1)} ms, p90 ${round(p(liveAlone, 90), 1)} ms, p99 ${round(p(liveAlone, 99), 1)} ms; slowest tenth ${JSON.stringify(slowParts(aloneSamples))}`,
    );
    const withSamples = await during(gate, runnerAdapterNow, '(d) live during a backfill', run);
    const withBackfill = withSamples.map((s) => s.ms);
    pooled.alone.push(...liveAlone);
    pooled.during.push(...withBackfill);
    figures.push({
      bare,
      backfill: alone.blocksPerSecond,
      queued: alone.queued,
      liveP50: p(liveAlone, 50),
      liveP99: p(liveAlone, 99),
      withP50: p(withBackfill, 50),
      withP99: p(withBackfill, 99),
      withSteps: withBackfill.length,
    });
  }
  await adapter.close?.();
  await runnerAdapterNow.close?.();
  const m = (f: (x: (typeof figures)[number]) => number) => median(figures.map(f));
  const rateRatio = m((f) => f.backfill / f.bare);
  const p99Ratio = m((f) => f.withP99 / f.liveP99);
  const pooledP99 = { alone: p(pooled.alone, 99), during: p(pooled.during, 99) };
  return {
    benchmark: 'backfill',
    blocks,
    txPerBlock,
    runs,
    concurrency: CONCURRENCY,
    backfillConcurrency: envInt('BENCH_BACKFILL_JOB_CONCURRENCY', CONCURRENCY),
    blockWorkers,
    bareFetchBlocksPerSecond: round(
      m((f) => f.bare),
      0,
    ),
    backfillBlocksPerSecond: round(
      m((f) => f.backfill),
      0,
    ),
    backfillCallbacksQueued: m((f) => f.queued),
    rateRatio: round(rateRatio),
    rateRatioPerRun: figures.map((f) => round(f.backfill / f.bare)),
    liveAloneMs: {
      p50: round(
        m((f) => f.liveP50),
        1,
      ),
      p99: round(
        m((f) => f.liveP99),
        1,
      ),
    },
    liveDuringBackfillMs: {
      p50: round(
        m((f) => f.withP50),
        1,
      ),
      p99: round(
        m((f) => f.withP99),
        1,
      ),
      steps: m((f) => f.withSteps),
    },
    p99Ratio: round(p99Ratio),
    p99RatioPerRun: figures.map((f) => round(f.withP99 / f.liveP99)),
    pooled: {
      steps: { alone: pooled.alone.length, during: pooled.during.length },
      p99Ms: { alone: round(pooledP99.alone, 1), during: round(pooledP99.during, 1) },
      p99Ratio: round(pooledP99.during / pooledP99.alone),
    },
    targets: TARGETS,
    met: { rate: rateRatio >= TARGETS.rateRatio, latency: p99Ratio <= TARGETS.p99Ratio },
    loadAverage: loadavg().map((l) => round(l)),
  };
}
