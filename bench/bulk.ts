/**
 * The bulk subscription benchmark. Target (issue 16, point 3): 1,000,000 ADDRESS_TOKENS_TRANSACTION_CONFIRMED
 * subscriptions created through the bulk endpoint in <= 60 s and matched by the follower at the next
 * block, with the API's p99 for other customers' single requests <= 100 ms meanwhile.
 *
 * Processes:
 *   - the node: an EDR node with automine on and a test token (bench/evm-ingest.ts --node-child live);
 *   - this process: owns the embedded PostgreSQL of a fresh temporary data directory (customers, keys,
 *     callback domain, through the store code), sends the bulk requests and the other customer's load;
 *   - the service under test: `herald serve --roles api,ingest` on that data directory, following
 *     ethereum/goerli on the node (WebSocket heads). Callbacks stay queued (no delivery role): the
 *     match is read from the outbox.
 *
 * Measured:
 *   - the import: BULK_ITEMS (default 1,000,000) items in requests of 10,000, BULK_CONCURRENCY (default 2)
 *     requests at a time, from the first request sent to the last answer: seconds and items/s;
 *   - meanwhile, another customer's single requests, paced (OTHER_RPS, default 100/s: half creates, half
 *     gets of one of its subscriptions), each timed: p50, p99, max; and the same load for BASELINE_S
 *     seconds before the import, as the baseline of the same run;
 *   - the match: right after the last answer, an ERC-20 transfer to the address of the last item (made
 *     by the last chunk), mined at once (automine); the benchmark waits for the outbox row of that
 *     subscription and checks that its block is the transfer's block (the next block after the import).
 *
 * Environment: BENCH_BULK_ITEMS, BENCH_BULK_CONCURRENCY, BENCH_BULK_OTHER_RPS change the work (an
 * experiment); BENCH_SERVER_NODE_ARGS adds node arguments for the service (e.g. '--cpu-prof
 * --cpu-prof-dir=/tmp/prof' or '--trace-gc'); BENCH_BULK_SERVICE_OUT names a file for the service's standard
 * output (its log, and what such arguments print). BENCH_DURATION does not apply. Duration about 2 minutes.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request as undiciRequest } from 'undici';
import type { Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { loadConfig } from '../src/config/config.ts';
import { createApiKey, createCustomer } from '../src/store/customers.ts';
import { upsertDomain } from '../src/store/domains.ts';
import { type OpenDatabase, openDatabase } from '../src/store/open.ts';
import { type LiveNodeInfo, SELECTOR, startNodeChild, word } from './evm-ingest.ts';
import {
  envInt,
  forEachLimited,
  freePort,
  HERALD,
  isAlive,
  log,
  machineBusySeconds,
  measureCpu,
  onCleanup,
  percentile,
  postmasterPid,
  processCpuSeconds,
  removeDataDirOnCleanup,
  runCleanups,
  selfCpuSeconds,
  sleep,
  startChild,
  treeCpuSeconds,
  waitForOk,
} from './lib.ts';

const PER_REQUEST = 10_000;
const BASELINE_S = 10;
const TARGETS = { seconds: 60, otherP99Ms: 100 };
const CHAIN_PATH = '/blockchain-events/ethereum/goerli/subscriptions';
const CALLBACK_URL = 'https://hooks.example.com/cb';

const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

/** The address of item i: deterministic, distinct, lower-case. */
const addressOf = (seed: string, i: number) => `0x${createHash('sha256').update(`${seed}-${i}`).digest('hex').slice(0, 40)}`;

function spread(values: number[]) {
  const sorted = [...values].sort((a, b) => a - b);
  const r = (v: number | null) => (v === null ? null : round(v));
  return { count: values.length, p50: r(percentile(sorted, 50)), p99: r(percentile(sorted, 99)), max: r(sorted.at(-1) ?? null) };
}

/** Another customer's single requests at `rps`, paced (open loop), until stop(): each one's latency in ms. */
function otherLoad(api: string, key: string, rps: number, getId: string, agent: Agent) {
  const latencies: number[] = [];
  let failures = 0;
  let stopped = false;
  let n = 0;
  const inFlight = new Set<Promise<void>>();
  const one = async () => {
    const create = n++ % 2 === 0;
    const started = performance.now();
    try {
      const response = await undiciRequest(
        create ? `${api}${CHAIN_PATH}/transaction-mined` : `${api}/blockchain-events/subscriptions/${getId}`,
        create
          ? {
              method: 'POST',
              headers: { 'content-type': 'application/json', 'x-api-key': key },
              body: JSON.stringify({ data: { item: { transactionId: `0x${randomBytes(32).toString('hex')}`, callbackUrl: CALLBACK_URL } } }),
              dispatcher: agent,
            }
          : { method: 'GET', headers: { 'x-api-key': key }, dispatcher: agent },
      );
      await response.body.text();
      if (response.statusCode >= 300) failures++;
    } catch {
      failures++;
    }
    latencies.push(performance.now() - started);
  };
  const loop = (async () => {
    const start = performance.now();
    for (let i = 0; !stopped; i++) {
      const due = start + (i * 1000) / rps;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      const p = one();
      inFlight.add(p);
      void p.finally(() => inFlight.delete(p));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      await Promise.all([...inFlight]);
      return { ...spread(latencies), failures };
    },
  };
}

/**
 * What the service's database connections are doing, sampled every 200 ms from pg_stat_activity:
 * running, waiting (wait event) or idle in a transaction, each with the start of its statement (the
 * other customer's single creates and the bulk chunks share the insert's text: the bulk's connections
 * are told apart by their application_name, 'bulk pool'). Gives
 * each state's share of the samples of non-idle connections, in %.
 */
function sampleDbWaits(db: OpenDatabase['db']) {
  const counts = new Map<string, number>();
  let total = 0;
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    db.query<{ what: string; n: number }>(
      'bench:activity',
      `SELECT CASE WHEN application_name = 'herald-bulk' THEN 'bulk pool ' ELSE '' END ||
         coalesce(wait_event_type || ':' || wait_event, 'running') || ' ' || left(regexp_replace(query, '\\s+', ' ', 'g'), 40) AS what, count(*)::int AS n
       FROM pg_stat_activity WHERE backend_type = 'client backend' AND state <> 'idle' AND pid <> pg_backend_pid()
         AND query NOT LIKE 'SELECT 1 FROM callbacks%' GROUP BY 1`,
      [],
    )
      .then((rows) => {
        for (const r of rows) {
          counts.set(r.what, (counts.get(r.what) ?? 0) + r.n);
          total += r.n;
        }
      })
      .catch(() => undefined)
      .finally(() => {
        busy = false;
      });
  }, 200);
  return {
    stop(): Record<string, number> {
      clearInterval(timer);
      const sorted = [...counts.entries()].sort((a, b) => b[1] - a[1]).slice(0, 10);
      return Object.fromEntries(sorted.map(([k, n]) => [k, round((n / Math.max(1, total)) * 100)]));
    },
  };
}

/**
 * The service's event-loop lag and database pool, read from its /metrics every second (prom-client
 * resets the lag figures per read): the largest max and the median p99 of the lag, in ms; the most
 * queries seen waiting for a pool connection and the fewest idle connections.
 */
function sampleLoopLag(api: string) {
  const maxes: number[] = [];
  const p99s: number[] = [];
  let poolWaitingMax = 0;
  let poolIdleMin = Number.POSITIVE_INFINITY;
  const timer = setInterval(() => {
    fetch(`${api}/metrics`)
      .then((r) => r.text())
      .then((text) => {
        const max = /^herald_nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(text)?.[1];
        const p99 = /^herald_nodejs_eventloop_lag_p99_seconds (\S+)$/m.exec(text)?.[1];
        if (max) maxes.push(Number(max) * 1000);
        if (p99) p99s.push(Number(p99) * 1000);
        const waiting = /^herald_db_pool_waiting_requests (\S+)$/m.exec(text)?.[1];
        const idle = /^herald_db_pool_idle_connections (\S+)$/m.exec(text)?.[1];
        if (waiting) poolWaitingMax = Math.max(poolWaitingMax, Number(waiting));
        if (idle) poolIdleMin = Math.min(poolIdleMin, Number(idle));
      })
      .catch(() => undefined);
  }, 1000);
  return {
    stop() {
      clearInterval(timer);
      const sorted = [...p99s].sort((a, b) => a - b);
      return {
        maxMs: round(Math.max(0, ...maxes)),
        medianP99Ms: round(percentile(sorted, 50) ?? 0),
        samples: maxes.length,
        poolWaitingMax,
        poolIdleMin: Number.isFinite(poolIdleMin) ? poolIdleMin : null,
      };
    },
  };
}

/** The service's cumulative time per query label and per route (sum and count), read from /metrics. */
async function readTimings(api: string): Promise<Map<string, { sum: number; count: number }>> {
  const text = await (await fetch(`${api}/metrics`)).text();
  const out = new Map<string, { sum: number; count: number }>();
  for (const m of text.matchAll(/^herald_(db_query|http_request)_duration_seconds_(sum|count)\{([^}]*)\} (\S+)$/gm)) {
    const labels = m[3] as string;
    const key =
      m[1] === 'db_query' ? `db ${/query="([^"]*)"/.exec(labels)?.[1]}` : `http ${/method="([^"]*)"/.exec(labels)?.[1]} ${/route="([^"]*)"/.exec(labels)?.[1]}`;
    const entry = out.get(key) ?? { sum: 0, count: 0 };
    if (m[2] === 'sum') entry.sum += Number(m[4]);
    else entry.count += Number(m[4]);
    out.set(key, entry);
  }
  return out;
}

/**
 * Mean time per query label and per route between two readings (ms, and how many), the busiest first:
 * where the other customer's requests spend their time (the http rows against the statements they
 * make; the bulk pool's statements are labelled 'low-priority:').
 */
function timingsBetween(before: Map<string, { sum: number; count: number }>, after: Map<string, { sum: number; count: number }>) {
  const rows = [...after].map(([key, a]) => {
    const b = before.get(key) ?? { sum: 0, count: 0 };
    return { key, count: a.count - b.count, totalMs: (a.sum - b.sum) * 1000 };
  });
  return Object.fromEntries(
    rows
      .filter((r) => r.count > 0 && !r.key.includes('/metrics') && !r.key.startsWith('db bench'))
      .sort((x, y) => y.totalMs - x.totalMs)
      .slice(0, 14)
      .map((r) => [r.key, { meanMs: round(r.totalMs / r.count, 2), count: r.count }]),
  );
}

export default async function bulkBenchmark(): Promise<Record<string, unknown>> {
  const items = envInt('BENCH_BULK_ITEMS', 1_000_000);
  const concurrency = envInt('BENCH_BULK_CONCURRENCY', 2);
  const otherRps = envInt('BENCH_BULK_OTHER_RPS', 100);
  const nodeArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const experiment = ['BENCH_BULK_ITEMS', 'BENCH_BULK_CONCURRENCY', 'BENCH_BULK_OTHER_RPS', 'BENCH_SERVER_NODE_ARGS'].filter((k) => process.env[k]);
  const dataDir = mkdtempSync(join(tmpdir(), 'herald-bench-bulk-'));
  let database: OpenDatabase | undefined;
  let serviceStdout: (() => string) | undefined;
  removeDataDirOnCleanup(dataDir, () => database?.close());
  try {
    const [{ info }, opened] = await Promise.all([
      startNodeChild<LiveNodeInfo>(['live'], 120_000),
      openDatabase({ ...loadConfig({ dataDir }, {}), databasePoolSize: 2 }),
    ]);
    database = opened;
    const db = database.db;
    const plan = { mainnetAllowed: true, maxActiveSubscriptions: null, requestsPerSecond: 1_000_000 };
    const bulkCustomer = await createCustomer(db, 'bulk', plan, 10n ** 15n);
    const other = await createCustomer(db, 'other', plan, 10n ** 15n);
    const bulkKey = (await createApiKey(db, bulkCustomer.id, { label: 'bench' })).key;
    const otherKey = (await createApiKey(db, other.id, { label: 'bench' })).key;
    for (const c of [bulkCustomer, other]) await upsertDomain(db, c.id, 'hooks.example.com', 'operator');

    const port = await freePort();
    const configFile = join(dataDir, 'service.json');
    writeFileSync(
      configFile,
      JSON.stringify({
        logLevel: 'info',
        chains: [{ blockchain: 'ethereum', network: 'goerli', rpcUrl: info.url, wsUrl: info.wsUrl, pollIntervalMs: 2000, concurrency: 8 }],
      }),
    );
    const service = startChild(process.execPath, [...nodeArgs, HERALD, 'serve', '--data-dir', dataDir, '--port', String(port), '--roles', 'api,ingest'], {
      env: { DATABASE_URL: '', HERALD_CONFIG: configFile, HERALD_DATA_DIR: '', HERALD_ROLES: '', HERALD_LOG_LEVEL: 'info' },
      label: 'service',
    });
    serviceStdout = service.stdout;
    const api = `http://127.0.0.1:${port}`;
    await waitForOk(`${api}/readyz`, { child: service, timeoutMs: 60_000 });
    for (let waited = 0; !service.stdout().includes('"msg":"following chain"'); waited += 20) {
      if (waited > 30_000 || !isAlive(service.pid)) throw new Error(`the service does not follow the chain:\n${service.output()}`);
      await sleep(20);
    }
    log(`service ready, following ethereum/goerli on ${info.url}; data directory ${dataDir}`);
    const agent = new Agent({ keepAliveTimeout: 60_000, connections: 64, bodyTimeout: 600_000, headersTimeout: 600_000 });
    onCleanup(() => agent.close());

    // The other customer's subscription that its gets read.
    const first = await undiciRequest(`${api}${CHAIN_PATH}/transaction-mined`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': otherKey },
      body: JSON.stringify({ data: { item: { transactionId: `0x${randomBytes(32).toString('hex')}`, callbackUrl: CALLBACK_URL } } }),
      dispatcher: agent,
    });
    const getId = ((await first.body.json()) as { data: { item: { referenceId: string } } }).data.item.referenceId;

    // Baseline: the other customer's load alone.
    let load = otherLoad(api, otherKey, otherRps, getId, agent);
    let lag = sampleLoopLag(api);
    let timings = await readTimings(api);
    let waits = sampleDbWaits(db);
    await sleep(BASELINE_S * 1000);
    const baseline = { ...(await load.stop()), eventLoopLag: lag.stop(), dbWaitsPct: waits.stop(), meanMs: timingsBetween(timings, await readTimings(api)) };
    log(`other customer alone: ${JSON.stringify(baseline)}`);

    // The import, with the other customer's load beside it.
    const seed = randomBytes(4).toString('hex');
    const requests = Array.from({ length: Math.ceil(items / PER_REQUEST) }, (_, r) => r);
    const pm = postmasterPid(dataDir);
    const cpu = measureCpu({
      service: () => processCpuSeconds(service.pid),
      postgres: () => (pm ? treeCpuSeconds(pm) : 0),
      bench: selfCpuSeconds,
      machine: machineBusySeconds,
    });
    let created = 0;
    let lastReference = '';
    load = otherLoad(api, otherKey, otherRps, getId, agent);
    lag = sampleLoopLag(api);
    waits = sampleDbWaits(db);
    timings = await readTimings(api);
    const started = performance.now();
    await forEachLimited(requests, concurrency, async (r) => {
      const count = Math.min(PER_REQUEST, items - r * PER_REQUEST);
      const body = JSON.stringify({
        data: {
          items: Array.from({ length: count }, (_, i) => ({ address: addressOf(seed, r * PER_REQUEST + i), callbackUrl: CALLBACK_URL, receiveCallbackOn: 1 })),
        },
      });
      const response = await undiciRequest(`${api}${CHAIN_PATH}/address-tokens-transactions-confirmed/bulk`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': bulkKey },
        body,
        dispatcher: agent,
      });
      const answer = (await response.body.json()) as { data?: { created: number; items: { status: string; item?: { referenceId: string } }[] } };
      if (response.statusCode !== 200 || !answer.data)
        throw new Error(`bulk request ${r} answered ${response.statusCode}: ${JSON.stringify(answer).slice(0, 500)}`);
      created += answer.data.created;
      if (r === requests.length - 1) lastReference = answer.data.items.at(-1)?.item?.referenceId ?? '';
      if (r % 10 === 9) log(`${created} created after ${round((performance.now() - started) / 1000)} s`);
    });
    const seconds = (performance.now() - started) / 1000;
    const during = { ...(await load.stop()), eventLoopLag: lag.stop(), dbWaitsPct: waits.stop(), meanMs: timingsBetween(timings, await readTimings(api)) };
    const cpuPct = cpu.stop();
    log(`${created} of ${items} created in ${round(seconds)} s (${Math.round(created / seconds)}/s); other customer meanwhile: ${JSON.stringify(during)}`);

    // The next block: a token transfer to the last item's address.
    const target = addressOf(seed, items - 1);
    let rpcId = 0;
    const rpc = async <T>(method: string, params: unknown[]): Promise<T> => {
      const response = await undiciRequest(info.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: ++rpcId, method, params }),
        dispatcher: agent,
      });
      const answer = (await response.body.json()) as { result?: T; error?: { message: string } };
      if (answer.error) throw new Error(`${method}: ${answer.error.message}`);
      return answer.result as T;
    };
    const account = privateKeyToAccount(info.sender.privateKey as Hex);
    const nonce = Number(await rpc<string>('eth_getTransactionCount', [account.address, 'pending']));
    const raw = await account.signTransaction({
      chainId: info.chainId,
      nonce,
      maxFeePerGas: 20_000_000_000n,
      maxPriorityFeePerGas: 1_000_000_000n,
      type: 'eip1559',
      to: info.token as Hex,
      gas: 120_000n,
      data: `${SELECTOR.transfer}${word(target)}${word(1234n)}` as Hex,
    });
    const headBefore = Number(await rpc<string>('eth_blockNumber', []));
    const sentAt = performance.now();
    await rpc<string>('eth_sendRawTransaction', [raw]);
    const transferBlock = Number(await rpc<string>('eth_blockNumber', []));
    let matched: { ms: number } | undefined;
    for (let waited = 0; waited < 60_000 && !matched; waited += 50) {
      const rows = await db.query('bench:matched', 'SELECT 1 FROM callbacks WHERE subscription_id = $1', [lastReference]).catch(() => []);
      if (rows.length > 0) matched = { ms: Math.round(performance.now() - sentAt) };
      else {
        // Confirmations: one more block now and then (automine mines one per transaction only).
        if (waited % 1000 === 0) await rpc('evm_mine', []);
        await sleep(50);
      }
    }
    log(
      matched
        ? `the transfer in block ${transferBlock} (head before ${headBefore}) was matched: callback queued ${matched.ms} ms after sending`
        : `no callback queued for the transfer to ${target} within 60 s:\n${service.output().slice(-3000)}`,
    );

    const pass = {
      created: created === items,
      seconds: seconds <= TARGETS.seconds,
      matchedAtNextBlock: matched !== undefined && transferBlock === headBefore + 1,
      otherP99: (during.p99 ?? Number.POSITIVE_INFINITY) <= TARGETS.otherP99Ms,
      otherNoFailures: during.failures === 0,
    };
    return {
      bench: 'bulk',
      ...(experiment.length > 0 && { experiment: Object.fromEntries(experiment.map((k) => [k, process.env[k]])) }),
      items,
      perRequest: PER_REQUEST,
      concurrency,
      import: { created, seconds: round(seconds, 2), perSecond: Math.round(created / seconds) },
      match: { transferBlock, headBefore, ...matched },
      other: { rps: otherRps, alone: baseline, duringImport: during, p99Ratio: baseline.p99 ? round((during.p99 ?? 0) / baseline.p99, 2) : null },
      cpuPct,
      targets: { seconds: `<=${TARGETS.seconds}`, otherP99Ms: `<=${TARGETS.otherP99Ms}`, matchedAtNextBlock: 'true' },
      pass: { ...pass, all: Object.values(pass).every(Boolean) },
    };
  } finally {
    // The service's own output (its log, and what BENCH_SERVER_NODE_ARGS such as --trace-gc print), kept on request.
    if (process.env.BENCH_BULK_SERVICE_OUT && serviceStdout) writeFileSync(process.env.BENCH_BULK_SERVICE_OUT, serviceStdout());
    await runCleanups();
  }
}
