/**
 * The mempool burst (issue 15's second target): "a burst of 20,000 pending transactions (fake Bitcoin-family
 * node) matched against 1,000,000 subscriptions: >= 5,000 transactions/s on one core, block following
 * unaffected (its catch-up rate within 10 % of a run without the burst)".
 *
 * Processes: the fake Bitcoin Core of bench/utxo-fake-node.ts (a child of its own) renders a chain of
 * WARMUP + 2 x SEGMENT blocks of 2,000 transactions (as utxo-block (b)) and two bursts of 20,000 pending
 * transactions made as the next blocks' would be (chains of unconfirmed spends, Core's getrawtransaction
 * verbose form). This process owns the embedded PostgreSQL; a template database holds 1,000,000
 * bitcoin/testnet subscriptions inserted by SQL: 800,000 address-coins-transactions-unconfirmed and 200,000
 * address-coins-transactions (confirmed), of which 4,000 of each are on the payment address of one pending
 * transaction in ten (so the bursts queue callbacks), the rest on addresses nobody pays. The service under
 * test is `herald serve --roles ingest` (the block follower and the mempool reader in one process, as in
 * production) on a fresh copy of that template per run, `pollIntervalMs` and `mempoolPollIntervalMs` 250.
 *
 * One run, one service process:
 * 1. warm-up: the node serves blocks 1..WARMUP and an empty mempool; the service loads its index and
 *    catches up (not measured: start-up, JIT);
 * 2. the first burst alone (the tip does not move): the mempool path's own rate and CPU;
 * 3. baseline: the tip moves to WARMUP + SEGMENT; the follower catches up SEGMENT blocks, no burst;
 * 4. the tip moves up SEGMENT blocks more AND the second burst is listed, at once: the follower catches up
 *    while the mempool reader reads, matches and commits the burst (behind the blocks: it gives way to them).
 * Mempool rate = 20,000 / (the node's first getrawmempool answer with the burst -> the moment this bench
 * sees all of it in mempool_seen, polled every 20 ms); the CPU of the service and of PostgreSQL over that
 * window, so also transactions per CPU-second ("on one core": the machine is shared, the wall rate is what
 * the scheduler gave). Follower rate = blocks / time between cursor commits (chain_cursors.updated_at,
 * polled every 20 ms) within the segment; "during the burst" counts only the commits inside the burst's
 * window. Medians of RUNS runs; the load average is reported.
 *
 * Selected by `BENCH_MEMPOOL_PART=burst` (`latency` for the latency part alone; both by default).
 * BENCH_MEMPOOL_RUNS (3), BENCH_MEMPOOL_SEGMENT (blocks, 60), BENCH_MEMPOOL_BURST (20000) change the work;
 * BENCH_SERVER_NODE_ARGS adds node arguments for the service (e.g. '--cpu-prof --cpu-prof-dir=/tmp/prof');
 * BENCH_MEMPOOL_CATCH_UP_YIELD_MS sets the chain's mempoolCatchUpYieldMs (0: the mempool takes every gap
 * between two blocks, as before that setting).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { loadConfig } from '../src/config/config.ts';
import { validateAddress } from '../src/domain/addresses.ts';
import { createCustomer } from '../src/store/customers.ts';
import { type OpenDatabase, openDatabase } from '../src/store/open.ts';
import {
  type Child,
  databaseUrl,
  envInt,
  firstStdoutLine,
  HERALD,
  isAlive,
  log,
  machineBusySeconds,
  measureCpu,
  median,
  postmasterPid,
  processCpuSeconds,
  ROOT,
  removeDataDirOnCleanup,
  runCleanups,
  sampleRss,
  sleep,
  startChild,
  treeCpuSeconds,
} from './lib.ts';
import type { FakeMempoolStats, FakeUtxoNodeInfo } from './utxo-fake-node.ts';

const FAKE_NODE = join(ROOT, 'bench', 'utxo-fake-node.ts');
const CHAIN = { blockchain: 'bitcoin', network: 'testnet' } as const;
const TX_PER_BLOCK = 2000;
const WARMUP_BLOCKS = 20;
const SUBSCRIPTIONS = { unconfirmed: 800_000, confirmed: 200_000 };
const POLL_MS = 250;
const SAMPLE_MS = 20;
const TARGETS = { transactionsPerSecond: 5000, followerRatio: 0.9 };

const round = (n: number, digits = 3) => Math.round(n * 10 ** digits) / 10 ** digits;

interface Rpc {
  call<T>(method: string, params?: unknown[]): Promise<T>;
}

function nodeRpc(info: FakeUtxoNodeInfo): Rpc {
  const authorization = `Basic ${Buffer.from(`${info.user}:${info.password}`).toString('base64')}`;
  return {
    async call<T>(method: string, params: unknown[] = []) {
      const response = await fetch(info.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization },
        body: JSON.stringify({ jsonrpc: '1.0', id: 1, method, params }),
      });
      const answer = (await response.json()) as { result: T; error: { message: string } | null };
      if (answer.error) throw new Error(`${method}: ${answer.error.message}`);
      return answer.result;
    },
  };
}

async function seed(database: OpenDatabase, info: FakeUtxoNodeInfo): Promise<Record<string, number>> {
  const started = performance.now();
  const db = database.db;
  const customer = await createCustomer(db, 'bench', { mainnetAllowed: true, maxActiveSubscriptions: null, requestsPerSecond: 1_000_000 }, 10n ** 15n);
  const paid = info.mempoolPaidAddresses;
  // The paid addresses as the API would store them (one unconfirmed and, for the first ones, one confirmed
  // subscription each), by unnest; the others, by generate_series on addresses nobody pays (the index
  // compares strings: they need not be valid).
  const normalized = paid.map((a) => {
    const v = validateAddress(CHAIN.blockchain, CHAIN.network, a);
    return v.ok ? v.normalized : a;
  });
  const confirmedPaid = paid.slice(0, Math.min(paid.length, SUBSCRIPTIONS.confirmed));
  const COLUMNS = `id, customer_id, event_type, blockchain, network, address, target, receive_callback_on,
    callback_url, callback_host, callback_secret_key, allow_duplicates, duplicate_key, api_version`;
  await db.transaction('bench:seed-subscriptions', async (tx) => {
    // No announcement per row: nobody listens yet.
    await tx.query('bench:replica', 'SET LOCAL session_replication_role = replica');
    await tx.query(
      'bench:insert-paid-subscriptions',
      `INSERT INTO subscriptions (${COLUMNS})
       SELECT gen_random_uuid(), $1, event_type, $2, $3, address, target, receive_on,
         'https://hooks.example.com/bench/paid/' || n, 'hooks.example.com', 'bench-secret', true, sha256(int8send(n) || convert_to(event_type, 'UTF8')), '2021-03-20'
       FROM unnest($4::text[], $5::text[], $6::text[], $7::int[]) WITH ORDINALITY AS s (event_type, address, target, receive_on, n)`,
      [
        customer.id,
        CHAIN.blockchain,
        CHAIN.network,
        [...paid.map(() => 'ADDRESS_COINS_TRANSACTION_UNCONFIRMED'), ...confirmedPaid.map(() => 'ADDRESS_COINS_TRANSACTION_CONFIRMED')],
        [...paid, ...confirmedPaid],
        [...normalized, ...normalized.slice(0, confirmedPaid.length)],
        [...paid.map(() => null), ...confirmedPaid.map((_, i) => 1 + (i % 5))],
      ],
    );
    for (const [eventType, count, offset] of [
      ['ADDRESS_COINS_TRANSACTION_UNCONFIRMED', SUBSCRIPTIONS.unconfirmed - paid.length, 0],
      ['ADDRESS_COINS_TRANSACTION_CONFIRMED', SUBSCRIPTIONS.confirmed - confirmedPaid.length, 2_000_000],
    ] as const) {
      await tx.query(
        'bench:insert-idle-subscriptions',
        `INSERT INTO subscriptions (${COLUMNS})
         SELECT gen_random_uuid(), $1, $4, $2, $3, a, a, CASE WHEN $4 = 'ADDRESS_COINS_TRANSACTION_CONFIRMED' THEN 1 + i % 5 END,
           'https://hooks.example.com/bench/' || i, 'hooks.example.com', 'bench-secret', true, sha256(int8send(i)), '2021-03-20'
         FROM generate_series($5::bigint, $5::bigint + $6::bigint - 1) AS i, LATERAL (SELECT 'tb1q' || lpad(to_hex(i), 38, 'q') AS a) AS x`,
        [customer.id, CHAIN.blockchain, CHAIN.network, eventType, offset, count],
      );
    }
  });
  await db.query('bench:analyze', 'ANALYZE');
  return { ...SUBSCRIPTIONS, matchingAddresses: paid.length, seedMs: Math.round(performance.now() - started) };
}

interface Cursor {
  height: number;
  /** chain_cursors.updated_at, ms. */
  at: number;
}

/** Blocks per second between the first cursor commit inside (from, to] and the commit of `to`. */
function segmentRate(samples: Cursor[], from: number, to: number): { blocks: number; seconds: number; blocksPerSecond: number } {
  const first = samples.find((s) => s.height > from);
  const last = samples.find((s) => s.height >= to);
  if (!first || !last || last.height === first.height) throw new Error(`too few cursor samples in blocks ${from}..${to}`);
  const seconds = (last.at - first.at) / 1000;
  return { blocks: last.height - first.height, seconds: round(seconds, 2), blocksPerSecond: round((last.height - first.height) / seconds, 2) };
}

/** Blocks per second of the cursor commits inside [start, end] (ms). */
function windowRate(samples: Cursor[], start: number, end: number): { blocks: number; seconds: number; blocksPerSecond: number } | null {
  const inside = samples.filter((s) => s.at >= start && s.at <= end);
  const first = inside[0];
  const last = inside.at(-1);
  if (!first || !last || last.height === first.height) return null;
  const seconds = (last.at - first.at) / 1000;
  return { blocks: last.height - first.height, seconds: round(seconds, 2), blocksPerSecond: round((last.height - first.height) / seconds, 2) };
}

interface BurstFigures {
  transactions: number;
  /** The node's first getrawmempool answer with the burst -> all of it in mempool_seen. */
  seconds: number;
  transactionsPerSecond: number;
  /** Transactions per CPU-second of the herald process over that window: the rate on one core of its own. */
  transactionsPerServiceCpuSecond: number;
  /** The same per CPU-second of the herald process and PostgreSQL together. */
  transactionsPerServiceAndPostgresCpuSecond: number;
  callbacks: number;
  cpuPct: Record<string, number>;
  firstListedAt: number;
  seenAt: number;
}

interface RunFigures {
  /** The burst alone (no block to follow). */
  burstAlone: BurstFigures;
  baseline: ReturnType<typeof segmentRate>;
  /** The second burst, released with SEGMENT new blocks. */
  burstWithBlocks: BurstFigures;
  burstSegment: ReturnType<typeof segmentRate>;
  duringBurst: ReturnType<typeof windowRate>;
  followerRatio: number;
  followerRatioDuringBurst: number | null;
  maxRssMb: number;
}

async function serviceRun(
  run: number,
  options: {
    baseUrl: string;
    info: FakeUtxoNodeInfo;
    node: Child;
    segment: number;
    burst: number;
    dataDir: string;
    postgresPid: number | undefined;
    nodeArgs: string[];
  },
): Promise<RunFigures> {
  const { info, segment, burst } = options;
  const name = `bench_mempool_burst_${run}`;
  const admin = new pg.Client({ connectionString: databaseUrl(options.baseUrl, 'postgres') });
  await admin.connect();
  const runDb = new pg.Client({ connectionString: databaseUrl(options.baseUrl, name) });
  const rpc = nodeRpc(info);
  let service: Child | undefined;
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${name} TEMPLATE herald`);
    await runDb.connect();
    // A fresh node state per run: warm-up tip, empty mempool (a new child would render the chain again).
    await rpc.call('benchsettip', [WARMUP_BLOCKS]);
    await rpc.call('benchreleasemempool', [0]);
    const configFile = join(options.dataDir, `service-${run}.json`);
    const chain = {
      ...CHAIN,
      rpcUrl: info.url,
      rpcUser: info.user,
      rpcPassword: info.password,
      pollIntervalMs: POLL_MS,
      mempoolPollIntervalMs: POLL_MS,
      startHeight: 1,
      concurrency: 8,
      ...(process.env.BENCH_MEMPOOL_CATCH_UP_YIELD_MS && { mempoolCatchUpYieldMs: Number(process.env.BENCH_MEMPOOL_CATCH_UP_YIELD_MS) }),
    };
    writeFileSync(configFile, JSON.stringify({ roles: ['ingest'], logLevel: 'info', chains: [chain] }));
    const started = startChild(process.execPath, [...options.nodeArgs, HERALD, 'serve'], {
      env: { DATABASE_URL: databaseUrl(options.baseUrl, name), HERALD_CONFIG: configFile, HERALD_DATA_DIR: '', HERALD_ROLES: '', HERALD_LOG_LEVEL: 'info' },
      label: `service (run ${run})`,
    });
    service = started;
    const alive = () => {
      if (!isAlive(started.pid)) throw new Error(`the service exited in run ${run}:\n${started.output()}`);
    };
    const rss = sampleRss(started.pid, 100);
    const samples: Cursor[] = [];
    const cursor = async (): Promise<Cursor | undefined> => {
      const { rows } = await runDb.query<{ height: string; at: number }>(
        'SELECT height, extract(epoch FROM updated_at) * 1000 AS at FROM chain_cursors WHERE blockchain = $1 AND network = $2',
        [CHAIN.blockchain, CHAIN.network],
      );
      const row = rows[0];
      if (!row) return undefined;
      const c = { height: Number(row.height), at: Number(row.at) };
      if (samples.at(-1)?.height !== c.height) samples.push(c);
      return c;
    };
    const waitForHeight = async (height: number, timeoutMs: number) => {
      const deadline = performance.now() + timeoutMs;
      for (;;) {
        alive();
        if (((await cursor())?.height ?? 0) >= height) return;
        if (performance.now() > deadline) throw new Error(`run ${run}: the cursor is not at ${height} after ${timeoutMs / 1000} s:\n${started.output()}`);
        await sleep(SAMPLE_MS);
      }
    };
    const unconfirmedCallbacks = async () =>
      Number(
        (await runDb.query<{ n: string }>("SELECT count(*) AS n FROM callbacks WHERE event_type = 'ADDRESS_COINS_TRANSACTION_UNCONFIRMED'")).rows[0]?.n ?? 0,
      );
    /** Releases the first `listed` pending transactions (`burst` new ones) and waits for them in mempool_seen (and the cursor at `tip`). */
    const burstPhase = async (listed: number, tip?: number): Promise<BurstFigures> => {
      const callbacksBefore = await unconfirmedCallbacks();
      const cpu = measureCpu({
        service: () => processCpuSeconds(started.pid),
        postgres: () => (options.postgresPid ? treeCpuSeconds(options.postgresPid) : 0),
        node: () => processCpuSeconds(options.node.pid),
        machine: machineBusySeconds,
      });
      const serviceCpuBefore = processCpuSeconds(started.pid);
      const postgresCpuBefore = options.postgresPid ? treeCpuSeconds(options.postgresPid) : 0;
      const releasedAt = Date.now();
      if (tip !== undefined) await rpc.call('benchsettip', [tip]);
      await rpc.call('benchreleasemempool', [listed]);
      let seenAt: number | undefined;
      let cpuPct: Record<string, number> = {};
      let serviceCpu = 0;
      let postgresCpu = 0;
      const deadline = performance.now() + 600_000;
      while (seenAt === undefined || (tip !== undefined && (samples.at(-1)?.height ?? 0) < tip)) {
        alive();
        if (performance.now() > deadline) throw new Error(`run ${run}: the burst is not done after 600 s:\n${started.output()}`);
        await cursor();
        if (seenAt === undefined) {
          const { rows } = await runDb.query<{ n: string }>('SELECT count(*) AS n FROM mempool_seen');
          if (Number(rows[0]?.n ?? 0) >= listed) {
            seenAt = Date.now();
            cpuPct = cpu.stop();
            serviceCpu = processCpuSeconds(started.pid) - serviceCpuBefore;
            postgresCpu = (options.postgresPid ? treeCpuSeconds(options.postgresPid) : 0) - postgresCpuBefore;
          }
        }
        await sleep(SAMPLE_MS);
      }
      const stats = await rpc.call<FakeMempoolStats>('benchmempoolstats');
      const firstListedAt = stats.firstListedAt ?? releasedAt;
      const seconds = (seenAt - firstListedAt) / 1000;
      const { machine = 0, ...mine } = cpuPct;
      return {
        transactions: burst,
        seconds: round(seconds, 2),
        transactionsPerSecond: Math.round(burst / seconds),
        transactionsPerServiceCpuSecond: Math.round(burst / serviceCpu),
        transactionsPerServiceAndPostgresCpuSecond: Math.round(burst / (serviceCpu + postgresCpu)),
        callbacks: (await unconfirmedCallbacks()) - callbacksBefore,
        cpuPct: { ...mine, other: Math.max(0, machine - Object.values(mine).reduce((a, b) => a + b, 0)) },
        firstListedAt,
        seenAt,
      };
    };

    // 1. Warm-up (index of 1,000,000 subscriptions loaded, first blocks).
    await waitForHeight(WARMUP_BLOCKS, 600_000);
    log(`run ${run}: warmed up (cursor at ${WARMUP_BLOCKS})`);
    await sleep(2 * POLL_MS);

    // 2. The burst alone: the mempool path's own rate and CPU.
    const burstAlone = await burstPhase(burst);
    await sleep(2 * POLL_MS);

    // 3. Baseline: SEGMENT blocks, no burst.
    const baseEnd = WARMUP_BLOCKS + segment;
    await rpc.call('benchsettip', [baseEnd]);
    await waitForHeight(baseEnd, 300_000);
    const baseline = segmentRate(samples, WARMUP_BLOCKS, baseEnd);
    await sleep(2 * POLL_MS);

    // 4. A second burst and SEGMENT blocks more, released together.
    const burstEnd = baseEnd + segment;
    const burstWithBlocks = await burstPhase(2 * burst, burstEnd);
    const burstSegment = segmentRate(samples, baseEnd, burstEnd);
    const duringBurst = windowRate(samples, burstWithBlocks.firstListedAt, burstWithBlocks.seenAt);
    rss.stop();
    const code = await started.stop('SIGTERM', 20_000);
    if (code !== 0) log(`run ${run}: the service exited with ${code} on SIGTERM:\n${started.output()}`);
    return {
      burstAlone,
      baseline,
      burstWithBlocks,
      burstSegment,
      duringBurst,
      followerRatio: round(burstSegment.blocksPerSecond / baseline.blocksPerSecond),
      followerRatioDuringBurst: duringBurst ? round(duringBurst.blocksPerSecond / baseline.blocksPerSecond) : null,
      maxRssMb: round(rss.max(), 1),
    };
  } finally {
    await service?.stop('SIGTERM', 20_000);
    await runDb.end().catch(() => undefined);
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
    await admin.end().catch(() => undefined);
  }
}

export async function mempoolBurst(): Promise<Record<string, unknown>> {
  const runs = envInt('BENCH_MEMPOOL_RUNS', 3);
  const segment = envInt('BENCH_MEMPOOL_SEGMENT', 60);
  const burst = envInt('BENCH_MEMPOOL_BURST', 20_000);
  const nodeArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const blocks = WARMUP_BLOCKS + 2 * segment;
  const dataDir = mkdtempSync(join(tmpdir(), 'herald-bench-mempool-burst-'));
  let database: OpenDatabase | undefined;
  removeDataDirOnCleanup(dataDir, () => database?.embedded?.stop());
  try {
    log(`burst: rendering ${blocks} blocks of ${TX_PER_BLOCK} transactions and ${burst} pending transactions in the fake node ...`);
    const node = startChild(
      process.execPath,
      ['--max-semi-space-size=64', '--import', 'tsx', FAKE_NODE, '--child', String(blocks), String(TX_PER_BLOCK), String(2 * burst), String(WARMUP_BLOCKS)],
      { label: 'fake Bitcoin node' },
    );
    const [info, opened] = await Promise.all([
      firstStdoutLine<FakeUtxoNodeInfo>(node, { what: 'fake Bitcoin node', timeoutMs: 900_000, intervalMs: 100 }),
      openDatabase({ ...loadConfig({ dataDir }, {}), databasePoolSize: 4 }),
    ]);
    database = opened;
    log(`burst: fake node ${info.url} ready in ${info.generateMs} ms; seeding ${SUBSCRIPTIONS.unconfirmed + SUBSCRIPTIONS.confirmed} subscriptions ...`);
    const seeded = await seed(database, info);
    log(`burst: template database seeded in ${seeded.seedMs} ms`);
    await database.db.close(); // the template must have no connection while it is copied
    const postgresPid = postmasterPid(dataDir);
    const results: RunFigures[] = [];
    for (let run = 1; run <= runs; run++) {
      const r = await serviceRun(run, { baseUrl: database.url, info, node, segment, burst, dataDir, postgresPid, nodeArgs });
      const fig = (b: BurstFigures) =>
        `${b.transactionsPerSecond} tx/s (${b.seconds} s, ${b.callbacks} callbacks, ${b.transactionsPerServiceCpuSecond} tx per service CPU-second, ` +
        `${b.transactionsPerServiceAndPostgresCpuSecond} with PostgreSQL's, CPU % ${JSON.stringify(b.cpuPct)})`;
      log(
        `burst run ${run}: alone ${fig(r.burstAlone)}; with blocks ${fig(r.burstWithBlocks)}; ` +
          `follower ${r.baseline.blocksPerSecond} blocks/s without, ${r.burstSegment.blocksPerSecond} with the burst (ratio ${r.followerRatio}; ` +
          `inside the burst window ${r.duringBurst?.blocksPerSecond ?? '-'} blocks/s, ratio ${r.followerRatioDuringBurst ?? '-'})`,
      );
      results.push(r);
    }
    const transactionsPerSecond = median(results.map((r) => r.burstAlone.transactionsPerSecond));
    const perCpuSecond = median(results.map((r) => r.burstAlone.transactionsPerServiceCpuSecond));
    const perCpuSecondWithPostgres = median(results.map((r) => r.burstAlone.transactionsPerServiceAndPostgresCpuSecond));
    const withBlocks = median(results.map((r) => r.burstWithBlocks.transactionsPerSecond));
    const followerRatio = median(results.map((r) => r.followerRatio));
    const windowRatios = results.map((r) => r.followerRatioDuringBurst).filter((v): v is number => v !== null);
    return {
      ...((runs !== 3 || segment !== 60 || burst !== 20_000 || nodeArgs.length > 0 || process.env.BENCH_MEMPOOL_CATCH_UP_YIELD_MS) && {
        experiment: { runs, segment, burst, serverNodeArgs: nodeArgs, mempoolCatchUpYieldMs: process.env.BENCH_MEMPOOL_CATCH_UP_YIELD_MS },
      }),
      chain: { ...CHAIN, warmupBlocks: WARMUP_BLOCKS, segmentBlocks: segment, transactionsPerBlock: TX_PER_BLOCK, renderMs: info.generateMs },
      subscriptions: seeded,
      pollIntervalMs: POLL_MS,
      runs: results,
      mempoolTransactionsPerSecond: transactionsPerSecond,
      mempoolTransactionsPerServiceCpuSecond: perCpuSecond,
      mempoolTransactionsPerServiceAndPostgresCpuSecond: perCpuSecondWithPostgres,
      mempoolTransactionsPerSecondWithBlocks: withBlocks,
      followerRatio,
      followerRatioDuringBurst: windowRatios.length > 0 ? median(windowRatios) : null,
      loadAverage: loadavg().map((l) => round(l, 2)),
      targets: { transactionsPerSecond: `>=${TARGETS.transactionsPerSecond}`, followerRatio: `>=${TARGETS.followerRatio}` },
      pass: {
        transactionsPerSecond: transactionsPerSecond >= TARGETS.transactionsPerSecond,
        transactionsPerServiceCpuSecond: perCpuSecond >= TARGETS.transactionsPerSecond,
        follower: followerRatio >= TARGETS.followerRatio,
      },
    };
  } finally {
    await runCleanups();
  }
}
