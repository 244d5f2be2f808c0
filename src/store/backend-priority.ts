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
 *
 * A nice level alone is not enough where the kernel's autogroup scheduling is on (sched(7),
 * `/proc/sys/kernel/sched_autogroup_enabled`: the default for processes not placed in cgroups, e.g.
 * started from a shell): the CPU is then shared between sessions as equals, and a nice level ranks a
 * process only within its session. Every PostgreSQL backend starts a session of its own (its setsid()
 * at fork), so a reniced backend still got as much of the machine as all of herald's processes together:
 * pruning at nice 19 took 70 % of a core and delivery lost 47.5 % (`npm run bench -- retention`,
 * 2026-11-25). So the backend's autogroup, which is its alone (it leads its own session), is given the
 * same nice level (`/proc/<pid>/autogroup`); a backend that shares its session is left at that.
 */
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { setPriority } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { createDb, type Db, type DbOptions } from './db.ts';

export type BackendPriority =
  | {
      pid: number;
      nice: number;
      lowered: true;
      /** Whether its scheduler autogroup got the nice level too, or why not (no autogroups here: nothing to do). */
      autogroup: 'lowered' | 'no autogroups' | 'shared session' | `not lowered: ${string}`;
    }
  | { pid?: number; lowered: false; reason: string };

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
    return { pid, nice, lowered: true, autogroup: await lowerOwnAutogroup(pid, nice) };
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

/** Field `n` (1-based) of /proc/<pid>/stat, counted after the name's closing parenthesis (field 2). */
function statField(proc: string, n: number): number | undefined {
  const stat = readText(`${proc}/stat`);
  const fields = stat?.slice(stat.lastIndexOf(')') + 2).split(' ');
  return fields ? Number(fields[n - 3]) : undefined;
}

/** The parent pid, field 4 of /proc/<pid>/stat. */
function parentPid(proc: string): number | undefined {
  return statField(proc, 4);
}

/** Writes to /proc/<pid>/autogroup other than root's: at most one every 100 ms machine-wide (EAGAIN). */
const AUTOGROUP_RETRIES = 5;
const AUTOGROUP_RETRY_MS = 120;

/**
 * Gives the scheduler autogroup of backend `pid` the nice level `nice`, when it has one of its own (it
 * leads its session, as every PostgreSQL backend does: see above). Never throws.
 */
async function lowerOwnAutogroup(pid: number, nice: number): Promise<Extract<BackendPriority, { lowered: true }>['autogroup']> {
  const proc = `/proc/${pid}`;
  if (readText(`${proc}/autogroup`) === undefined || readText('/proc/sys/kernel/sched_autogroup_enabled')?.trim() === '0') return 'no autogroups';
  if (statField(proc, 6) !== pid) return 'shared session';
  for (let attempt = 1; ; attempt++) {
    try {
      writeFileSync(`${proc}/autogroup`, String(nice));
      return 'lowered';
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'EAGAIN' || attempt >= AUTOGROUP_RETRIES) return `not lowered: ${code ?? (error as Error).message}`;
      await sleep(AUTOGROUP_RETRY_MS);
    }
  }
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
