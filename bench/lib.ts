/**
 * Helpers shared by the benchmarks: child processes that are always cleaned up, free ports, HTTP
 * readiness polling, autocannon loads summarised to a few figures, and /proc sampling (RSS, CPU).
 * Progress goes to stderr; stdout is reserved for the one JSON line of figures per benchmark.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { appendFileSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon, { type Request, type Result } from 'autocannon';
import pg from 'pg';
import type { Queryable } from '../src/store/db.ts';

/** The project root (where package.json is). */
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

export function log(message: string): void {
  process.stderr.write(`[bench] ${message}\n`);
}

export const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms));

/** Seconds of each measured load: BENCH_DURATION, default 10. */
export function benchDuration(): number {
  const raw = process.env.BENCH_DURATION;
  if (raw === undefined || raw === '') return 10;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`BENCH_DURATION must be a positive number of seconds, not '${raw}'.`);
  return n;
}

// ---------------------------------------------------------------------------------------------------
// Cleanup: everything a benchmark starts registers how to stop it; run.ts also runs these on a signal.

const cleanups = new Set<() => Promise<void>>();

export function onCleanup(fn: () => Promise<void>): () => void {
  cleanups.add(fn);
  return () => cleanups.delete(fn);
}

/** Runs every registered cleanup, most recent first; errors are logged, not thrown. */
export async function runCleanups(): Promise<void> {
  for (const fn of [...cleanups].reverse()) {
    cleanups.delete(fn);
    try {
      await fn();
    } catch (error) {
      log(`cleanup failed: ${(error as Error).message}`);
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// Child processes.

export interface Child {
  process: ChildProcess;
  pid: number;
  /** The last lines the child wrote (stdout and stderr), for error messages. */
  output(): string;
  /** Whole stdout so far. */
  stdout(): string;
  exited: Promise<number | null>;
  /** Sends `signal` to `pid` (default: the child itself) and waits for the child to exit; SIGKILL after `timeoutMs`. */
  stop(signal?: NodeJS.Signals, timeoutMs?: number, pid?: number): Promise<number | null>;
}

export function startChild(command: string, args: string[], options: { env?: NodeJS.ProcessEnv; cwd?: string; label: string }): Child {
  const child = spawn(command, args, { cwd: options.cwd ?? ROOT, env: { ...process.env, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  if (child.pid === undefined) throw new Error(`could not start ${options.label}`);
  const pid = child.pid;
  const tail: string[] = [];
  let out = '';
  const keep = (chunk: Buffer, isStdout: boolean) => {
    const text = chunk.toString('utf8');
    if (isStdout) out += text;
    tail.push(text);
    if (tail.length > 50) tail.shift();
  };
  child.stdout?.on('data', (c: Buffer) => keep(c, true));
  child.stderr?.on('data', (c: Buffer) => keep(c, false));
  const exited = new Promise<number | null>((done) => child.once('exit', (code, signal) => done(code ?? (signal ? -1 : null))));
  let running = true;
  void exited.then(() => {
    running = false;
  });
  const stop = async (signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 15_000, target = pid) => {
    if (!running) return await exited;
    try {
      process.kill(target, signal);
    } catch {
      // already gone
    }
    const timer = setTimeout(() => {
      log(`${options.label} did not exit ${timeoutMs} ms after ${signal}; killing it`);
      child.kill('SIGKILL');
    }, timeoutMs);
    const code = await exited;
    clearTimeout(timer);
    return code;
  };
  const unregister = onCleanup(async () => {
    await stop();
  });
  void exited.then(unregister);
  return { process: child, pid, output: () => tail.join('').trim(), stdout: () => out, exited, stop };
}

/** Runs a command to completion; returns its stdout, throws with its stderr when it fails. */
export async function runCommand(command: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<string> {
  return await new Promise((resolve, reject) => {
    execFile(command, args, { cwd: ROOT, env: { ...process.env, ...env }, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${command} ${args.join(' ')} failed: ${error.message}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

/** The same free-port helper the embedded database uses. */
export { freePort } from '../src/store/embedded.ts';

/** Polls `url` every `intervalMs` until it answers 200; fails early when `child` exits. */
export async function waitForOk(url: string, options: { child?: Child; timeoutMs?: number; intervalMs?: number } = {}): Promise<void> {
  const deadline = performance.now() + (options.timeoutMs ?? 60_000);
  let exited = false;
  void options.child?.exited.then(() => {
    exited = true;
  });
  let last = 'no answer';
  while (performance.now() < deadline) {
    if (exited) throw new Error(`the server exited before ${url} answered 200:\n${options.child?.output()}`);
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(2000) });
      await response.arrayBuffer();
      if (response.status === 200) return;
      last = `status ${response.status}`;
    } catch (error) {
      last = (error as Error).message;
    }
    await sleep(options.intervalMs ?? 10);
  }
  throw new Error(`${url} did not answer 200 in time (${last}):\n${options.child?.output() ?? ''}`);
}

/** Runs `work` on `items` with at most `concurrency` in flight. */
export async function forEachLimited<T>(items: T[], concurrency: number, work: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        await work(items[i] as T, i);
      }
    }),
  );
}

// ---------------------------------------------------------------------------------------------------
// /proc sampling.

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Resident set size of one process in MB, or undefined when it is gone. */
export function rssMb(pid: number): number | undefined {
  try {
    const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** Samples the RSS of `pid` every `intervalMs` until stopped. */
export function sampleRss(pid: number, intervalMs = 250) {
  const samples: number[] = [];
  const take = () => {
    const mb = rssMb(pid);
    if (mb !== undefined) samples.push(mb);
  };
  take();
  const timer = setInterval(take, intervalMs);
  return {
    samples,
    max: () => Math.max(0, ...samples),
    stop() {
      clearInterval(timer);
      take();
    },
  };
}

interface ProcStat {
  pid: number;
  ppid: number;
  /** utime + stime, in clock ticks. */
  cpu: number;
  /** cutime + cstime: CPU of waited-for children that have exited. */
  childCpu: number;
}

const CLOCK_TICKS = 100;

function procStat(pid: number): ProcStat | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
    // f[0] is field 3 (state); utime is field 14, stime 15, cutime 16, cstime 17.
    return { pid, ppid: Number(f[1]), cpu: Number(f[11]) + Number(f[12]), childCpu: Number(f[13]) + Number(f[14]) };
  } catch {
    return undefined;
  }
}

function allProcesses(): ProcStat[] {
  const out: ProcStat[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = procStat(Number(name));
    if (stat) out.push(stat);
  }
  return out;
}

/** The pids below `pid` (children, grandchildren, ...). */
export function descendants(pid: number): number[] {
  const all = allProcesses();
  const found: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    const parent = queue.shift() as number;
    for (const p of all) {
      if (p.ppid === parent) {
        found.push(p.pid);
        queue.push(p.pid);
      }
    }
  }
  return found;
}

export function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
  } catch {
    return '';
  }
}

/** CPU seconds used so far by a process tree: the process, its live descendants and its reaped children. */
export function treeCpuSeconds(pid: number): number {
  const root = procStat(pid);
  if (!root) return 0;
  const all = allProcesses();
  const byParent = new Map<number, ProcStat[]>();
  for (const p of all) byParent.set(p.ppid, [...(byParent.get(p.ppid) ?? []), p]);
  let ticks = 0;
  const queue = [root];
  while (queue.length > 0) {
    const p = queue.shift() as ProcStat;
    ticks += p.cpu + p.childCpu;
    queue.push(...(byParent.get(p.pid) ?? []));
  }
  return ticks / CLOCK_TICKS;
}

/** CPU seconds used so far by one process (all its threads), without its children. */
export function processCpuSeconds(pid: number): number {
  return (procStat(pid)?.cpu ?? 0) / CLOCK_TICKS;
}

/** Busy CPU seconds of the whole machine so far, summed over all cores (from /proc/stat). */
export function machineBusySeconds(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
  // cpu  user nice system idle iowait irq softirq steal ...
  const f = line.trim().split(/\s+/).slice(1).map(Number);
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = f;
  return (user + nice + system + irq + softirq + steal) / CLOCK_TICKS;
}

/** Starts measuring the CPU of some processes; `stop` gives each one's share of one core, in %. */
export function measureCpu(processes: Record<string, () => number>) {
  const started = performance.now();
  const before = Object.fromEntries(Object.entries(processes).map(([k, f]) => [k, f()]));
  return {
    stop(): Record<string, number> {
      const seconds = (performance.now() - started) / 1000;
      return Object.fromEntries(Object.entries(processes).map(([k, f]) => [k, Math.round(((f() - (before[k] ?? 0)) / seconds) * 100)]));
    },
    /** CPU seconds each used since the start (not a share of the wall time). */
    seconds(): Record<string, number> {
      return Object.fromEntries(Object.entries(processes).map(([k, f]) => [k, Math.round((f() - (before[k] ?? 0)) * 100) / 100]));
    },
  };
}

/** CPU seconds of this process (the load generator). */
export const selfCpuSeconds = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

// ---------------------------------------------------------------------------------------------------
// Loads.

export interface LoadFigures {
  /** Mean of the per-second request counts (autocannon's requests.average). */
  rps: number;
  total: number;
  durationS: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodes: Record<string, number>;
}

export function summarise(result: Result): LoadFigures {
  const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits;
  return {
    rps: Math.round(result.requests.average),
    total: result['2xx'] + result.non2xx,
    durationS: round(result.duration),
    p50: result.latency.p50,
    p90: result.latency.p90,
    p99: result.latency.p99,
    max: result.latency.max,
    mean: round(result.latency.mean),
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    statusCodes: Object.fromEntries(Object.entries(result.statusCodeStats).map(([code, s]) => [code, Number(s.count)])),
  };
}

/** One autocannon load: `connections` connections for `duration` seconds, cycling through `request`. */
export async function load(
  label: string,
  options: {
    url: string;
    connections: number;
    duration: number;
    request: Request;
    headers?: Record<string, string>;
    /** Requests per second over all connections (paced); default as fast as the server answers. */
    overallRate?: number;
  },
): Promise<LoadFigures> {
  log(`${label}: ${options.connections} connections${options.overallRate ? ` at ${options.overallRate} requests/s` : ''}, ${options.duration} s ...`);
  const instance = autocannon({
    url: options.url,
    connections: options.connections,
    duration: options.duration,
    ...(options.overallRate && { overallRate: options.overallRate }),
    timeout: 10,
    headers: options.headers,
    requests: [options.request],
  });
  const figures = summarise(await instance);
  log(
    `${label}: ${figures.rps} requests/s, p50 ${figures.p50} ms, p99 ${figures.p99} ms, max ${figures.max} ms, ` +
      `non-2xx ${figures.non2xx}, errors ${figures.errors}${figures.non2xx > 0 ? ` ${JSON.stringify(figures.statusCodes)}` : ''}`,
  );
  return figures;
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** The p-th percentile (0..100, nearest rank) of values sorted ascending; null when there are none. */
export function percentile(sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1] as number;
}

/** The pid of the embedded PostgreSQL running on `dataDir`, if one is. */
export function postmasterPid(dataDir: string): number | undefined {
  const file = join(dataDir, 'postgres', 'postmaster.pid');
  if (!existsSync(file)) return undefined;
  const pid = Number(readFileSync(file, 'utf8').split('\n')[0]);
  return Number.isInteger(pid) && pid > 0 && isAlive(pid) ? pid : undefined;
}

/**
 * At cleanup: `close` (the bench's own database handle), then stop an embedded PostgreSQL still running
 * on `dataDir` (a service child killed before it could stop it), then remove the directory.
 */
export function removeDataDirOnCleanup(dataDir: string, close: () => Promise<void> | undefined): void {
  onCleanup(async () => {
    await close();
    const pm = postmasterPid(dataDir);
    if (pm) {
      log(`embedded PostgreSQL (pid ${pm}) still running; stopping it`);
      process.kill(pm, 'SIGINT');
      for (let waited = 0; isAlive(pm) && waited < 10_000; waited += 50) await sleep(50);
      if (isAlive(pm)) process.kill(pm, 'SIGQUIT');
    }
    rmSync(dataDir, { recursive: true, force: true });
    log(`removed ${dataDir}`);
  });
}

// ---------------------------------------------------------------------------------------------------
// Settings and deterministic data.

/** A positive integer from the environment variable `name`, or `fallback` when it is unset. */
export function envInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer, not '${raw}'.`);
  return n;
}

/** A scale in (0, 1] from the environment variable `name` (default 1): every count of a benchmark times it. */
export function envScale(name: string): number {
  const raw = process.env[name];
  const n = raw ? Number(raw) : 1;
  if (!Number.isFinite(n) || n <= 0 || n > 1) throw new Error(`${name} must be in (0, 1], not '${raw}'.`);
  return n;
}

/** A 32-bit hash of (a, b): the same inputs always give the same synthetic data. */
export function mix(a: number, b: number): number {
  let h = Math.imul(a ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul((b + 0x632be5ab) | 0, 0xc2b2ae35);
  h ^= h >>> 15;
  h = Math.imul(h, 0x2c1b3c6d);
  h ^= h >>> 12;
  h = Math.imul(h, 0x297a2d39);
  h ^= h >>> 15;
  return h >>> 0;
}

/** Waits for the first stdout line of `child` (a node child prints one line of JSON once it is ready) and parses it. */
export async function firstStdoutLine<T>(child: Child, options: { what: string; timeoutMs: number; intervalMs: number }): Promise<T> {
  const deadline = performance.now() + options.timeoutMs;
  for (;;) {
    const out = child.stdout();
    const end = out.indexOf('\n');
    if (end >= 0) return JSON.parse(out.slice(0, end)) as T;
    if (!isAlive(child.pid) || performance.now() > deadline) throw new Error(`the ${options.what} did not start:\n${child.output()}`);
    await sleep(options.intervalMs);
  }
}

// ---------------------------------------------------------------------------------------------------
// The service under test catching up on a chain: `herald serve --roles ingest` on a fresh copy of a template database.

export const HERALD = join(ROOT, 'bin', 'herald.js');

/** `base` (a PostgreSQL URL) on the database `name`. */
export function databaseUrl(base: string, name: string): string {
  const url = new URL(base);
  url.pathname = `/${name}`;
  return url.toString();
}

/** The time of the child's first pino log line whose msg is `message`, if it wrote one. */
export function logTime(child: Child, message: string): number | undefined {
  for (const line of child.stdout().split('\n')) {
    if (!line.includes(message)) continue;
    try {
      const entry = JSON.parse(line) as { msg?: string; time?: number };
      if (entry.msg === message) return entry.time ?? Date.now();
    } catch {
      // not a log line
    }
  }
  return undefined;
}

export interface IngestRunOptions<K extends string> {
  run: number;
  /** The URL of the embedded PostgreSQL holding the template database `herald` (with no connection open). */
  baseUrl: string;
  /** The name of this run's copy of the template. */
  database: string;
  dataDir: string;
  /** The service's one chain entry; its startHeight is where the catch-up starts. */
  chain: { blockchain: string; network: string } & Record<string, unknown>;
  /** The height the cursor must reach. */
  last: number;
  nodeArgs: string[];
  /** The program to run as the service: this checkout's bin/herald.js unless given (another checkout's, to compare codes in one run). */
  herald?: string;
  nodePid: number;
  postgresPid: number | undefined;
  timeoutMs: number;
  /** When set: fail when the service has not logged 'following chain' after this long. */
  followTimeoutMs?: number;
  progress: { everyMs: number; line: (height: number) => string };
  /** Logs how long copying the template took. */
  logCopy?: boolean;
  /** Called at each poll of the cursor that finds it, with its height and commit time (ms). */
  onCursor?: (height: number, at: number) => void;
  /** count(*) queries (named `n`) run on the run's database once the cursor is at `last`. */
  counts: Record<K, string>;
}

export interface IngestRun<K extends string> {
  /** From the 'following chain' log line (the matching index is loaded) to the commit of `last`. */
  seconds: number;
  committedAt: number;
  /** From spawn to 'herald is ready' and to 'following chain'. */
  readyMs: number;
  followingMs: number;
  maxRssMb: number;
  /** Each process's share of one core, and `other` for the rest of the machine. */
  cpuPct: Record<string, number>;
  /** CPU seconds of the service, PostgreSQL and the node from the service's 'following chain' line to the last block (start-up left out). */
  catchUpCpuSeconds?: Record<string, number>;
  work: Record<K, number>;
  /** Steps the follower logged as failed (and retried). */
  stepFailures: number;
}

/**
 * One catch-up: copies the template to `database`, writes the service's configuration, spawns the service,
 * samples its RSS and the CPU of the service, PostgreSQL, the node, this process and the machine, and polls
 * the chain's cursor until it is at `last`. The copy is dropped afterwards.
 */
export async function ingestRun<K extends string>(options: IngestRunOptions<K>): Promise<IngestRun<K>> {
  const { run, database: name, chain } = options;
  const admin = new pg.Client({ connectionString: databaseUrl(options.baseUrl, 'postgres') });
  await admin.connect();
  const runDb = new pg.Client({ connectionString: databaseUrl(options.baseUrl, name) });
  try {
    let t0 = performance.now();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${name} TEMPLATE herald`);
    if (options.logCopy) log(`run ${run}: database ${name} copied from the template in ${Math.round(performance.now() - t0)} ms`);
    await runDb.connect();
    const configFile = join(options.dataDir, `service-${run}.json`);
    writeFileSync(configFile, JSON.stringify({ roles: ['ingest'], logLevel: 'info', chains: [chain] }));
    const spawnedAt = Date.now();
    const service = startChild(process.execPath, [...options.nodeArgs, options.herald ?? HERALD, 'serve'], {
      env: { DATABASE_URL: databaseUrl(options.baseUrl, name), HERALD_CONFIG: configFile, HERALD_DATA_DIR: '', HERALD_ROLES: '', HERALD_LOG_LEVEL: 'info' },
      label: `service (run ${run})`,
      ...(options.herald && { cwd: join(options.herald, '..', '..') }),
    });
    const rss = sampleRss(service.pid, 100);
    const cpu = measureCpu({
      service: () => processCpuSeconds(service.pid),
      postgres: () => (options.postgresPid ? treeCpuSeconds(options.postgresPid) : 0),
      node: () => processCpuSeconds(options.nodePid),
      bench: selfCpuSeconds,
      machine: machineBusySeconds,
    });
    t0 = performance.now();
    let followingAt: number | undefined;
    /** CPU seconds from the 'following chain' line on (as seen by this poll): the catch-up without the start-up. */
    let followingCpu: ReturnType<typeof measureCpu> | undefined;
    let lastLog = performance.now();
    let height = 0;
    let committedAt = 0;
    for (;;) {
      if (!isAlive(service.pid)) throw new Error(`the service exited during run ${run}:\n${service.output()}`);
      followingAt ??= logTime(service, 'following chain');
      if (followingAt !== undefined && !followingCpu) {
        followingCpu = measureCpu({
          service: () => processCpuSeconds(service.pid),
          postgres: () => (options.postgresPid ? treeCpuSeconds(options.postgresPid) : 0),
          node: () => processCpuSeconds(options.nodePid),
        });
      }
      if (followingAt === undefined && options.followTimeoutMs !== undefined && performance.now() - t0 > options.followTimeoutMs)
        throw new Error(
          `the service does not follow ${chain.blockchain}/${chain.network} after ${options.followTimeoutMs / 1000} s (no adapter in src/chains/registry.ts?):\n${service.output()}`,
        );
      const { rows } = await runDb.query<{ height: string; at: number }>(
        `SELECT height, extract(epoch FROM updated_at) * 1000 AS at FROM chain_cursors WHERE blockchain = $1 AND network = $2`,
        [chain.blockchain, chain.network],
      );
      if (rows[0]) {
        height = Number(rows[0].height);
        committedAt = Number(rows[0].at);
        options.onCursor?.(height, committedAt);
        if (process.env.BENCH_SERVICE_OUT) appendFileSync(`${process.env.BENCH_SERVICE_OUT}-cursor-${run}.log`, `${Date.now()} ${height} ${committedAt}\n`);
      }
      if (height >= options.last) break;
      if (performance.now() - t0 > options.timeoutMs)
        throw new Error(`run ${run}: the cursor is at ${height}, not ${options.last}, after ${options.timeoutMs / 1000} s`);
      if (performance.now() - lastLog > options.progress.everyMs) {
        log(`run ${run}: ${options.progress.line(height)}`);
        lastLog = performance.now();
      }
      await sleep(100);
    }
    const cpuPct = cpu.stop();
    const catchUpCpuSeconds = followingCpu?.seconds() ?? {};
    rss.stop();
    const readyAt = logTime(service, 'herald is ready') ?? spawnedAt;
    if (followingAt === undefined) throw new Error(`the service never logged 'following chain':\n${service.output()}`);
    const { machine = 0, ...mine } = cpuPct;
    const work = {} as Record<K, number>;
    for (const [key, sql] of Object.entries(options.counts) as [K, string][]) {
      work[key] = Number((await runDb.query<{ n: string }>(sql)).rows[0]?.n ?? 0);
    }
    const stepFailures = service
      .stdout()
      .split('\n')
      .filter((l) => l.includes('chain following step failed')).length;
    // BENCH_SERVICE_OUT=<prefix>: the service's output and the cursor as polled (time, height, commit time) kept in files, to see where a run's time went.
    if (process.env.BENCH_SERVICE_OUT) writeFileSync(`${process.env.BENCH_SERVICE_OUT}-${run}.log`, service.stdout());
    const code = await service.stop('SIGTERM', 20_000);
    if (code !== 0) log(`run ${run}: the service exited with ${code} on SIGTERM:\n${service.output()}`);
    return {
      seconds: (committedAt - followingAt) / 1000,
      committedAt,
      readyMs: readyAt - spawnedAt,
      followingMs: followingAt - spawnedAt,
      maxRssMb: rss.max(),
      cpuPct: { ...cpuPct, other: Math.max(0, machine - Object.values(mine).reduce((a, b) => a + b, 0)) },
      catchUpCpuSeconds,
      work,
      stepFailures,
    };
  } finally {
    await runDb.end().catch(() => undefined);
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
    await admin.end().catch(() => undefined);
  }
}

/** PostgreSQL's background work so far: autovacuums and autoanalyzes of the outbox, checkpoints and the buffers they wrote. */
export interface BackgroundWork {
  vacuum: number;
  analyze: number;
  checkpoints: number;
  checkpointBuffers: number;
}

/**
 * Counters of the background work that slows a delivery benchmark's phase: a vacuum of the outbox reads
 * every index whole, and a checkpoint's writes slow every commit's WAL flush. Read before and after a
 * phase; `backgroundWorkBetween` gives what ran in it. Checkpoints from PostgreSQL 17's pg_stat_checkpointer
 * (the embedded server's).
 */
export async function backgroundWork(db: Queryable): Promise<BackgroundWork> {
  const [row] = await db.query<BackgroundWork>(
    'bench:background-work',
    `SELECT (SELECT autovacuum_count::int FROM pg_stat_user_tables WHERE relname = 'callbacks') AS vacuum,
       (SELECT autoanalyze_count::int FROM pg_stat_user_tables WHERE relname = 'callbacks') AS analyze,
       (num_timed + num_requested)::int AS checkpoints, buffers_written::int AS "checkpointBuffers"
     FROM pg_stat_checkpointer`,
  );
  return { vacuum: row?.vacuum ?? 0, analyze: row?.analyze ?? 0, checkpoints: row?.checkpoints ?? 0, checkpointBuffers: row?.checkpointBuffers ?? 0 };
}

export function backgroundWorkBetween(before: BackgroundWork, after: BackgroundWork) {
  return {
    autovacuums: { vacuum: after.vacuum - before.vacuum, analyze: after.analyze - before.analyze },
    checkpoints: { started: after.checkpoints - before.checkpoints, buffersWritten: after.checkpointBuffers - before.checkpointBuffers },
  };
}
