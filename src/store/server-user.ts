/**
 * Who runs the embedded PostgreSQL server, and where its files go so that user can reach them.
 *
 * PostgreSQL refuses to run as root: when herald runs as root, the server runs as the `postgres` user.
 * That user must be able to enter every directory on the path to its binaries and its data directory.
 * A project cloned under /root (mode 0700, as in many containers) is closed to it; then the binaries are
 * copied, and a new data directory is made, under /var/lib/herald (root-owned, open to read), and the data
 * directory's `postgres` entry becomes a link to the server's data there.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { userInfo } from 'node:os';
import { dirname, join, parse, sep } from 'node:path';

export interface ServerUser {
  uid: number;
  gid: number;
}

export interface Binaries {
  initdb: string;
  postgres: string;
}

/** Where the server's binaries and data go when herald's own directories are closed to the server's user. */
export const OPEN_BASE = '/var/lib/herald';

/** The user the server runs as when it is not us (we are root), created if missing; undefined otherwise. */
export function serverUser(): ServerUser | undefined {
  if (userInfo().uid !== 0) return undefined;
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  try {
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    execFileSync('useradd', ['--system', '--user-group', '--no-create-home', 'postgres']);
    return { uid: id('-u'), gid: id('-g') };
  }
}

/** `/a/b/c` → `/`, `/a`, `/a/b`, `/a/b/c`. */
function pathSteps(path: string): string[] {
  const steps = [parse(path).root];
  let at = steps[0] as string;
  for (const part of path.split(sep).filter(Boolean)) {
    at = join(at, part);
    steps.push(at);
  }
  return steps;
}

/**
 * The first directory on `path` (or `path` itself) that `user` cannot enter or execute, or undefined when
 * it reaches all of it. Asked of the kernel as that user (a shell's `[ -x ]`), so ACLs and groups count
 * exactly as they will for the server.
 */
export function firstClosedStep(path: string, user: ServerUser): string | undefined {
  const script = 'for p in "$@"; do [ -x "$p" ] || { printf %s "$p"; exit 1; }; done';
  const result = spawnSync('/bin/sh', ['-c', script, 'sh', ...pathSteps(path)], { ...user, cwd: '/', encoding: 'utf8' });
  if (result.error) throw result.error;
  return result.status === 0 ? undefined : result.stdout || path;
}

/** What to say when the server's user cannot reach `path` and herald cannot help it. */
export function unreachableMessage(path: string, closed: string, why: string): string {
  return (
    `The embedded PostgreSQL server runs as the \`postgres\` user (PostgreSQL refuses to run as root), and that user cannot reach ${path}: ` +
    `${closed} is closed to it. ${why} Use a data directory the \`postgres\` user can reach (--data-dir or HERALD_DATA_DIR, ` +
    'e.g. /var/lib/herald-data), or set DATABASE_URL to a PostgreSQL server of your own.'
  );
}

/** OPEN_BASE, made if missing; refused when someone other than root could change what is in it. */
function openBase(): string {
  mkdirSync(OPEN_BASE, { recursive: true, mode: 0o755 });
  const stat = lstatSync(OPEN_BASE);
  if (!stat.isDirectory() || stat.uid !== 0 || (stat.mode & 0o022) !== 0) {
    throw new Error(`${OPEN_BASE} must be a directory owned by root and writable by root only (it holds the embedded PostgreSQL's binaries).`);
  }
  return OPEN_BASE;
}

/**
 * Binaries `user` can execute: the package's own when it can reach them, otherwise a copy of the package's
 * `native` directory (bin, lib, share: the binaries find the others relative to themselves) under
 * OPEN_BASE, one per package version, made once.
 */
export function reachableBinaries(binaries: Binaries, user: ServerUser): Binaries {
  const closed = firstClosedStep(binaries.initdb, user) ?? firstClosedStep(binaries.postgres, user);
  if (closed === undefined) return binaries;
  const native = dirname(dirname(binaries.initdb));
  try {
    const { name, version } = JSON.parse(readFileSync(join(native, '..', 'package.json'), 'utf8')) as { name: string; version: string };
    const target = join(openBase(), `${name.replace(/^@/, '').replace(/\//g, '-')}-${version}`);
    if (!existsSync(join(target, 'bin', 'postgres'))) {
      // Copied aside and renamed into place: a second herald starting at the same time never sees half a copy.
      const staging = mkdtempSync(`${target}.partial-`);
      try {
        cpSync(native, staging, { recursive: true, verbatimSymlinks: true });
        chmodSync(staging, 0o755);
        renameSync(staging, target);
      } catch (error) {
        rmSync(staging, { recursive: true, force: true });
        if (!existsSync(join(target, 'bin', 'postgres'))) throw error;
      }
    }
    return { initdb: join(target, 'bin', 'initdb'), postgres: join(target, 'bin', 'postgres') };
  } catch (error) {
    throw new Error(unreachableMessage(binaries.initdb, closed, `Copying the binaries to ${OPEN_BASE} failed (${String(error)}).`));
  }
}

/**
 * On a first start: the directory the server will own as its data directory. `pgdata` itself when `user`
 * can reach the data directory `root`; otherwise a new directory under OPEN_BASE, owned by `user`, which
 * `pgdata` then links to.
 */
export function placeServerData(root: string, pgdata: string, user: ServerUser): void {
  const closed = firstClosedStep(root, user);
  if (closed === undefined) {
    mkdirSync(pgdata, { recursive: true, mode: 0o700 });
    chownSync(pgdata, user.uid, user.gid);
    return;
  }
  try {
    const placed = mkdtempSync(join(openBase(), 'postgres-'));
    chownSync(placed, user.uid, user.gid);
    symlinkSync(placed, pgdata);
  } catch (error) {
    throw new Error(unreachableMessage(root, closed, `Making its data directory under ${OPEN_BASE} failed (${String(error)}).`));
  }
}
