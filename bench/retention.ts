/**
 * The retention benchmark. Targets (issue 12, point 6): with 5,000,000 callback rows, pruning 1,000,000
 * old ones while delivering at full speed: delivery throughput drops by at most 10 %, pruning runs at
 * at least 50,000 rows/s, and the callback log endpoint answers with p99 at most 20 ms throughout.
 *
 * Processes: this one owns the embedded PostgreSQL of a fresh temporary data directory (migrated with
 * the store code) and fills it; the receivers run in a child (bench/delivery.ts --receiver-child); the
 * worker is `herald serve --roles delivery` and the API `herald serve --roles api`, separate processes
 * on that database, both with the periodic pruner off; the pruning is `herald prune`, the same pass the
 * delivery role's pruner runs (src/delivery/retention.ts), with the same retention settings.
 *
 * Data (BENCH_RETENTION_SCALE, default 1, multiplies every count): 5,000,000 finished callbacks with one
 * attempt each, built by INSERT ... SELECT generate_series (secondary indexes dropped and rebuilt around
 * it), spread over 1,000 subscriptions (the first 10 of them real, for the log endpoint); 1,000,000 of
 * them past their window (600,000 delivered 31-60 days ago, 200,000 failed 91-120 days ago, 200,000
 * cancelled 8-30 days ago), the rest delivered (5 % failed) in the last 29 days; finished_at
 * grows with the insertion order within each group, as in a real log. Then 400,000 pending callbacks for delivery (4 subscriptions,
 * one HTTPS receiver answering 200 at once; 400,000 at any scale), queued before the worker starts so it never runs dry.
 *
 * Phases, on one worker: warm-up; baseline (BENCH_DURATION seconds, default 10); pruning (until `herald
 * prune` is done); baseline again (BENCH_DURATION seconds). Delivery throughput = POSTs the receiver
 * got per second in each window; the drop is pruning against the mean of the two baselines. All the
 * while one client asks GET /blockchain-events/subscriptions/{id}/callbacks (first page, 50 items with
 * their attempts, of a subscription with 5,000 callbacks, 1,000 of them being pruned) every 20 ms, and
 * three more clients, each every 100 ms (to disturb it little), say what its time is made of
 * (`log.split` of each window): a free GET of one callback (HTTP, authentication, event loop, a small
 * read; no charge, so no commit), the log's debit statement run from this process on a customer of its
 * own (a read's charge, committed without waiting for the WAL flush as the log's is; not the log's customer, whose
 * row it would lock) and the log's page query, also from this process.
 *
 * Environment: BENCH_DURATION; BENCH_RETENTION_SCALE (a smaller scale keeps the ratios);
 * BENCH_RETENTION_BATCH, BENCH_RETENTION_PAUSE_MS and BENCH_RETENTION_DUTY override retention.batchSize,
 * pauseMs and dutyCycle (an experiment).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultRetention, loadConfig } from '../src/config/config.ts';
import { callbackBody } from '../src/domain/callbacks.ts';
import type { EventType } from '../src/domain/chains.ts';
import { callbackOfEvent, type NewCallback } from '../src/domain/events.ts';
import { enqueueCallbacks, listCallbacks } from '../src/store/callbacks.ts';
import { createApiKey, createCustomer, debitCredits } from '../src/store/customers.ts';
import type { Db } from '../src/store/db.ts';
import { upsertDomain } from '../src/store/domains.ts';
import { type OpenDatabase, openDatabase } from '../src/store/open.ts';
import { startReceiverChild } from './delivery.ts';
import {
  type Child,
  envScale,
  freePort,
  HERALD,
  isAlive,
  log,
  machineBusySeconds,
  measureCpu,
  percentile,
  postmasterPid,
  processCpuSeconds,
  removeDataDirOnCleanup,
  runCleanups,
  sleep,
  startChild,
  treeCpuSeconds,
  waitForOk,
} from './lib.ts';
import { BENCH_API_VERSION, insertBenchSubscription } from './subscriptions.ts';

const TARGETS = { deliveryDropPct: 10, pruneRowsPerSecond: 50_000, logP99Ms: 20 };
const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

const scale = (): number => envScale('BENCH_RETENTION_SCALE');

async function createSubscriptions(db: Db, customerId: string, eventType: EventType, urls: string[]): Promise<string[]> {
  const ids: string[] = [];
  for (const callbackUrl of urls) ids.push(await insertBenchSubscription(db, customerId, callbackUrl, eventType));
  return ids;
}

/**
 * The finished callbacks, `total` of them in chunks, `old` of them past their window: ids in order
 * (cheap to index), subscription g % 1000 (the first `real` from `realIds`), a ~350-byte body.
 */
export async function buildFinished(db: Db, customerId: string, realIds: string[], total: number, old: number): Promise<void> {
  const indexes = await db.query<{ name: string; def: string }>(
    'bench:indexes',
    `SELECT indexname AS name, indexdef AS def FROM pg_indexes i WHERE tablename IN ('callbacks', 'callback_attempts')
       AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)`,
  );
  for (const i of indexes) await db.query('bench:drop-index', `DROP INDEX ${i.name}`);
  const oldDelivered = Math.round(old * 0.6);
  const oldFailed = Math.round(old * 0.2);
  const chunk = 500_000;
  for (let from = 1; from <= total; from += chunk) {
    const to = Math.min(total, from + chunk - 1);
    const started = performance.now();
    await db.query(
      'bench:build-callbacks',
      `INSERT INTO callbacks (id, customer_id, subscription_id, event_type, idempotency_key, body, callback_url, destination, status,
         attempts, next_attempt_at, created_at, finished_at)
       SELECT lpad(to_hex(g), 32, '0')::uuid, $1::bigint,
         CASE WHEN g % 1000 < cardinality($2::uuid[]) THEN ($2::uuid[])[g % 1000 + 1] ELSE lpad(to_hex(1000000 + g % 1000), 32, 'f')::uuid END,
         'BLOCK_MINED', md5(g::text), '{"subscriptionType":"BLOCK_MINED","data":"' || repeat(md5(g::text), 9) || '"}',
         'https://localhost/log', 'https://localhost:443', k.status, 1, k.at, k.at - interval '1 second', k.at
       FROM generate_series($3::int, $4::int) g,
         -- finished_at grows with g within each segment, as a real log's does with its insertion order.
         LATERAL (SELECT CASE WHEN g <= $5 THEN 'delivered' WHEN g <= $6 THEN 'failed' WHEN g <= $7 THEN 'cancelled'
                              WHEN g % 20 = 0 THEN 'failed' ELSE 'delivered' END AS status,
                         now() - CASE WHEN g <= $5 THEN interval '60 days' - (g::float8 / $5) * interval '29 days'
                                      WHEN g <= $6 THEN interval '120 days' - ((g - $5)::float8 / ($6 - $5)) * interval '29 days'
                                      WHEN g <= $7 THEN interval '30 days' - ((g - $6)::float8 / ($7 - $6)) * interval '22 days'
                                      ELSE interval '29 days' - ((g - $7)::float8 / ($8::int - $7)) * interval '29 days' END AS at) k`,
      [customerId, realIds, from, to, oldDelivered, oldDelivered + oldFailed, old, total],
    );
    await db.query(
      'bench:build-attempts',
      `INSERT INTO callback_attempts (callback_id, attempt, started_at, duration_ms, http_status)
       SELECT lpad(to_hex(g), 32, '0')::uuid, 1, now() - interval '1 day', 3, 200 FROM generate_series($1::int, $2::int) g`,
      [from, to],
    );
    log(`built callbacks ${from}..${to} with their attempts in ${Math.round(performance.now() - started)} ms`);
  }
  const started = performance.now();
  for (const i of indexes) await db.query('bench:create-index', i.def);
  // VACUUM, not only ANALYZE: a table that has lived is vacuumed (visibility map set: the log's count is
  // an index-only scan); otherwise autovacuum would get to the 5,000,000 new rows during a measured window.
  // Then a checkpoint, so that no window starts in the middle of one.
  await db.query('bench:vacuum', 'VACUUM (ANALYZE) callbacks, callback_attempts');
  await db.query('bench:checkpoint', 'CHECKPOINT');
  log(`rebuilt ${indexes.length} indexes, vacuumed and analysed in ${Math.round(performance.now() - started)} ms`);
}

function makeCallback(customerId: string, subscriptionId: string, callbackUrl: string): NewCallback {
  const key = randomBytes(32).toString('hex');
  return callbackOfEvent({
    customerId,
    subscriptionId,
    eventType: 'TRANSACTION_MINED',
    idempotencyKey: key,
    body: callbackBody({ id: subscriptionId, eventType: 'TRANSACTION_MINED', apiVersion: BENCH_API_VERSION }, key, {
      blockchain: 'ethereum',
      network: 'goerli',
      transactionId: `0x${randomBytes(32).toString('hex')}`,
      minedInBlock: { height: 18_000_000, hash: `0x${randomBytes(32).toString('hex')}`, timestamp: 1_700_000_000 },
    }),
    callbackUrl,
  });
}

/**
 * Calls `once` every `everyMs`, one at a time, until stopped; returns the latencies (ms) of the calls
 * that answered true (the others count as errors).
 */
function probe(once: () => Promise<boolean>, everyMs: number) {
  const latencies: number[] = [];
  let errors = 0;
  let running = true;
  const done = (async () => {
    while (running) {
      const t0 = performance.now();
      try {
        if (await once()) latencies.push(performance.now() - t0);
        else errors++;
      } catch {
        errors++;
      }
      await sleep(Math.max(0, everyMs - (performance.now() - t0)));
    }
  })();
  return {
    async stop() {
      running = false;
      await done;
      const sorted = latencies.slice().sort((a, b) => a - b);
      return {
        requests: sorted.length,
        errors,
        p50Ms: round(percentile(sorted, 50) ?? 0),
        p99Ms: round(percentile(sorted, 99) ?? 0),
        maxMs: round(sorted[sorted.length - 1] ?? 0),
      };
    },
  };
}

/** GET of `path` on the API: true when it answered 200. */
async function get(apiUrl: string, key: string, path: string): Promise<boolean> {
  const response = await fetch(`${apiUrl}${path}`, { headers: { 'x-api-key': key } });
  await response.arrayBuffer();
  return response.status === 200;
}

/** The callback log probe (the target), and beside it what its time is made of (see the header). */
function probeLog(
  apiUrl: string,
  key: string,
  db: Db,
  ids: { customer: string; chargeCustomer: string; subscriptions: string[]; callback: string; logUrl: string },
) {
  const { customer, chargeCustomer, subscriptions, callback, logUrl } = ids;
  let i = 0;
  let j = 0;
  let k = 0;
  const probes = {
    log: probe(() => get(apiUrl, key, `/blockchain-events/subscriptions/${subscriptions[i++ % subscriptions.length]}/callbacks?limit=50`), 20),
    free: probe(() => get(apiUrl, key, `/blockchain-events/callbacks/${callback}`), 100),
    charge: probe(
      async () => (await debitCredits(db, chargeCustomer, 1n, [{ endpoint: 'callbacks', requests: 1, credits: 1n }], { waitForFlush: false })).ok,
      100,
    ),
    query: probe(async () => {
      await listCallbacks(db, customer, subscriptions[j++ % subscriptions.length] as string, { limit: 50, offset: 0 });
      return true;
    }, 100),
    // Chain following's write: one callback queued for a subscription whose counter (callback_counts)
    // the pruner's batches decrement, so a batch holding that counter row delays it (priority inversion).
    enqueue: probe(async () => {
      const n = k++ % subscriptions.length;
      await db.transaction('bench:enqueue-probe', (tx) => enqueueCallbacks(tx, [makeCallback(customer, subscriptions[n] as string, `${logUrl}/${n}`)]));
      return true;
    }, 100),
  };
  return {
    async stop() {
      const [log, free, charge, query, enqueue] = await Promise.all([
        probes.log.stop(),
        probes.free.stop(),
        probes.charge.stop(),
        probes.query.stop(),
        probes.enqueue.stop(),
      ]);
      return { ...log, split: { free, charge, query }, enqueue };
    },
  };
}

/**
 * Where the database time of each process goes: every 50 ms, what each active backend of the worker,
 * the API and the pruner (told apart by application_name, PGAPPNAME) is waiting for (pg_stat_activity;
 * "CPU" when it waits for nothing; autovacuum workers too), the WAL written meanwhile (pg_stat_wal),
 * checkpoints (pg_stat_checkpointer, PostgreSQL 17) and the CPU time of the pruner's backend. The
 * samples are shares of each process's active time.
 */
function sampleDatabase(db: Db) {
  const waits: Record<string, Record<string, number>> = {};
  // CPU seconds of each backend of the pruner, as last seen (it ends with the pruner: up to 50 ms missed).
  const pruneCpu = new Map<number, number>();
  let pruneNice: number | undefined;
  // The nice level of the pruner backend's scheduler autogroup (src/store/backend-priority.ts), where there are autogroups.
  let pruneAutogroupNice: number | undefined;
  let running = true;
  const stats = () =>
    db.query<{ wal_bytes: string; wal_fpi: string; checkpoints: string }>(
      'bench:wal',
      `SELECT w.wal_bytes::text, w.wal_fpi::text,
         (SELECT (num_timed + num_requested)::text FROM pg_stat_checkpointer) AS checkpoints FROM pg_stat_wal w`,
    );
  const first = stats();
  const done = (async () => {
    while (running) {
      const rows = await db.query<{ pid: number; app: string; wait: string }>(
        'bench:waits',
        `SELECT pid, CASE WHEN backend_type = 'autovacuum worker' THEN 'autovacuum' ELSE application_name END AS app,
           coalesce(wait_event_type || ':' || wait_event, 'CPU') AS wait
         FROM pg_stat_activity WHERE (application_name LIKE 'herald-%' AND state = 'active') OR backend_type = 'autovacuum worker'`,
      );
      for (const r of rows) {
        const app = waits[r.app] ?? {};
        app[r.wait] = (app[r.wait] ?? 0) + 1;
        waits[r.app] = app;
        if (r.app === 'herald-prune') {
          pruneCpu.set(r.pid, processCpuSeconds(r.pid));
          pruneNice = niceLevel(r.pid) ?? pruneNice;
          pruneAutogroupNice = autogroupNice(r.pid) ?? pruneAutogroupNice;
        }
      }
      await sleep(50);
    }
  })();
  return {
    async stop() {
      running = false;
      await done;
      const [[a], [b]] = await Promise.all([first, stats()]);
      const shares = Object.fromEntries(
        Object.entries(waits).map(([app, w]) => {
          const total = Object.values(w).reduce((x, y) => x + y, 0);
          const top = Object.entries(w)
            .sort((x, y) => y[1] - x[1])
            .slice(0, 5);
          return [app.replace('herald-', ''), { samples: total, ...Object.fromEntries(top.map(([k, n]) => [k, round((n / total) * 100, 0)])) }];
        }),
      );
      return {
        walMb: round((Number(b?.wal_bytes) - Number(a?.wal_bytes)) / 1e6),
        walFullPages: Number(b?.wal_fpi) - Number(a?.wal_fpi),
        checkpoints: Number(b?.checkpoints) - Number(a?.checkpoints),
        pruneBackendCpuSeconds: round(
          [...pruneCpu.values()].reduce((x, y) => x + y, 0),
          2,
        ),
        ...(pruneNice !== undefined && { pruneBackendNice: pruneNice }),
        ...(pruneAutogroupNice !== undefined && { pruneBackendAutogroupNice: pruneAutogroupNice }),
        waitPct: shares,
      };
    },
  };
}

/** The nice level of process `pid` (field 19 of its stat, counted after the name's closing parenthesis). */
function niceLevel(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
  } catch {
    return undefined;
  }
}

export default async function retentionBenchmark(options: { duration: number }): Promise<Record<string, unknown>> {
  const s = scale();
  const total = Math.round(5_000_000 * s);
  const old = Math.round(1_000_000 * s);
  // Not scaled: the worker must not run dry before the last window ends.
  const pendingCount = 400_000;
  const dataDir = mkdtempSync(join(tmpdir(), 'herald-bench-retention-'));
  let database: OpenDatabase | undefined;
  removeDataDirOnCleanup(dataDir, () => database?.close());
  const retention = {
    ...defaultRetention(),
    enabled: false,
    ...(process.env.BENCH_RETENTION_BATCH && { batchSize: Number(process.env.BENCH_RETENTION_BATCH) }),
    ...(process.env.BENCH_RETENTION_PAUSE_MS && { pauseMs: Number(process.env.BENCH_RETENTION_PAUSE_MS) }),
    ...(process.env.BENCH_RETENTION_DUTY && { dutyCycle: Number(process.env.BENCH_RETENTION_DUTY) }),
  };
  const experiment = Boolean(process.env.BENCH_RETENTION_BATCH || process.env.BENCH_RETENTION_PAUSE_MS || process.env.BENCH_RETENTION_DUTY);
  try {
    const receiver = await startReceiverChild();
    const { info } = receiver;
    const caFile = join(dataDir, 'receiver-ca.pem');
    writeFileSync(caFile, info.caPem);
    const configFile = join(dataDir, 'herald.config.json');
    writeFileSync(configFile, JSON.stringify({ retention }));
    const okUrl = `https://localhost:${info.ok}`;

    // The sampler, the charge probe and the query probe (two statements at once) each hold a connection.
    database = await openDatabase({ ...loadConfig({ dataDir }, {}), databasePoolSize: 8 });
    const db = database.db;
    const customer = await createCustomer(db, 'bench', { mainnetAllowed: true, maxActiveSubscriptions: null, requestsPerSecond: 1_000_000 }, 10n ** 15n);
    await upsertDomain(db, customer.id, 'localhost', 'operator');
    const { key } = await createApiKey(db, customer.id, { label: 'bench' });
    const logSubs = await createSubscriptions(
      db,
      customer.id,
      'BLOCK_MINED',
      Array.from({ length: 10 }, (_, i) => `${okUrl}/log/${i}`),
    );
    const deliverySubs = await createSubscriptions(
      db,
      customer.id,
      'TRANSACTION_MINED',
      Array.from({ length: 4 }, (_, i) => `${okUrl}/deliver/${i}`),
    );

    let started = performance.now();
    log(`building ${total} finished callbacks (${old} past their window), one attempt each`);
    await buildFinished(db, customer.id, logSubs, total, old);
    const buildSeconds = (performance.now() - started) / 1000;
    log(`built in ${round(buildSeconds)} s`);

    started = performance.now();
    for (let i = 0; i < pendingCount; i += 5_000) {
      const batch = Array.from({ length: Math.min(5_000, pendingCount - i) }, (_, j) => {
        const n = (i + j) % deliverySubs.length;
        return makeCallback(customer.id, deliverySubs[n] as string, `${okUrl}/deliver/${n}`);
      });
      await db.transaction('bench:enqueue', (tx) => enqueueCallbacks(tx, batch));
    }
    await db.query('bench:analyze', 'ANALYZE callbacks');
    log(`queued ${pendingCount} pending callbacks in ${Math.round(performance.now() - started)} ms`);
    // For the free read beside the log: a recent callback (never pruned) of a log subscription.
    const [recent] = await db.query<{ id: string }>('bench:recent', 'SELECT id FROM callbacks WHERE subscription_id = $1 ORDER BY created_at DESC LIMIT 1', [
      logSubs[0],
    ]);
    const chargeCustomer = await createCustomer(
      db,
      'bench-charge',
      { mainnetAllowed: true, maxActiveSubscriptions: null, requestsPerSecond: 1_000_000 },
      10n ** 15n,
    );
    const probeIds = {
      customer: customer.id,
      chargeCustomer: chargeCustomer.id,
      subscriptions: logSubs,
      callback: recent?.id as string,
      logUrl: `${okUrl}/log`,
    };

    const env = {
      DATABASE_URL: '',
      HERALD_CONFIG: configFile,
      HERALD_DATA_DIR: '',
      HERALD_ROLES: '',
      HERALD_LOG_LEVEL: 'info',
      HERALD_DELIVERY_ALLOW_NETWORKS: '127.0.0.1/32,::1/128',
      HERALD_DELIVERY_CA_FILE: caFile,
    };
    const apiPort = await freePort();
    const api = startChild(process.execPath, [HERALD, 'serve', '--roles', 'api', '--port', String(apiPort), '--data-dir', dataDir], {
      env: { ...env, PGAPPNAME: 'herald-api' },
      label: 'api',
    });
    const apiUrl = `http://127.0.0.1:${apiPort}`;
    await waitForOk(`${apiUrl}/readyz`, { child: api });
    const worker = startChild(process.execPath, [HERALD, 'serve', '--roles', 'delivery', '--data-dir', dataDir], {
      env: { ...env, PGAPPNAME: 'herald-worker' },
      label: 'worker',
    });
    const pm = postmasterPid(dataDir);
    const delivered = async () => {
      const counts = (await receiver.stats()).counts;
      return Object.entries(counts).reduce((n, [path, c]) => (path.startsWith('/deliver/') ? n + c : n), 0);
    };
    const assertWorker = (w: Child) => {
      if (!isAlive(w.pid)) throw new Error(`the worker exited:\n${w.output()}`);
    };
    // Warm-up: the worker reaches its pace, the API its plans.
    const warm = probeLog(apiUrl, key, db, probeIds);
    await sleep(5_000);
    await warm.stop();
    assertWorker(worker);

    const window = async (label: string, during: () => Promise<void>) => {
      const probe = probeLog(apiUrl, key, db, probeIds);
      const sampler = sampleDatabase(db);
      // CPU in % of one core (the machine has 2): 'other' is what the rest of the machine used meanwhile.
      const cpu = measureCpu({
        worker: () => processCpuSeconds(worker.pid),
        api: () => processCpuSeconds(api.pid),
        postgres: () => (pm ? treeCpuSeconds(pm) : 0),
        receiver: () => processCpuSeconds(receiver.child.pid),
        machine: machineBusySeconds,
      });
      const n0 = await delivered();
      const t0 = performance.now();
      await during();
      const n1 = await delivered();
      const seconds = (performance.now() - t0) / 1000;
      const cpuPct = cpu.stop();
      const { machine = 0, ...ours } = cpuPct;
      const logFigures = await probe.stop();
      const database = await sampler.stop();
      assertWorker(worker);
      const other = Math.max(0, machine - Object.values(ours).reduce((a, b) => a + b, 0));
      const figures = {
        seconds: round(seconds, 2),
        callbacksPerSecond: Math.round((n1 - n0) / seconds),
        log: logFigures,
        cpuPct: { ...cpuPct, other },
        database,
      };
      log(`${label}: ${JSON.stringify(figures)}`);
      return figures;
    };
    const before = await window('baseline before', () => sleep(options.duration * 1000));
    let pruneOutput = '';
    const pruning = await window('pruning', async () => {
      const prune = startChild(process.execPath, [HERALD, 'prune', '--data-dir', dataDir], { env: { ...env, PGAPPNAME: 'herald-prune' }, label: 'prune' });
      const code = await prune.exited;
      pruneOutput = prune.stdout();
      if (code !== 0) throw new Error(`herald prune exited with ${code}:\n${prune.output()}`);
    });
    const after = await window('baseline after', () => sleep(options.duration * 1000));

    const totalLine = pruneOutput.match(/total: deleted (\d+) callbacks and (\d+) attempts in ([\d.]+) s/);
    if (!totalLine) throw new Error(`no total in the output of herald prune:\n${pruneOutput}`);
    const prunedCallbacks = Number(totalLine[1]);
    const prunedAttempts = Number(totalLine[2]);
    const pruneSeconds = Number(totalLine[3]);
    const busy = pruneOutput.match(/\(([\d.]+) s in batches\)/);
    const busySeconds = busy ? Number(busy[1]) : undefined;
    const [left] = await db.query<{ pending: number; total: number }>(
      'bench:left',
      "SELECT count(*) FILTER (WHERE status = 'pending')::int AS pending, count(*)::int AS total FROM callbacks",
    );
    await worker.stop('SIGTERM', 20_000);
    await api.stop('SIGTERM', 20_000);
    await receiver.child.stop('SIGTERM', 10_000);

    const baseline = (before.callbacksPerSecond + after.callbacksPerSecond) / 2;
    const dropPct = round((1 - pruning.callbacksPerSecond / baseline) * 100);
    const pruneRowsPerSecond = Math.round(prunedCallbacks / pruneSeconds);
    const logP99Ms = Math.max(before.log.p99Ms, pruning.log.p99Ms, after.log.p99Ms);
    const pass = {
      prunedAllOld: prunedCallbacks === old,
      workerNeverIdle: (left?.pending ?? 0) > 0,
      deliveryDrop: dropPct <= TARGETS.deliveryDropPct,
      pruneRate: pruneRowsPerSecond >= TARGETS.pruneRowsPerSecond,
      logP99: logP99Ms <= TARGETS.logP99Ms && pruning.log.errors === 0,
    };
    return {
      bench: 'retention',
      ...(experiment && {
        experiment: { batchSize: retention.batchSize, pauseMs: retention.pauseMs ?? 'default', dutyCycle: retention.dutyCycle ?? 'default' },
      }),
      scale: s,
      callbackRows: total,
      oldRows: old,
      pendingQueued: pendingCount,
      // 'default': dutyCycle 1 and pauseMs 0 with the pruner's backend reniced (database.pruneBackendNice), else 0.5 and 10.
      retention: {
        batchSize: retention.batchSize,
        pauseMs: retention.pauseMs ?? 'default',
        dutyCycle: retention.dutyCycle ?? 'default',
        backendNice: retention.backendNice,
      },
      buildSeconds: round(buildSeconds),
      prune: {
        callbacks: prunedCallbacks,
        attempts: prunedAttempts,
        seconds: pruneSeconds,
        rowsPerSecond: pruneRowsPerSecond,
        // Of the pruner's time, the share in batches (the rest: the duty cycle's pauses).
        busyPct: busySeconds === undefined ? null : round((busySeconds / pruneSeconds) * 100),
        // What the pruning costs the database, per callback (with its attempt), whatever the machine's load.
        backendCpuMicrosPerCallback: round((pruning.database.pruneBackendCpuSeconds * 1e6) / prunedCallbacks),
      },
      delivery: { before, pruning, after, baselinePerSecond: Math.round(baseline), dropPct },
      logP99Ms,
      left,
      targets: { deliveryDropPct: `<=${TARGETS.deliveryDropPct}`, pruneRowsPerSecond: `>=${TARGETS.pruneRowsPerSecond}`, logP99Ms: `<=${TARGETS.logP99Ms}` },
      pass: { ...pass, all: Object.values(pass).every(Boolean) },
    };
  } finally {
    await runCleanups();
  }
}

/** The nice level of process `pid`'s scheduler autogroup (`/proc/<pid>/autogroup`: "/autogroup-N nice K"), if it has one. */
function autogroupNice(pid: number): number | undefined {
  try {
    const nice = Number(readFileSync(`/proc/${pid}/autogroup`, 'utf8').split(' nice ')[1]);
    return Number.isFinite(nice) ? nice : undefined;
  } catch {
    return undefined;
  }
}
