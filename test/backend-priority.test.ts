/**
 * The pruner's own connection runs its PostgreSQL backend at a lower CPU priority, on the tests' real
 * (local) server, over its Unix socket and over TCP; never the shared pool's backends; and a backend
 * that cannot be proven to be this connection's (here: behind a TCP relay standing in for a pooler or
 * another machine) is left alone without an error. The low-priority pool that bulk creation writes through
 * (docs/guides/bulk-import.md) is such a background pool: with the embedded database its backends
 * run at nice 10 and the main pool's keep theirs.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server, connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/config.ts';
import { type BackendPriority, createBackgroundDb } from '../src/store/backend-priority.ts';
import { createDb, type Db } from '../src/store/db.ts';
import { openDatabase } from '../src/store/open.ts';
import { createTestDatabase } from './harness.ts';

/** The nice level of process `pid` (field 19 of its stat, counted after the name's closing parenthesis). */
function niceOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
}

const autogroupsOn = existsSync('/proc/sys/kernel/sched_autogroup_enabled') && readFileSync('/proc/sys/kernel/sched_autogroup_enabled', 'utf8').trim() !== '0';

/** The nice level of the scheduler autogroup of process `pid` (`/autogroup-N nice K`); asked only where autogroupsOn. */
function autogroupNiceOf(pid: number): number {
  return Number(readFileSync(`/proc/${pid}/autogroup`, 'utf8').split(' nice ')[1]);
}

async function backendPid(db: Db): Promise<number> {
  const [row] = await db.query<{ pid: number }>('test:backend-pid', 'SELECT pg_backend_pid() AS pid');
  return row?.pid as number;
}

/** Opens a background Db of nice 19 on `url`, runs one statement, and returns what became of its backend. */
async function backgroundOn(url: string): Promise<{ result: BackendPriority; pid: number; nice: number; db: Db }> {
  let heard!: (result: BackendPriority) => void;
  const result = new Promise<BackendPriority>((done) => {
    heard = done;
  });
  const db = createBackgroundDb(url, { nice: 19, onPriority: (r) => heard(r) });
  const pid = await backendPid(db);
  return { result: await result, pid, nice: niceOf(pid), db };
}

/** The same URL over TCP to the server's port (no Unix socket). */
function overTcp(url: string, port = new URL(url).port): string {
  const u = new URL(url);
  u.searchParams.delete('host');
  u.hostname = '127.0.0.1';
  u.port = String(port);
  return u.toString();
}

describe.runIf(process.platform === 'linux')("a background connection's backend priority", () => {
  let url: string;
  let shared: Db;
  let relay: Server;
  beforeAll(async () => {
    url = await createTestDatabase();
    shared = createDb(url, { poolSize: 2 });
    // A relay of our own in front of the server: its backend's client is the relay, not our socket.
    const target = Number(new URL(url).port);
    relay = createServer((inbound) => {
      const outbound = tcpConnect(target, '127.0.0.1');
      inbound.pipe(outbound).pipe(inbound);
      inbound.on('error', () => outbound.destroy());
      outbound.on('error', () => inbound.destroy());
    });
    await new Promise<void>((done) => relay.listen(0, '127.0.0.1', done));
  });
  afterAll(async () => {
    await shared.close();
    await new Promise((done) => relay.close(done));
  });

  it('is lowered for its own backend (over the URL given and over TCP), with its scheduler autogroup, and no backend of the shared pool is touched', async () => {
    for (const u of [url, overTcp(url)]) {
      const { result, pid, nice, db } = await backgroundOn(u);
      try {
        // Each PostgreSQL backend leads a session of its own, hence an autogroup of its own where they are on.
        expect(result).toEqual({ pid, nice: 19, lowered: true, autogroup: autogroupsOn ? 'lowered' : 'no autogroups' });
        expect(nice).toBe(19);
        if (autogroupsOn) expect(autogroupNiceOf(pid)).toBe(19);
        const sharedPid = await backendPid(shared);
        expect(niceOf(sharedPid)).toBe(0);
        if (autogroupsOn) expect(autogroupNiceOf(sharedPid)).toBe(0);
      } finally {
        await db.close();
      }
    }
  });

  it("a new connection's onConnect statements all run before the pool's first statement, one at a time on the client (pg 9 refuses a query on a busy client)", async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.message);
    process.on('warning', onWarning);
    // As lowerBackendPriority does: a statement, then work of its own, before the connection may serve.
    const db = createDb(url, {
      poolSize: 1,
      onConnect: async (client) => {
        await client.query('SELECT pg_backend_pid()');
        await new Promise((r) => setTimeout(r, 50));
        await client.query("SET application_name = 'herald-on-connect'");
      },
    });
    try {
      const [row] = await db.query<{ name: string }>('test:application-name', "SELECT current_setting('application_name') AS name");
      expect(row?.name).toBe('herald-on-connect');
      await new Promise((r) => setImmediate(r)); // warnings are emitted on the next tick
      expect(warnings.filter((w) => w.includes('already executing a query'))).toEqual([]);
    } finally {
      process.off('warning', onWarning);
      await db.close();
    }
  });

  it('is left alone, without an error, when the backend does not serve this socket (a relay: a pooler or another machine)', async () => {
    const port = (relay.address() as { port: number }).port;
    const { result, pid, nice, db } = await backgroundOn(overTcp(url, String(port)));
    try {
      expect(result).toMatchObject({ pid, lowered: false });
      expect(result.lowered === false && result.reason).toMatch(/does not serve this socket/);
      expect(nice).toBe(0);
      // The connection works as any other.
      expect(await backendPid(db)).toBe(pid);
    } finally {
      await db.close();
    }
  });
});

describe.runIf(process.platform === 'linux')('the low-priority pool of bulk creation', () => {
  it("embedded database: its server processes at nice 10, the main pool's unchanged", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'herald-priority-'));
    const database = await openDatabase(loadConfig({ dataDir }, {}));
    try {
      const low = await backendPid(database.lowPriorityDb);
      // Reniced before the connection's first statement (its onConnect runs before the pool hands it out).
      expect(niceOf(low)).toBe(10);
      if (autogroupsOn) expect(autogroupNiceOf(low)).toBe(10);
      expect(niceOf(await backendPid(database.db))).toBeLessThan(10);
    } finally {
      await database.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});
