/**
 * A real PgBouncer (Debian's package, 1.18) in front of the test PostgreSQL server, in transaction
 * pooling mode, started by the test with its own configuration file and port, and stopped by close().
 *
 * Every database of the server is reachable through it under its own name (`*` entry); clients log in
 * with any user (auth_type any) and PgBouncer logs in to the server as the user of `serverUrl`. PgBouncer
 * refuses to run as root: as root it is started with `-u nobody`.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from '../../src/store/embedded.ts';
import { findBinary, type RealNodeBinary } from './real-node.ts';

export const pgbouncerBinary: RealNodeBinary = findBinary(
  'pgbouncer',
  'apt-get install -y pgbouncer (Debian package, PgBouncer 1.18); .ci/run installs it',
  `${process.env.PATH ?? ''}:/usr/sbin`,
);

export interface PgBouncer {
  /** The URL of database `name` through PgBouncer. */
  url(database: string): string;
  port: number;
  /** Everything PgBouncer logged (stderr). */
  log(): string;
  close(): Promise<void>;
}

/** Quoted for a PgBouncer [databases] connection string. */
const quoted = (value: string) => `'${value.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;

export async function startPgBouncer(serverUrl: string, options: { poolSize?: number } = {}): Promise<PgBouncer> {
  const path = pgbouncerBinary.path;
  if (!path) throw new Error(`pgbouncer is not installed: ${pgbouncerBinary.install}`);
  const server = new URL(serverUrl);
  const dir = mkdtempSync(join(tmpdir(), 'herald-pgbouncer-'));
  chmodSync(dir, 0o755); // readable by nobody
  const port = await freePort();
  const target = [
    `host=${server.hostname}`,
    `port=${server.port || '5432'}`,
    `user=${quoted(decodeURIComponent(server.username))}`,
    server.password ? `password=${quoted(decodeURIComponent(server.password))}` : '',
  ]
    .filter(Boolean)
    .join(' ');
  const config = join(dir, 'pgbouncer.ini');
  writeFileSync(
    config,
    [
      '[databases]',
      `* = ${target}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = any',
      'pool_mode = transaction',
      `default_pool_size = ${options.poolSize ?? 4}`,
      'max_client_conn = 500',
      // After a failed login to the server (PostgreSQL restarting) PgBouncer refuses every client for
      // server_login_retry, 15 s by default: a one-second restart would become a 15-second outage.
      'server_login_retry = 1',
      '',
    ].join('\n'),
    { mode: 0o644 },
  );
  const args = process.getuid?.() === 0 ? ['-u', 'nobody', config] : [config];
  const child: ChildProcess = spawn(path, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    log += chunk;
  });
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  const url = (database: string) => `postgres://herald@127.0.0.1:${port}/${database}`;

  // Ready when a query through it answers (PgBouncer then also reached the server).
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`pgbouncer exited at start (code ${child.exitCode}):\n${log}`);
    const client = new pg.Client({ connectionString: url(server.pathname.slice(1) || 'postgres') });
    try {
      await client.connect();
      await client.query('SELECT 1');
      await client.end();
      break;
    } catch (error) {
      await client.end().catch(() => undefined);
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`pgbouncer did not answer in 10 s: ${(error as Error).message}\n${log}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  return {
    url,
    port,
    log: () => log,
    async close() {
      if (child.exitCode === null) {
        child.kill('SIGINT');
        const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
