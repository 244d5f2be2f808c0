/**
 * The recovery benchmark. Target (issue 14, point 1): 100,000 callbacks recovered without slowing live
 * delivery by more than 10 %.
 *
 * Processes: this one owns the embedded PostgreSQL of a fresh temporary data directory (migrated with
 * the store code), fills it and produces the live stream; two receiver children (bench/delivery.ts
 * --receiver-child), one for the live stream and one for the recovered URL, so that neither receiver's
 * CPU limits the other (in production they are different hosts); the service under test is ONE
 * `herald serve --roles api,delivery` on that database: the API takes the recover request, the delivery
 * role runs the job and delivers both streams.
 *
 * Data: customer `live` has 4 subscriptions on the live receiver; customer `recovering` has one
 * subscription per round on the other receiver (`/recover/<round>`), each with RECOVER_COUNT failed
 * callbacks created an hour ago (queued with enqueueCallbacks, then marked failed as exhausted retries
 * leave them). All of it exists before the service starts.
 *
 * Live delivery at full speed: this process enqueues the live customer's callbacks as chain following
 * does (blocks of LIVE_BLOCK, each in its own transaction, due when committed) whenever fewer than
 * LIVE_BACKLOG are waiting, so the worker never runs dry and new live callbacks keep arriving behind
 * the recovered ones in the due order, as they would.
 *
 * Rounds (BENCH_RECOVERY_RUNS, default 3), on one service: a baseline window of BENCH_DURATION seconds
 * (default 10) of live delivery alone, then `POST /blockchain-events/callbacks/recover` for that round's
 * URL (since two hours ago) and a window from the request until every recovered callback is delivered.
 * A last baseline closes the series. Live throughput = POSTs the live receiver got per second in each
 * window; a round's drop is its recovery window against the mean of the baselines before and after it.
 * Recovery figures: queued/s (the job's found callbacks from the request to the job's finish) and
 * delivered/s (from the request to the last recovered callback's outcome). Reported: each round and the
 * medians, with the load average.
 *
 * Interleaved (the default, BENCH_RECOVERY_CYCLE=<on>,<off> seconds, default 40,20; 0 for none): the
 * recovery window compared with baselines 10-30 minutes apart measures the machine's drift as much as
 * the recovery (the live rate falls as the log grows, and a shared VM's steal moves it by a third within
 * minutes), so the one job is also held now and then (the bench marks it done for a while and running
 * again after: the service's runner finds no chunk to work, looks again a second later, and paces
 * afresh). Each cycle: ON, from the first recovered POST after the job was let go, for <on> seconds;
 * then OFF, the job held, from when what it had queued was sent (no recovered POST for 1.5 s) for <off>
 * seconds of live delivery alone. A cycle's drop is its ON live rate against the mean of the OFF windows
 * (or the round's baselines) on either side of it, a minute apart; the round's drop is the median of its
 * cycles' drops. The whole window's drop against the baselines (OFF time included, so it understates) is
 * reported beside it.
 *
 * Against the code before (BENCH_RECOVERY_BEFORE: the `bin/herald.js` of a build of it): the rounds
 * alternate between that service and this one (the other first), each round on a service started for it
 * (warm-up, baseline, recovery, baseline), so both run in the same conditions; medians per service.
 *
 * Environment: BENCH_DURATION; BENCH_RECOVERY_RUNS (rounds per service); BENCH_RECOVERY_COUNT (callbacks
 * per round, default 100,000; a smaller count is an experiment); BENCH_RECOVERY_BEFORE; BENCH_RECOVERY_CYCLE.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/config/config.ts';
import { callbackBody } from '../src/domain/callbacks.ts';
import { callbackOfEvent, type NewCallback } from '../src/domain/events.ts';
import { enqueueCallbacks } from '../src/store/callbacks.ts';
import { createApiKey, createCustomer } from '../src/store/customers.ts';
import type { Db } from '../src/store/db.ts';
import { upsertDomain } from '../src/store/domains.ts';
import { type OpenDatabase, openDatabase } from '../src/store/open.ts';
import { startReceiverChild } from './delivery.ts';
import {
  envInt,
  freePort,
  HERALD,
  isAlive,
  log,
  machineBusySeconds,
  measureCpu,
  median,
  onCleanup,
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

const TARGETS = { liveDropPct: 10 };
const LIVE_SUBSCRIPTIONS = 4;
/** Callbacks per live block (one transaction each) and the most waiting before the producer adds more. */
const LIVE_BLOCK = 250;
const LIVE_BACKLOG = 4_000;
const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

let height = 18_000_000;

/** One TRANSACTION_MINED callback, ~400 bytes of body as chain following makes them. */
function makeCallback(customerId: string, subscriptionId: string, callbackUrl: string): NewCallback {
  const key = randomBytes(32).toString('hex');
  const h = height++;
  return callbackOfEvent({
    customerId,
    subscriptionId,
    eventType: 'TRANSACTION_MINED',
    idempotencyKey: key,
    body: callbackBody({ id: subscriptionId, eventType: 'TRANSACTION_MINED', apiVersion: BENCH_API_VERSION }, key, {
      blockchain: 'ethereum',
      network: 'goerli',
      transactionId: `0x${randomBytes(32).toString('hex')}`,
      minedInBlock: { height: h, hash: `0x${randomBytes(32).toString('hex')}`, timestamp: 1_700_000_000 + h },
    }),
    callbackUrl,
  });
}

/** `count` failed callbacks of one subscription, created an hour ago, as exhausted retries leave them. */
async function buildFailed(db: Db, customerId: string, subscriptionId: string, callbackUrl: string, count: number): Promise<void> {
  for (let i = 0; i < count; i += 5_000) {
    const batch = Array.from({ length: Math.min(5_000, count - i) }, () => makeCallback(customerId, subscriptionId, callbackUrl));
    await db.transaction('bench:enqueue-failed', (tx) => enqueueCallbacks(tx, batch));
  }
  await db.query(
    'bench:fail',
    `UPDATE callbacks SET status = 'failed', outcome = 'maximum_retry_attempts_reached', attempts = 8,
       created_at = now() - interval '1 hour', finished_at = now() - interval '30 minutes'
     WHERE subscription_id = $1`,
    [subscriptionId],
  );
}

/**
 * The live stream: blocks of LIVE_BLOCK callbacks spread over the live subscriptions, each committed in a
 * transaction of its own, whenever fewer than LIVE_BACKLOG are waiting (produced minus received).
 */
function produceLive(db: Db, customerId: string, subscriptions: { id: string; url: string }[], received: () => Promise<number>) {
  let running = true;
  let produced = 0;
  let n = 0;
  const done = (async () => {
    while (running) {
      let backlog: number;
      try {
        backlog = produced - (await received());
      } catch (error) {
        if (!running) return; // the receivers stopped first (a signal's cleanup)
        throw error;
      }
      for (let room = LIVE_BACKLOG - backlog; running && room >= LIVE_BLOCK; room -= LIVE_BLOCK) {
        const block = Array.from({ length: LIVE_BLOCK }, () => {
          const s = subscriptions[n++ % subscriptions.length] as { id: string; url: string };
          return makeCallback(customerId, s.id, s.url);
        });
        await db.transaction('bench:enqueue-live', (tx) => enqueueCallbacks(tx, block));
        produced += block.length;
      }
      await sleep(20);
    }
  })();
  // Registered after the receivers: a signal's cleanup stops the producer before them.
  const unregister = onCleanup(async () => {
    running = false;
    await done.catch(() => undefined);
  });
  return {
    async stop() {
      running = false;
      await done;
      unregister();
      return produced;
    },
  };
}

/** BENCH_RECOVERY_CYCLE: '<on>,<off>' seconds (default 40,20), or '0' for one uninterrupted recovery window. */
function cycleOf(raw: string | undefined): { onMs: number; offMs: number } | undefined {
  if (raw === '0') return undefined;
  const [on, off] = (raw ?? '40,20').split(',').map(Number);
  if (!on || !off || on < 5 || off < 5) throw new Error(`BENCH_RECOVERY_CYCLE must be '<on>,<off>' seconds (each at least 5) or 0, not '${raw}'.`);
  return { onMs: on * 1000, offMs: off * 1000 };
}

/** A stretch of live delivery: alone (off) or beside the recovery (on). */
type Stretch = { kind: 'on' | 'off'; seconds: number; livePerSecond: number };

/** Each ON stretch's drop against the mean of the nearest OFF stretches before and after it (one side at the ends), in %. */
function pairedDrops(timeline: Stretch[]): number[] {
  const drops: number[] = [];
  timeline.forEach((s, i) => {
    if (s.kind !== 'on') return;
    const before = timeline
      .slice(0, i)
      .reverse()
      .find((t) => t.kind === 'off');
    const after = timeline.slice(i + 1).find((t) => t.kind === 'off');
    const sides = [before, after].filter((t): t is Stretch => t !== undefined);
    if (sides.length === 0) return;
    const alone = sides.reduce((n, t) => n + t.livePerSecond, 0) / sides.length;
    if (alone > 0) drops.push(round((1 - s.livePerSecond / alone) * 100));
  });
  return drops;
}

export default async function recoveryBenchmark(options: { duration: number }): Promise<Record<string, unknown>> {
  const runs = envInt('BENCH_RECOVERY_RUNS', 3);
  const count = envInt('BENCH_RECOVERY_COUNT', 100_000);
  const beforeBin = process.env.BENCH_RECOVERY_BEFORE || undefined;
  const cycle = cycleOf(process.env.BENCH_RECOVERY_CYCLE);
  const dataDir = mkdtempSync(join(tmpdir(), 'herald-bench-recovery-'));
  let database: OpenDatabase | undefined;
  removeDataDirOnCleanup(dataDir, () => database?.close());
  const loads: number[] = [];
  try {
    const liveReceiver = await startReceiverChild();
    const recoverReceiver = await startReceiverChild();
    // One CA file with both receivers' CAs.
    const caFile = join(dataDir, 'receivers-ca.pem');
    writeFileSync(caFile, `${liveReceiver.info.caPem}\n${recoverReceiver.info.caPem}`);
    const liveUrl = `https://localhost:${liveReceiver.info.ok}`;
    const recoverUrl = `https://localhost:${recoverReceiver.info.ok}`;
    log(`receivers: live ${liveUrl}, recovered ${recoverUrl}; data directory ${dataDir}`);

    database = await openDatabase({ ...loadConfig({ dataDir }, {}), databasePoolSize: 4 });
    const db = database.db;
    const plan = { mainnetAllowed: true, maxActiveSubscriptions: null, requestsPerSecond: 1_000_000 };
    const live = await createCustomer(db, 'live', plan, 10n ** 15n);
    const recovering = await createCustomer(db, 'recovering', plan, 10n ** 15n);
    for (const c of [live, recovering]) await upsertDomain(db, c.id, 'localhost', 'operator');
    const { key } = await createApiKey(db, recovering.id, { label: 'bench' });
    const liveSubs = [];
    for (let i = 0; i < LIVE_SUBSCRIPTIONS; i++) {
      const url = `${liveUrl}/live/${i}`;
      liveSubs.push({ id: await insertBenchSubscription(db, live.id, url), url });
    }
    const started = performance.now();
    const recoverUrls: string[] = [];
    const rounds = beforeBin ? runs * 2 : runs;
    for (let r = 0; r < rounds; r++) {
      const url = `${recoverUrl}/recover/${r}`;
      await buildFailed(db, recovering.id, await insertBenchSubscription(db, recovering.id, url), url, count);
      recoverUrls.push(url);
    }
    await db.query('bench:vacuum', 'VACUUM (ANALYZE) callbacks');
    log(`built ${rounds} × ${count} failed callbacks in ${Math.round(performance.now() - started)} ms`);

    const apiPort = await freePort();
    const startService = async (bin: string, label: string) => {
      const child = startChild(process.execPath, [bin, 'serve', '--roles', 'api,delivery', '--port', String(apiPort), '--data-dir', dataDir], {
        env: {
          DATABASE_URL: '',
          HERALD_CONFIG: '',
          HERALD_DATA_DIR: '',
          HERALD_ROLES: '',
          HERALD_LOG_LEVEL: 'info',
          HERALD_DELIVERY_ALLOW_NETWORKS: '127.0.0.1/32,::1/128',
          HERALD_DELIVERY_CA_FILE: caFile,
        },
        label,
      });
      await waitForOk(`${apiUrl}/readyz`, { child });
      return child;
    };
    const apiUrl = `http://127.0.0.1:${apiPort}`;
    let service = await startService(HERALD, 'service');
    const pm = postmasterPid(dataDir);
    const countPaths = async (receiver: typeof liveReceiver, prefix: string) =>
      Object.entries((await receiver.stats()).counts).reduce((n, [path, c]) => (path.startsWith(prefix) ? n + c : n), 0);
    const liveReceived = () => countPaths(liveReceiver, '/live/');
    const assertAlive = () => {
      if (!isAlive(service.pid)) throw new Error(`the service exited:\n${service.output()}`);
    };

    const producer = produceLive(db, live.id, liveSubs, liveReceived);
    log('warm-up: live delivery alone for 5 s');
    await sleep(5_000);
    assertAlive();

    /** Live POSTs per second while `during` runs. */
    const liveRate = async <T>(during: () => Promise<T>) => {
      const n0 = await liveReceived();
      const t0 = performance.now();
      const result = await during();
      const seconds = (performance.now() - t0) / 1000;
      return { seconds: round(seconds, 2), livePerSecond: Math.round(((await liveReceived()) - n0) / seconds), result };
    };
    /** One stretch of the interleaving: the live rate while `during` runs. */
    const stretch = async (kind: Stretch['kind'], during: () => Promise<void>): Promise<Stretch> => {
      const { seconds, livePerSecond } = await liveRate(during);
      return { kind, seconds, livePerSecond };
    };
    /** The live rate while `during` runs, with the CPU of each process (% of one core). */
    const window = async <T>(label: string, during: () => Promise<T>) => {
      const cpu = measureCpu({
        service: () => processCpuSeconds(service.pid),
        postgres: () => (pm ? treeCpuSeconds(pm) : 0),
        receivers: () => processCpuSeconds(liveReceiver.child.pid) + processCpuSeconds(recoverReceiver.child.pid),
        bench: () => {
          const u = process.cpuUsage();
          return (u.user + u.system) / 1e6;
        },
        machine: machineBusySeconds,
      });
      const { seconds, livePerSecond, result } = await liveRate(during);
      const cpuPct = cpu.stop();
      const { machine = 0, ...ours } = cpuPct;
      assertAlive();
      const load1 = loadavg()[0] as number;
      loads.push(load1);
      const figures = {
        seconds,
        liveCallbacksPerSecond: livePerSecond,
        cpuPct: { ...cpuPct, other: Math.max(0, machine - Object.values(ours).reduce((a, b) => a + b, 0)) },
        loadAverage1m: round(load1, 2),
      };
      log(`${label}: ${JSON.stringify(figures)}`);
      return { figures, result };
    };

    const baseline = () => sleep(options.duration * 1000);
    /**
     * ON and OFF stretches (see the file comment) until `finished()`. OFF marks the job done (finished_at
     * left empty) for the stretch and running again after: its runner's next chunk finds no job to work and
     * looks again a second later. Short updates, not a row lock held through the stretch: a transaction
     * left open that long (a row lock gives it a transaction id) would hold back the cleanup of the dead
     * rows live delivery leaves, and so slow live delivery in the very stretches meant to measure it alone.
     */
    const interleave = async (recoveryId: string, recovered: () => number, finished: () => boolean, { onMs, offMs }: { onMs: number; offMs: number }) => {
      const stretches: Stretch[] = [];
      while (!finished()) {
        const r0 = recovered();
        while (!finished() && recovered() === r0) await sleep(100);
        if (finished()) break;
        const on = await stretch('on', async () => {
          for (const t = performance.now(); !finished() && performance.now() - t < onMs; ) await sleep(100);
        });
        // An ON cut short by the job's end: kept when long enough to say something.
        if (on.seconds >= 5) stretches.push(on);
        log(`recovery ${recoveryId}: ON ${JSON.stringify(on)}`);
        if (finished()) break;
        const held = await db.query(
          'bench:hold-recovery',
          "UPDATE recoveries SET state = 'done' WHERE id = $1 AND state IN ('queued', 'running') RETURNING 1",
          [recoveryId],
        );
        if (held.length === 0) break; // the job finished its last chunk meanwhile
        let last = recovered();
        let quietSince = performance.now();
        for (const t = performance.now(); performance.now() - t < 15_000 && performance.now() - quietSince < 1_500; ) {
          await sleep(100);
          const n = recovered();
          if (n !== last) [last, quietSince] = [n, performance.now()];
        }
        const off = await stretch('off', () => sleep(offMs));
        stretches.push(off);
        log(`recovery ${recoveryId}: OFF ${JSON.stringify(off)}`);
        await db.query('bench:release-recovery', "UPDATE recoveries SET state = 'running' WHERE id = $1 AND state = 'done' AND finished_at IS NULL", [
          recoveryId,
        ]);
      }
      return stretches;
    };
    const recover = async (r: number) => {
      const url = recoverUrls[r] as string;
      const path = new URL(url).pathname;
      const requestedAt = Date.now();
      const response = await fetch(`${apiUrl}/blockchain-events/callbacks/recover`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': key },
        body: JSON.stringify({ data: { item: { callbackUrl: url, since: Math.floor(requestedAt / 1000) - 7200 } } }),
      });
      const answer = (await response.json()) as { data?: { item?: { recoveryId: string; found: number } } };
      const job = answer.data?.item;
      if (response.status !== 202 || !job) throw new Error(`the recover request answered ${response.status}: ${JSON.stringify(answer)}`);
      if (job.found !== count) throw new Error(`the recovery found ${job.found} callbacks, not ${count}`);
      let lastLog = performance.now();
      // Polled here alone (every 100 ms); the interleaving reads it.
      let received = 0;
      const stretches = cycle
        ? interleave(
            job.recoveryId,
            () => received,
            () => received >= count,
            cycle,
          )
        : Promise.resolve([]);
      for (;;) {
        received = await countPaths(recoverReceiver, path);
        if (received >= count) break;
        assertAlive();
        if (performance.now() - lastLog > 5_000) {
          log(`round ${r + 1}: ${received} of ${count} recovered callbacks received`);
          lastLog = performance.now();
        }
        await sleep(100);
      }
      const timeline = await stretches;
      // Every outcome recorded (the receiver answers before the worker records) and the job finished (a
      // paced job learns that its last chunk was the last with the next one), then the figures from the rows.
      for (;;) {
        const [left] = await db.query<{ n: number; finished: boolean }>(
          'bench:recovery-left',
          `SELECT (SELECT count(*)::int FROM callbacks WHERE recovery_id = $1 AND status = 'pending') AS n,
             (SELECT finished_at IS NOT NULL FROM recoveries WHERE id = $1) AS finished`,
          [job.recoveryId],
        );
        if (left?.n === 0 && left.finished) break;
        await sleep(50);
      }
      const [row] = await db.query<{ state: string; queued: number; queued_ms: number; delivered: number; delivered_ms: number }>(
        'bench:recovery-figures',
        `SELECT j.state, j.queued, extract(epoch FROM j.finished_at) * 1000 AS queued_ms,
           (SELECT count(*)::int FROM callbacks c WHERE c.recovery_id = j.id AND c.status = 'delivered') AS delivered,
           (SELECT extract(epoch FROM max(c.finished_at)) * 1000 FROM callbacks c WHERE c.recovery_id = j.id) AS delivered_ms
         FROM recoveries j WHERE j.id = $1`,
        [job.recoveryId],
      );
      if (row?.state !== 'done' || row.queued !== count || row.delivered !== count)
        throw new Error(`round ${r + 1}: the recovery ended as ${JSON.stringify(row)}, not done with ${count} queued and delivered`);
      const posts = await countPaths(recoverReceiver, path);
      return {
        // From the request to the job's finish (the last chunk queued, or the empty one after it).
        queuedPerSecond: Math.round(count / ((Number(row.queued_ms) - requestedAt) / 1000)),
        deliveredPerSecond: Math.round(count / ((Number(row.delivered_ms) - requestedAt) / 1000)),
        queueSeconds: round((Number(row.queued_ms) - requestedAt) / 1000, 2),
        deliverSeconds: round((Number(row.delivered_ms) - requestedAt) / 1000, 2),
        // At least once: more POSTs than callbacks would be lease expiries, not expected here.
        duplicatePosts: posts - count,
        timeline,
      };
    };

    type Round = {
      service: 'now' | 'before';
      live: Awaited<ReturnType<typeof window>>['figures'];
      recovery: Omit<Awaited<ReturnType<typeof recover>>, 'timeline'>;
      baselinePerSecond: number;
      /** Interleaved: the median of the cycles' drops; otherwise the whole window's. */
      dropPct: number;
      /** The whole recovery window against the mean of the baselines (interleaved: OFF time included). */
      wholeWindowDropPct: number;
      cycles?: { drops: number[]; on: number; offPerSecond: number; onPerSecond: number };
    };
    const results: Round[] = [];
    const baselines: Round['live'][] = [];
    for (let r = 0; r < rounds; r++) {
      // With a service before: each round on a service of its own, the code before first, then alternating.
      const which = beforeBin && r % 2 === 0 ? 'before' : 'now';
      if (beforeBin) {
        await service.stop('SIGTERM', 20_000);
        service = await startService(which === 'before' ? beforeBin : HERALD, `service (${which})`);
        await sleep(3_000); // its worker's connections and JIT warm
      }
      let before = baselines.at(-1);
      if (r === 0 || beforeBin || !before) {
        before = (await window(`round ${r + 1} (${which}): baseline before`, baseline)).figures;
        baselines.push(before);
      }
      const during = await window(`round ${r + 1} (${which}): recovery of ${count}`, () => recover(r));
      log(`round ${r + 1} (${which}): recovery ${JSON.stringify(during.result)}`);
      const after = (await window(`round ${r + 1} (${which}): baseline after`, baseline)).figures;
      baselines.push(after);
      const mean = (before.liveCallbacksPerSecond + after.liveCallbacksPerSecond) / 2;
      const wholeWindowDropPct = round((1 - during.figures.liveCallbacksPerSecond / mean) * 100);
      const { timeline, ...recovery } = during.result;
      let cycles: Round['cycles'];
      if (cycle) {
        const edges = (live: typeof before): Stretch => ({ kind: 'off', seconds: live.seconds, livePerSecond: live.liveCallbacksPerSecond });
        const drops = pairedDrops([edges(before), ...timeline, edges(after)]);
        const rate = (kind: Stretch['kind']) => {
          const of = timeline.filter((s) => s.kind === kind);
          const seconds = of.reduce((n, s) => n + s.seconds, 0);
          return seconds > 0 ? Math.round(of.reduce((n, s) => n + s.livePerSecond * s.seconds, 0) / seconds) : 0;
        };
        cycles = { drops, on: drops.length, onPerSecond: rate('on'), offPerSecond: rate('off') };
        log(`round ${r + 1} (${which}): cycles ${JSON.stringify(cycles)}`);
      }
      const dropPct = cycles && cycles.drops.length > 0 ? round(median(cycles.drops)) : wholeWindowDropPct;
      log(`round ${r + 1} (${which}): live drop ${dropPct} % (whole window against the baselines: ${wholeWindowDropPct} %)`);
      results.push({ service: which, live: during.figures, recovery, baselinePerSecond: Math.round(mean), dropPct, wholeWindowDropPct, cycles });
    }
    const produced = await producer.stop();
    await service.stop('SIGTERM', 20_000);
    await Promise.all([liveReceiver.child.stop('SIGTERM', 10_000), recoverReceiver.child.stop('SIGTERM', 10_000)]);

    const medians = (of: Round[]) => ({
      liveDropPct: median(of.map((r) => r.dropPct)),
      wholeWindowDropPct: median(of.map((r) => r.wholeWindowDropPct)),
      baselinePerSecond: median(of.map((r) => r.baselinePerSecond)),
      liveDuringRecoveryPerSecond: median(of.map((r) => r.live.liveCallbacksPerSecond)),
      recoveryQueuedPerSecond: median(of.map((r) => r.recovery.queuedPerSecond)),
      recoveryDeliveredPerSecond: median(of.map((r) => r.recovery.deliveredPerSecond)),
      recoverySeconds: median(of.map((r) => r.recovery.deliverSeconds)),
    });
    const now = medians(results.filter((r) => r.service === 'now'));
    const pass = { liveDrop: now.liveDropPct <= TARGETS.liveDropPct };
    return {
      bench: 'recovery',
      ...(count !== 100_000 && { experiment: { count } }),
      runs,
      recoveredPerRound: count,
      cycle: cycle ? { onSeconds: cycle.onMs / 1000, offSeconds: cycle.offMs / 1000 } : 'none',
      liveProduced: produced,
      median: now,
      ...(beforeBin && { before: { bin: beforeBin, median: medians(results.filter((r) => r.service === 'before')) } }),
      loadAverage1m: { min: round(Math.min(...loads), 2), max: round(Math.max(...loads), 2) },
      rounds: results,
      baselines,
      targets: { liveDropPct: `<=${TARGETS.liveDropPct}` },
      pass: { ...pass, all: Object.values(pass).every(Boolean) },
    };
  } finally {
    await runCleanups();
  }
}
