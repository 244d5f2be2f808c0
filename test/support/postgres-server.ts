/**
 * A PostgreSQL server of the test's own (Debian's postgresql-15 by default, as .ci/run installs it), for
 * tests that restart or stop the server itself: initdb in a fresh temporary directory, pg_ctl start on a
 * free loopback port, trust authentication for user `herald`. PostgreSQL refuses to run as root: as root
 * (CI containers) every command runs as the `postgres` user (runuser), as .ci/run does.
 *
 * pg_ctl runs asynchronously (never execFileSync): a test may serve a node from its own event loop
 * (the EVM test node) that the processes under test keep talking to while the server restarts.
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { accessSync, chownSync, constants, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../src/store/embedded.ts';
import type { RealNodeBinary } from './real-node.ts';

const run = promisify(execFile);

/** Debian's PostgreSQL 15 binaries (HERALD_TEST_PG_BIN overrides the directory). */
export const PG15_BIN = process.env.HERALD_TEST_PG_BIN ?? '/usr/lib/postgresql/15/bin';

/** initdb and pg_ctl of `bin`, as a RealNodeBinary (path undefined when missing) for describeWithRealNode. */
export function postgresBinary(bin = PG15_BIN): RealNodeBinary {
  const install = 'apt-get install -y postgresql-15 (Debian package; .ci/run installs it)';
  try {
    for (const tool of ['initdb', 'pg_ctl', 'postgres']) accessSync(join(bin, tool), constants.X_OK);
    return { name: `PostgreSQL (${bin})`, path: join(bin, 'pg_ctl'), install };
  } catch {
    return { name: `PostgreSQL (${bin})`, path: undefined, install };
  }
}

export interface PostgresServer {
  port: number;
  /** postgres://herald@127.0.0.1:PORT/`database` (default `postgres`). */
  url(database?: string): string;
  /** pg_ctl restart -m fast: every session is ended, the server is back when it resolves. */
  restart(): Promise<void>;
  /** The server's log file. */
  log(): string;
  /** Stops the server (immediate) and removes its directory. */
  close(): Promise<void>;
}

export async function startPostgresServer(options: { bin?: string; maxConnections?: number } = {}): Promise<PostgresServer> {
  const bin = options.bin ?? PG15_BIN;
  const asRoot = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), 'herald-pg-'));
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(dir, uid, gid);
  }
  const command = (tool: string, args: string[]): [string, string[]] =>
    asRoot ? ['runuser', ['-u', 'postgres', '--', join(bin, tool), ...args]] : [join(bin, tool), args];
  const pgCtl = async (args: string[]) => {
    const [file, argv] = command('pg_ctl', ['-D', data, '-l', logFile, '-w', '-t', '30', ...args]);
    await run(file, argv);
  };
  const data = join(dir, 'data');
  const logFile = join(dir, 'server.log');
  const port = await freePort();
  const [initdb, initArgs] = command('initdb', ['-D', data, '-U', 'herald', '--auth=trust', '--encoding=UTF8', '--locale=C']);
  await run(initdb, initArgs);
  const settings = [
    `-p ${port}`,
    '-c listen_addresses=127.0.0.1',
    `-c unix_socket_directories=${dir}`,
    `-c max_connections=${options.maxConnections ?? 200}`,
    '-c fsync=off', // a throwaway test server: durability against power loss is not under test
  ].join(' ');
  await pgCtl(['-o', settings, 'start']);
  let stopped = false;
  // A test process that dies without its afterAll must not leave a server behind.
  const onExit = () => {
    if (stopped) return;
    const [file, argv] = command('pg_ctl', ['-D', data, '-m', 'immediate', 'stop']);
    spawnSync(file, argv, { stdio: 'ignore' });
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', onExit);

  return {
    port,
    url: (database = 'postgres') => `postgres://herald@127.0.0.1:${port}/${database}`,
    // pg_ctl restart reuses the options of the last start (postmaster.opts).
    restart: () => pgCtl(['-m', 'fast', 'restart']),
    log: () => {
      try {
        return readFileSync(logFile, 'utf8');
      } catch {
        return '';
      }
    },
    async close() {
      if (stopped) return;
      await pgCtl(['-m', 'immediate', 'stop']).catch(() => undefined);
      stopped = true;
      process.off('exit', onExit);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
