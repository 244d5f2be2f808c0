/**
 * Lowering the CPU priority (Linux nice level) of the PostgreSQL backend that serves one of our
 * connections, for background work (the retention pruner, bulk creation's chunks): the backend then runs on the CPU that the
 * server's other backends (delivery, the API, chain following) leave idle, instead of taking its share
 * of it. Only possible, and only done, when the backend is a process of this machine that we may renice:
 * the embedded server (herald's own user, or `postgres` when herald runs as root), or a local server
 * that root runs. A remote server's backend is not on this machine; nothing is changed then.
 *
 * pg_backend_pid() is a pid of the server's machine, which may name an unrelated process here: the
 * backend is reniced only once it is proven to be the one at the other end of this connection:
 * - over TCP, the process's title (PostgreSQL's "postgres: user db host(port) state") shows this
 *   socket's own local port as the client's, and the server sees the same port (inet_client_port());
 * - over a Unix socket, its parent is the postmaster named in the socket's lock file
 *   (`<dir>/.s.PGSQL.<port>.lock`, first line: the postmaster's pid), which exists on this machine.
 * A pooler in front (PgBouncer) fails both: the backend's client is the pooler, not this socket, and a
 * pooled backend serves other clients' transactions too, so it must not be reniced.
 *
 * The nice level lasts as long as the backend, i.e. the connection: a pool of its own for the
 * background work, never the shared pool.
 */
import { readFileSync, statSync } from 'node:fs';
import { setPriority } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { createDb, type Db, type DbOptions } from './db.ts';

export type BackendPriority = { pid: number; nice: number; lowered: true } | { pid?: number; lowered: false; reason: string };

/** Renices the backend of `client` to `nice` when it proves to be a local process we may renice; never throws. */
export async function lowerBackendPriority(client: pg.ClientBase, nice: number): Promise<BackendPriority> {
  let pid: number | undefined;
  try {
    if (process.platform !== 'linux') return { lowered: false, reason: 'not Linux' };
    const [row] = (await client.query<{ pid: number; port: number | null }>('SELECT pg_backend_pid() AS pid, inet_client_port() AS port')).rows;
    pid = row?.pid;
    if (!pid) return { lowered: false, reason: 'no backend pid' };
    const why = notOurs(client, pid, row?.port ?? null);
    if (why) return { pid, lowered: false, reason: why };
    setPriority(pid, nice);
    return { pid, nice, lowered: true };
  } catch (error) {
    return { pid, lowered: false, reason: (error as Error).message };
  }
}

/** Why process `pid` is not provably the backend of `client` that we may renice; undefined when it is. */
function notOurs(client: pg.ClientBase, pid: number, serverSeenPort: number | null): string | undefined {
  const proc = `/proc/${pid}`;
  let title: string;
  let uid: number;
  try {
    title = readFileSync(`${proc}/cmdline`, 'utf8').replaceAll('\0', ' ');
    uid = statSync(proc).uid;
  } catch {
    return `no local process ${pid} (the server is on another machine)`;
  }
  if (!title.startsWith('postgres:')) return `local process ${pid} is not a PostgreSQL backend (the server is on another machine)`;
  const me = process.getuid?.();
  if (me !== 0 && uid !== me) return `the backend runs as uid ${uid}, not ours (${me})`;
  const { host, port } = client as unknown as { host?: string; port?: number };
  if (host?.startsWith('/')) {
    const postmaster = Number(readText(join(host, `.s.PGSQL.${port}.lock`))?.split('\n')[0]);
    return postmaster > 0 && parentPid(proc) === postmaster ? undefined : 'the backend is not a child of the postmaster of our Unix socket (a pooler?)';
  }
  const localPort = (client as unknown as { connection?: { stream?: { localPort?: number } } }).connection?.stream?.localPort;
  if (!localPort || serverSeenPort !== localPort || !title.includes(`(${localPort})`))
    return 'the backend does not serve this socket (a pooler, or another machine)';
  return undefined;
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** The parent pid, field 4 of /proc/<pid>/stat (counted after the name's closing parenthesis). */
function parentPid(proc: string): number | undefined {
  const stat = readText(`${proc}/stat`);
  const fields = stat?.slice(stat.lastIndexOf(')') + 2).split(' ');
  return fields ? Number(fields[1]) : undefined;
}

/**
 * A pool for background work (the retention pruner: one connection; bulk creation's chunks: two) whose
 * backends run at `nice` (0: unchanged) when each is a local process we may renice (see above);
 * `onPriority` hears what became of each new connection. Its own pool, never the shared one: a backend's
 * nice level lasts as long as its connection and cannot be raised back.
 */
export function createBackgroundDb(
  url: string,
  options: Omit<DbOptions, 'poolSize' | 'onConnect'> & { poolSize?: number; nice: number; onPriority?: (result: BackendPriority) => void },
): Db & { lowered(): boolean } {
  const { nice, onPriority, poolSize = 1, ...rest } = options;
  // What became of the newest connection's backend (a new connection is judged again).
  let last: BackendPriority | undefined;
  const db = createDb(url, {
    ...rest,
    poolSize,
    ...(nice > 0 && {
      onConnect: async (client: pg.ClientBase) => {
        last = await lowerBackendPriority(client, nice);
        onPriority?.(last);
      },
    }),
  });
  return { ...db, lowered: () => last?.lowered === true };
}
