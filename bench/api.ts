/**
 * The API benchmark. Targets (from the issue): with autocannon, 64 connections, 10 s each, on the
 * embedded database, one customer:
 *   - subscribe (endpoint 1, transaction-mined): >= 2,000 requests/s, p99 <= 50 ms;
 *   - all-assets over 1,000 wallets of 3 addresses each, limit 50: >= 2,000 requests/s;
 *   - a bare fastify route as the ceiling in the same run, reported with the ratio;
 *   - RSS of the server process under that load <= 250 MB (embedded PostgreSQL not counted);
 *   - `npm start` on an existing data directory ready to serve in <= 1.5 s;
 *   - issue 16, point 5: a second customer whose plan caps active subscriptions and who already has
 *     1,000,000 active ones (inserted with SQL, generate_series, then vacuumed): its subscribe rate >= 0.9 of the
 *     uncapped customer's in the same run; its list (the first 20 pages) and get p99 <= 20 ms at 500
 *     requests/s over 8 connections (latency at a steady rate, not at saturation), beside the uncapped
 *     customer's list and get on the same pages at the same rate; a page at offset 500,000 timed apart.
 *
 * The server under test and the bare ceiling each run in a child process of their own, so the load
 * generator's CPU and the server's RSS are separate. Everything starts from a fresh temporary data
 * directory that is removed at the end, as is every process started here.
 *
 * Environment: BENCH_DURATION (seconds per load, default 10); BENCH_SERVER_NODE_ARGS, extra node
 * arguments for the server under load, e.g. '--cpu-prof --cpu-prof-dir=/tmp/prof' to profile it;
 * BENCH_SERVER_CONFIG, a herald JSON configuration file for the server under load (e.g. costs set to 0,
 * to see what the credit debit costs). HERALD_DB_POOL_SIZE and HERALD_LOG_REQUESTS pass through to the
 * server. Any of these makes the figures an experiment (listed under `experiment`), not the benchmark.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bech32 } from '@scure/base';
import pg from 'pg';
import {
  type Child,
  commandLine,
  descendants,
  forEachLimited,
  freePort,
  HERALD,
  isAlive,
  type LoadFigures,
  load,
  log,
  machineBusySeconds,
  measureCpu,
  median,
  onCleanup,
  processCpuSeconds,
  ROOT,
  rssMb,
  runCleanups,
  runCommand,
  sampleRss,
  selfCpuSeconds,
  sleep,
  startChild,
  treeCpuSeconds,
  waitForOk,
} from './lib.ts';

const CONNECTIONS = 64;
const WALLETS = 1000;
const PAGE = 50;
const STARTUP_RUNS = 5;
const CALLBACK_URL = 'https://hooks.example.com/cb';
const TARGETS = {
  subscribeRps: 2000,
  subscribeP99Ms: 50,
  allAssetsRps: 2000,
  maxRssMb: 250,
  startupMs: 1500,
  /** Issue 16, point 5: a capped customer with 1,000,000 active subscriptions. */
  cappedToUncappedSubscribe: 0.9,
  cappedListP99Ms: 20,
  cappedGetP99Ms: 20,
};
/** The capped customer's active subscriptions, inserted with SQL before its loads. */
const CAPPED_SUBSCRIPTIONS = 1_000_000;
/** List and get are measured for their latency at a steady rate, not at saturation. */
const READ_RATE = 500;
const READ_CONNECTIONS = 8;
/** List loads cycle through the first LIST_PAGES pages (both customers have that many). */
const LIST_PAGES = 20;
/** The deep page timed apart: offset 500,000 of the capped customer's list. */
const DEEP_OFFSET = 500_000;

const SUBSCRIBE_PATH = '/blockchain-events/ethereum/goerli/subscriptions/transaction-mined';
const ALL_ASSETS_PATH = '/wallet-as-a-service/wallets/all-assets';
const LIST_PATH = '/blockchain-events/ethereum/goerli/subscriptions';

/** Unique 0x + 64-hex transaction ids: a random prefix per run, then a counter. */
function txidGenerator(): () => string {
  const prefix = randomBytes(8).toString('hex');
  let n = 0;
  return () => `0x${prefix}${(n++).toString(16).padStart(48, '0')}`;
}

const hexOf = (seed: string, chars: number) => createHash('sha256').update(seed).digest('hex').slice(0, chars);

/** The three watched addresses of wallet i: EVM on two chains, then bitcoin testnet (bech32) or ETC mordor. */
function walletAddresses(i: number): { blockchain: string; network: string; address: string }[] {
  const third =
    i % 2 === 0
      ? {
          blockchain: 'bitcoin',
          network: 'testnet',
          address: bech32.encode('tb', [0, ...bech32.toWords(createHash('sha256').update(`btc-${i}`).digest().subarray(0, 20))]),
        }
      : { blockchain: 'ethereum-classic', network: 'mordor', address: `0x${hexOf(`etc-${i}`, 40)}` };
  return [
    { blockchain: 'ethereum', network: 'goerli', address: `0x${hexOf(`eth-${i}`, 40)}` },
    { blockchain: 'binance-smart-chain', network: 'testnet', address: `0x${hexOf(`bsc-${i}`, 40)}` },
    third,
  ];
}

function heraldEnv(logLevel = 'warn'): NodeJS.ProcessEnv {
  // A DATABASE_URL or config file in the caller's environment would bypass the embedded database.
  return { HERALD_LOG_LEVEL: logLevel, DATABASE_URL: '', HERALD_CONFIG: '', HERALD_DATA_DIR: '', HERALD_PORT: '', HERALD_HOST: '' };
}

function startHerald(dataDir: string, port: number, logLevel = 'warn', nodeArgs: string[] = [], configFile = ''): Child {
  return startChild(process.execPath, [...nodeArgs, HERALD, 'serve', '--data-dir', dataDir, '--port', String(port)], {
    env: { ...heraldEnv(logLevel), HERALD_CONFIG: configFile },
    label: 'herald',
  });
}

async function herald(dataDir: string, ...args: string[]): Promise<string> {
  return await runCommand(process.execPath, [HERALD, ...args, '--data-dir', dataDir], heraldEnv());
}

/** The embedded PostgreSQL of a data directory: postmaster pid and port from postmaster.pid. */
function postmaster(dataDir: string): { pid: number; port: number } | undefined {
  const file = join(dataDir, 'postgres', 'postmaster.pid');
  if (!existsSync(file)) return undefined;
  const lines = readFileSync(file, 'utf8').split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) return undefined;
  return { pid, port };
}

/** Stops an embedded PostgreSQL left running on `dataDir` (SIGINT: fast shutdown; SIGQUIT if it lingers). */
async function stopLeftoverPostgres(dataDir: string): Promise<void> {
  const pm = postmaster(dataDir);
  if (!pm) return;
  log(`embedded PostgreSQL (pid ${pm.pid}) still running; stopping it`);
  const alive = () => isAlive(pm.pid);
  process.kill(pm.pid, 'SIGINT');
  for (let waited = 0; alive() && waited < 10_000; waited += 50) await sleep(50);
  if (alive()) process.kill(pm.pid, 'SIGQUIT');
  for (let waited = 0; alive() && waited < 5_000; waited += 50) await sleep(50);
}

async function api(url: string, key: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { 'x-api-key': key, ...(body !== undefined && { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: response.status, json };
}

/** A connection to the embedded database of `dataDir` (found through postmaster.pid), as its superuser. */
async function connectDb(dataDir: string): Promise<pg.Client> {
  const pm = postmaster(dataDir);
  if (!pm) throw new Error('no embedded PostgreSQL running for the data directory');
  const password = readFileSync(join(dataDir, 'postgres-password'), 'utf8').trim();
  const client = new pg.Client({ connectionString: `postgres://herald:${encodeURIComponent(password)}@127.0.0.1:${pm.port}/herald` });
  await client.connect();
  return client;
}

/**
 * Samples what the server's database connections are doing every 200 ms (pg_stat_activity): running,
 * waiting on a lock or on I/O, idle in a transaction waiting for the server's next statement
 * (Client:ClientRead) or idle in the pool; lock waits name the start of the waiting statement. Gives
 * each state's share of connection-samples, in %.
 */
function sampleDbActivity(client: pg.Client) {
  const counts = new Map<string, number>();
  let total = 0;
  let busy = false;
  const take = async () => {
    if (busy) return;
    busy = true;
    try {
      const { rows } = await client.query<{ what: string; n: number }>(
        `SELECT CASE WHEN state = 'active' AND wait_event IS NULL THEN 'running'
                     ELSE coalesce(state, '?') || coalesce(' ' || wait_event_type || ':' || wait_event, '') END
                || CASE WHEN wait_event_type = 'Lock' THEN ' (' || left(regexp_replace(query, '\\s+', ' ', 'g'), 60) || ')' ELSE '' END AS what,
                count(*)::int AS n
         FROM pg_stat_activity WHERE backend_type = 'client backend' AND datname = 'herald' AND pid <> pg_backend_pid() GROUP BY 1`,
      );
      for (const r of rows) {
        counts.set(r.what, (counts.get(r.what) ?? 0) + r.n);
        total += r.n;
      }
    } catch {
      // a missed sample is fine
    } finally {
      busy = false;
    }
  };
  const timer = setInterval(() => void take(), 200);
  return {
    stop(): Record<string, number> {
      clearInterval(timer);
      const sorted = [...counts.entries()].sort((a, b) => b[1] - a[1]).slice(0, 8);
      return Object.fromEntries(sorted.map(([k, n]) => [k, Math.round((n / Math.max(1, total)) * 1000) / 10]));
    },
  };
}

type QueryStats = Map<string, { count: number; sum: number }>;

/** Count and total seconds per query label, from herald's /metrics (herald_db_query_duration_seconds). */
async function queryStats(url: string): Promise<QueryStats> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const stats: QueryStats = new Map();
  for (const m of text.matchAll(/^herald_db_query_duration_seconds_(count|sum)\{query="([^"]+)"\} (\S+)$/gm)) {
    const [, kind, label, value] = m as unknown as [string, 'count' | 'sum', string, string];
    const entry = stats.get(label) ?? { count: 0, sum: 0 };
    entry[kind] = Number(value);
    stats.set(label, entry);
  }
  return stats;
}

/** Per query label, between two scrapes: statements per request and mean duration as herald saw it (ms). */
function queryFigures(before: QueryStats, after: QueryStats, requests: number): Record<string, { perRequest: number; meanMs: number }> {
  const out: [string, { perRequest: number; meanMs: number }][] = [];
  for (const [label, a] of after) {
    const b = before.get(label) ?? { count: 0, sum: 0 };
    const count = a.count - b.count;
    if (count <= 0) continue;
    out.push([label, { perRequest: Math.round((count / Math.max(1, requests)) * 1000) / 1000, meanMs: Math.round(((a.sum - b.sum) / count) * 1e5) / 100 }]);
  }
  return Object.fromEntries(out.sort((x, y) => y[1].perRequest * y[1].meanMs - x[1].perRequest * x[1].meanMs));
}

/** 1,000 wallets of 3 addresses each, through the HTTP API; then non-zero totals straight in the database. */
async function seed(url: string, key: string, dataDir: string): Promise<void> {
  const started = performance.now();
  const indexes = Array.from({ length: WALLETS }, (_, i) => i);
  await forEachLimited(indexes, 16, async (i) => {
    const created = await api(url, key, 'POST', '/wallet-as-a-service/wallets', { data: { item: { walletName: `bench wallet ${i}` } } });
    const walletId = (created.json as { data?: { item?: { walletId?: string } } }).data?.item?.walletId;
    if (created.status !== 201 || !walletId) throw new Error(`creating wallet ${i} answered ${created.status}: ${JSON.stringify(created.json)}`);
    for (const a of walletAddresses(i)) {
      const added = await api(url, key, 'POST', `/wallet-as-a-service/wallets/${walletId}/${a.blockchain}/${a.network}/addresses`, {
        data: { item: { address: a.address } },
      });
      if (added.status !== 201) throw new Error(`adding ${a.blockchain}/${a.network} ${a.address} answered ${added.status}: ${JSON.stringify(added.json)}`);
    }
  });
  log(`seeded ${WALLETS} wallets x 3 addresses in ${Math.round(performance.now() - started)} ms`);

  // Chain following would keep these totals; give every address some, so all-assets has amounts to format.
  const client = await connectDb(dataDir);
  try {
    const { rowCount } = await client.query(
      `WITH v AS (SELECT id, ((id * 982451653) % 1000000007)::numeric * 1000000000 AS r FROM wallet_addresses)
       UPDATE wallet_addresses a SET total_received = v.r, total_spent = trunc(v.r / 3), confirmed_balance = v.r - trunc(v.r / 3)
       FROM v WHERE v.id = a.id`,
    );
    await client.query('ANALYZE');
    log(`gave ${rowCount} addresses non-zero totals`);
  } finally {
    await client.end();
  }
}

/** The herald node process below `pid` (npm -> sh -> node): the one running bin/herald.js with node itself. */
function heraldUnder(pid: number): number | undefined {
  return descendants(pid).find((p) => {
    const argv = commandLine(p).split(' ');
    return /(^|\/)node$/.test(argv[0] ?? '') && argv.some((a) => a.endsWith('bin/herald.js'));
  });
}

/** Waits until `pid` is gone; SIGKILL after `timeoutMs`. */
async function waitForExit(pid: number, timeoutMs: number): Promise<void> {
  const alive = () => isAlive(pid);
  for (let waited = 0; alive() && waited < timeoutMs; waited += 20) await sleep(20);
  if (alive()) {
    log(`process ${pid} did not exit after SIGTERM; killing it`);
    process.kill(pid, 'SIGKILL');
  }
}

/** Starts herald on an existing data directory and times spawn -> GET /readyz 200 (polled every 10 ms). */
async function timeStartup(dataDir: string, viaNpm: boolean): Promise<{ ms: number; serverStartMs?: number }> {
  const port = await freePort();
  const started = performance.now();
  const child = viaNpm
    ? startChild('npm', ['start', '--silent', '--', '--data-dir', dataDir, '--port', String(port)], { env: heraldEnv('info'), label: 'npm start' })
    : startHerald(dataDir, port, 'info');
  try {
    await waitForOk(`http://127.0.0.1:${port}/readyz`, { child, timeoutMs: 60_000, intervalMs: 10 });
    const ms = Math.round(performance.now() - started);
    // The server logs its own start time (database open + listen), which excludes Node and module loading.
    const ready = child
      .stdout()
      .split('\n')
      .map((line) => {
        try {
          return JSON.parse(line) as { msg?: string; startMs?: number };
        } catch {
          return undefined;
        }
      })
      .find((entry) => entry?.msg === 'herald is ready');
    return { ms, serverStartMs: ready?.startMs };
  } finally {
    // Under npm, signal the herald process itself: npm and sh would pass a second SIGTERM on.
    const target = viaNpm ? heraldUnder(child.pid) : child.pid;
    await child.stop('SIGTERM', 15_000, target ?? child.pid);
    if (target !== undefined && target !== child.pid) await waitForExit(target, 15_000);
  }
}

async function startBare(): Promise<{ child: Child; url: string }> {
  const port = await freePort();
  const child = startChild(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', 'bare-server.ts'), String(port)], { label: 'bare fastify' });
  const url = `http://127.0.0.1:${port}`;
  await waitForOk(`${url}/bare`, { child, timeoutMs: 30_000 });
  return { child, url };
}

interface LoadWithCpu extends LoadFigures {
  /**
   * CPU used during the load, in % of one core: the server process alone, its PostgreSQL (postmaster and
   * backends), this load generator, and the whole machine (200 = both cores of a 2-core machine busy;
   * `other` is the rest of the machine's use: other work running at the same time, i.e. noise).
   */
  cpuPct: Record<string, number>;
  /** Loads on herald only: what its database connections were doing, % of samples (see sampleDbActivity). */
  dbConnectionsPct?: Record<string, number>;
  /**
   * Loads on herald only: per query label, statements per request and their mean duration in ms as herald
   * times them (from /metrics; pool queries include the wait for a free pool connection).
   */
  queries?: Record<string, { perRequest: number; meanMs: number }>;
}

export default async function apiBenchmark(options: { duration: number }): Promise<Record<string, unknown>> {
  const duration = options.duration;
  const warmup = Math.min(2, duration);
  const dataDir = mkdtempSync(join(tmpdir(), 'herald-bench-'));
  // Registered first, so it runs last: after the servers have stopped (also when run.ts gets a signal).
  onCleanup(async () => {
    await stopLeftoverPostgres(dataDir);
    rmSync(dataDir, { recursive: true, force: true });
    log(`removed ${dataDir}`);
  });
  log(`data directory ${dataDir}; ${CONNECTIONS} connections, ${duration} s per load (after ${warmup} s warm-up)`);
  const nextTxid = txidGenerator();
  const subscribeBody = () => JSON.stringify({ data: { item: { transactionId: nextTxid(), callbackUrl: CALLBACK_URL } } });

  try {
    // The ceiling: a bare fastify server, measured first, while nothing else of ours runs.
    const bare = await startBare();
    const bareCpu = () => processCpuSeconds(bare.child.pid);
    /** Adds `other`: machine CPU not used by the processes measured (other work on the machine: noise). */
    const withOther = (cpu: Record<string, number>) => {
      const { machine = 0, ...mine } = cpu;
      return { ...cpu, other: Math.max(0, machine - Object.values(mine).reduce((a, b) => a + b, 0)) };
    };
    const bareLoad = async (label: string, request: Parameters<typeof load>[1]['request']): Promise<LoadWithCpu> => {
      await load(`${label} warm-up`, { url: bare.url, connections: CONNECTIONS, duration: warmup, request });
      const cpu = measureCpu({ server: bareCpu, loadgen: selfCpuSeconds, machine: machineBusySeconds });
      const figures = await load(label, { url: bare.url, connections: CONNECTIONS, duration, request });
      return { ...figures, cpuPct: withOther(cpu.stop()) };
    };
    const barePost = await bareLoad('bare POST', {
      method: 'POST',
      path: '/bare',
      headers: { 'content-type': 'application/json' },
      setupRequest: (request) => ({ ...request, body: subscribeBody() }),
    });
    const bareGet = await bareLoad('bare GET', { method: 'GET', path: '/bare' });
    const bareRss = rssMb(bare.child.pid);
    await bare.child.stop();

    // First start: creates the embedded PostgreSQL in the fresh data directory.
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    let started = performance.now();
    const nodeArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean);
    if (nodeArgs.length > 0) log(`server node arguments: ${nodeArgs.join(' ')}`);
    const configFile = process.env.BENCH_SERVER_CONFIG ?? '';
    if (configFile) log(`server configuration file: ${configFile}`);
    // herald settings in our own environment reach the server too; the figures say so.
    const passedEnv = Object.fromEntries(['HERALD_DB_POOL_SIZE', 'HERALD_LOG_REQUESTS'].filter((k) => process.env[k]).map((k) => [k, process.env[k]]));
    const server = startHerald(dataDir, port, 'warn', nodeArgs, configFile);
    await waitForOk(`${url}/readyz`, { child: server, timeoutMs: 120_000, intervalMs: 50 });
    log(`herald first start (initdb + migrations) ready in ${Math.round(performance.now() - started)} ms`);

    started = performance.now();
    await herald(dataDir, 'customers', 'create', '--name', 'bench', '--credits', '1000000000000000', '--rate-limit', '1000000');
    const key = (await herald(dataDir, 'keys', 'create', '--customer', 'bench')).trim().split('\n').pop()?.trim() ?? '';
    if (!key.startsWith('hk_')) throw new Error(`keys create printed no key: '${key}'`);
    await herald(dataDir, 'domains', 'add', '--customer', 'bench', '--domain', 'hooks.example.com', '--verified');
    log(`customer, key and verified domain made with the CLI in ${Math.round(performance.now() - started)} ms`);

    await seed(url, key, dataDir);

    // Sanity checks, so a broken setup fails here rather than as a pile of non-2xx.
    const one = await api(url, key, 'POST', SUBSCRIBE_PATH, JSON.parse(subscribeBody()));
    if (one.status !== 200) throw new Error(`a subscribe request answered ${one.status}: ${JSON.stringify(one.json)}`);
    const page = await api(url, key, 'GET', `${ALL_ASSETS_PATH}?limit=${PAGE}&offset=${WALLETS - PAGE}`);
    const data = (page.json as { data?: { total?: number; items?: { coins: { confirmedBalance: string }[] }[] } }).data;
    if (page.status !== 200 || data?.total !== WALLETS || data.items?.length !== PAGE || data.items.some((w) => w.coins.length !== 3))
      throw new Error(`all-assets did not list ${PAGE} of ${WALLETS} wallets with 3 coins each: ${page.status} ${JSON.stringify(page.json).slice(0, 500)}`);
    log(`checked: subscribe answers 200; all-assets lists ${PAGE} of ${data.total} wallets, e.g. ${JSON.stringify(data.items[0]?.coins[0])}`);

    const idleRss = rssMb(server.pid);
    const monitor = await connectDb(dataDir);
    const unregisterMonitor = onCleanup(() => monitor.end());
    const pm = postmaster(dataDir);
    const serverLoad = async (
      label: string,
      request: Parameters<typeof load>[1]['request'],
      options: { key?: string; connections?: number; overallRate?: number } = {},
    ): Promise<LoadWithCpu> => {
      const headers = { 'x-api-key': options.key ?? key };
      const connections = options.connections ?? CONNECTIONS;
      const overallRate = options.overallRate;
      await load(`${label} warm-up`, { url, connections, duration: warmup, request, headers, overallRate });
      // The warm-up's rows in the planner's statistics, as autovacuum would have them in a running database:
      // a table measured seconds after it was created empty is planned as empty (a sequential scan of the
      // subscriptions for every group of creates: 15 ms instead of 0.5 ms, measured 2026-11-25).
      await monitor.query('ANALYZE');
      const cpu = measureCpu({
        server: () => processCpuSeconds(server.pid),
        postgres: () => (pm ? treeCpuSeconds(pm.pid) : 0),
        loadgen: selfCpuSeconds,
        machine: machineBusySeconds,
      });
      const activity = sampleDbActivity(monitor);
      const statsBefore = await queryStats(url);
      const figures = await load(label, { url, connections, duration, request, headers, overallRate });
      const cpuPct = withOther(cpu.stop());
      const dbConnectionsPct = activity.stop();
      const queries = queryFigures(statsBefore, await queryStats(url), figures.total);
      return { ...figures, cpuPct, dbConnectionsPct, queries };
    };

    const rss = sampleRss(server.pid, 250);
    let subscribe: LoadWithCpu;
    let allAssets: LoadWithCpu;
    try {
      subscribe = await serverLoad('subscribe', {
        method: 'POST',
        path: SUBSCRIBE_PATH,
        headers: { 'content-type': 'application/json' },
        setupRequest: (request) => ({ ...request, body: subscribeBody() }),
      });
      let n = 0;
      allAssets = await serverLoad('all-assets', {
        method: 'GET',
        path: ALL_ASSETS_PATH,
        setupRequest: (request) => ({ ...request, path: `${ALL_ASSETS_PATH}?limit=${PAGE}&offset=${(n++ % (WALLETS / PAGE)) * PAGE}` }),
      });
    } finally {
      rss.stop();
    }

    // Issue 16, point 5: the same loads for a customer whose plan caps active subscriptions and who
    // already has 1,000,000 of them (inserted with SQL), against the uncapped customer's in the same run.
    await herald(
      dataDir,
      'customers',
      'create',
      '--name',
      'capped',
      '--credits',
      '1000000000000000',
      '--rate-limit',
      '1000000',
      '--max-subscriptions',
      '100000000',
    );
    const cappedKey = (await herald(dataDir, 'keys', 'create', '--customer', 'capped')).trim().split('\n').pop()?.trim() ?? '';
    await herald(dataDir, 'domains', 'add', '--customer', 'capped', '--domain', 'hooks.example.com', '--verified');
    started = performance.now();
    const [cappedRow] = (await monitor.query<{ id: string }>("SELECT id FROM customers WHERE name = 'capped'")).rows;
    await monitor.query(
      `INSERT INTO subscriptions (id, customer_id, event_type, blockchain, network, transaction_id, target, callback_url, callback_host,
         allow_duplicates, duplicate_key, api_version)
       SELECT gen_random_uuid(), $1, 'TRANSACTION_MINED', 'ethereum', 'goerli', t, t, $3, 'hooks.example.com', false,
              sha256(convert_to(t || $3, 'UTF8')), '2021-03-20'
       FROM (SELECT '0x' || lpad(to_hex(i), 64, '0') AS t FROM generate_series(1, $2::int) i) s`,
      [cappedRow?.id, CAPPED_SUBSCRIPTIONS, CALLBACK_URL],
    );
    // A customer that already has them has had them vacuumed: without this, autovacuum's pass over the
    // million new rows (their visibility map, for index-only list pages) would run during the capped loads
    // below and take its CPU from them.
    await monitor.query('VACUUM (ANALYZE) subscriptions');
    log(`inserted ${CAPPED_SUBSCRIPTIONS} active subscriptions of the capped customer (and vacuumed them) in ${Math.round(performance.now() - started)} ms`);
    const [{ id: cappedGetId } = { id: '' }] = (
      await monitor.query<{ id: string }>('SELECT id FROM subscriptions WHERE customer_id = $1 ORDER BY created_at, id OFFSET $2 LIMIT 1', [
        cappedRow?.id,
        CAPPED_SUBSCRIPTIONS / 2,
      ])
    ).rows;
    const [{ id: uncappedGetId } = { id: '' }] = (
      await monitor.query<{ id: string }>("SELECT s.id FROM subscriptions s JOIN customers c ON c.id = s.customer_id WHERE c.name = 'bench' LIMIT 1")
    ).rows;
    const listLoad = (label: string, listKey: string) => {
      let page = 0;
      // The same pages for both customers (the first LIST_PAGES): a page deep in the list costs its offset
      // (the contract's offset pagination), whatever the customer's size; measured apart below.
      return serverLoad(
        label,
        {
          method: 'GET',
          path: LIST_PATH,
          setupRequest: (request) => ({ ...request, path: `${LIST_PATH}?limit=${PAGE}&offset=${(page++ % LIST_PAGES) * PAGE}` }),
        },
        { key: listKey, connections: READ_CONNECTIONS, overallRate: READ_RATE },
      );
    };
    const getLoad = (label: string, getKey: string, id: string) =>
      serverLoad(
        label,
        { method: 'GET', path: `/blockchain-events/subscriptions/${id}` },
        { key: getKey, connections: READ_CONNECTIONS, overallRate: READ_RATE },
      );
    const capped = {
      subscribe: await serverLoad(
        'subscribe (capped customer, 1,000,000 active)',
        {
          method: 'POST',
          path: SUBSCRIBE_PATH,
          headers: { 'content-type': 'application/json' },
          setupRequest: (request) => ({ ...request, body: subscribeBody() }),
        },
        { key: cappedKey },
      ),
      list: await listLoad('list (capped customer)', cappedKey),
      get: await getLoad('get (capped customer)', cappedKey, cappedGetId),
    };
    const uncappedReads = { list: await listLoad('list (uncapped customer)', key), get: await getLoad('get (uncapped customer)', key, uncappedGetId) };
    const deepPageMs: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      const deep = await api(url, cappedKey, 'GET', `${LIST_PATH}?limit=${PAGE}&offset=${DEEP_OFFSET + i * PAGE}`);
      if (deep.status !== 200) throw new Error(`the deep page answered ${deep.status}`);
      deepPageMs.push(Math.round(performance.now() - t0));
    }
    log(`capped customer's page at offset ${DEEP_OFFSET}: ${deepPageMs.join(', ')} ms`);
    unregisterMonitor();
    await monitor.end().catch(() => undefined);
    const maxRssMb = Math.round(rss.max() * 10) / 10;
    log(`server RSS: idle ${idleRss?.toFixed(1)} MB, max under load ${maxRssMb} MB (${rss.samples.length} samples)`);

    log('stopping herald (SIGTERM)');
    started = performance.now();
    const code = await server.stop('SIGTERM', 30_000);
    const shutdownMs = Math.round(performance.now() - started);
    if (code !== 0) log(`herald exited with ${code} on SIGTERM:\n${server.output()}`);

    // Start-up on the existing data directory, as `npm start` would do it.
    const runs: number[] = [];
    const serverRuns: number[] = [];
    for (let i = 0; i < STARTUP_RUNS; i++) {
      const r = await timeStartup(dataDir, false);
      runs.push(r.ms);
      if (r.serverStartMs !== undefined) serverRuns.push(r.serverStartMs);
      log(`start-up ${i + 1}/${STARTUP_RUNS}: ready in ${r.ms} ms (server's own start ${r.serverStartMs ?? '?'} ms)`);
    }
    const npm = await timeStartup(dataDir, true);
    log(`npm start: ready in ${npm.ms} ms`);

    const startupMedian = median(runs);
    const ratio = (a: number, b: number) => Math.round((a / b) * 1000) / 1000;
    const pass = {
      subscribeRps: subscribe.rps >= TARGETS.subscribeRps,
      subscribeP99: subscribe.p99 <= TARGETS.subscribeP99Ms,
      subscribeNon2xx: subscribe.non2xx === 0 && subscribe.errors === 0,
      allAssetsRps: allAssets.rps >= TARGETS.allAssetsRps,
      allAssetsNon2xx: allAssets.non2xx === 0 && allAssets.errors === 0,
      maxRss: maxRssMb <= TARGETS.maxRssMb,
      startup: startupMedian <= TARGETS.startupMs,
      npmStart: npm.ms <= TARGETS.startupMs,
      cappedSubscribe: capped.subscribe.rps >= TARGETS.cappedToUncappedSubscribe * subscribe.rps,
      cappedNon2xx: [capped.subscribe, capped.list, capped.get].every((f) => f.non2xx === 0 && f.errors === 0),
      cappedListP99: capped.list.p99 <= TARGETS.cappedListP99Ms,
      cappedGetP99: capped.get.p99 <= TARGETS.cappedGetP99Ms,
    };
    return {
      bench: 'api',
      ...((nodeArgs.length > 0 || configFile || Object.keys(passedEnv).length > 0) && {
        experiment: { serverNodeArgs: nodeArgs, serverConfig: configFile || null, serverEnv: passedEnv },
      }),
      connections: CONNECTIONS,
      durationS: duration,
      warmupS: warmup,
      subscribe,
      allAssets,
      capped: {
        activeSubscriptions: CAPPED_SUBSCRIPTIONS,
        readRate: READ_RATE,
        readConnections: READ_CONNECTIONS,
        listPages: LIST_PAGES,
        ...capped,
        deepPageMs: { offset: DEEP_OFFSET, runs: deepPageMs },
      },
      uncappedReads,
      bare: { post: barePost, get: bareGet, rssMb: bareRss === undefined ? null : Math.round(bareRss * 10) / 10 },
      ratios: {
        cappedToUncappedListP99: ratio(capped.list.p99, uncappedReads.list.p99),
        cappedToUncappedGetP99: ratio(capped.get.p99, uncappedReads.get.p99),
        subscribeToBarePost: ratio(subscribe.rps, barePost.rps),
        allAssetsToBareGet: ratio(allAssets.rps, bareGet.rps),
        cappedToUncappedSubscribe: ratio(capped.subscribe.rps, subscribe.rps),
      },
      idleRssMb: idleRss === undefined ? null : Math.round(idleRss * 10) / 10,
      maxRssMb,
      shutdownMs,
      startupMs: { median: startupMedian, runs, serverReportedMs: serverRuns },
      npmStartMs: npm.ms,
      npmOverheadMs: npm.ms - startupMedian,
      targets: {
        subscribeRps: `>=${TARGETS.subscribeRps}`,
        subscribeP99Ms: `<=${TARGETS.subscribeP99Ms}`,
        subscribeNon2xx: '=0',
        allAssetsRps: `>=${TARGETS.allAssetsRps}`,
        allAssetsNon2xx: '=0',
        maxRssMb: `<=${TARGETS.maxRssMb}`,
        startupMs: `<=${TARGETS.startupMs}`,
        npmStartMs: `<=${TARGETS.startupMs}`,
        cappedToUncappedSubscribe: `>=${TARGETS.cappedToUncappedSubscribe}`,
        cappedListP99Ms: `<=${TARGETS.cappedListP99Ms} (at ${READ_RATE} requests/s)`,
        cappedGetP99Ms: `<=${TARGETS.cappedGetP99Ms} (at ${READ_RATE} requests/s)`,
      },
      pass: { ...pass, all: Object.values(pass).every(Boolean) },
    };
  } finally {
    await runCleanups();
  }
}
