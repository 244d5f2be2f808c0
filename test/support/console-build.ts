/**
 * The console's build (dist/console) for the tests that load it: built again when a file under console/
 * or the chains vocabulary it imports is newer than the build. `npm install` builds it (prepare), so in CI
 * this only checks. Test files run in parallel workers: a lock directory keeps two builds from writing
 * the same folder at once.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const built = join(root, 'dist/console/index.html');
const lock = join(root, 'dist/.console-build-lock');

function newest(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(0, ...readdirSync(path).map((name) => newest(join(path, name))));
}

function stale(): boolean {
  const at = statSync(built, { throwIfNoEntry: false })?.mtimeMs ?? 0;
  return at < Math.max(newest(join(root, 'console')), newest(join(root, 'src/domain/chains.ts')));
}

export async function ensureConsoleBuilt(): Promise<void> {
  if (!stale()) return;
  mkdirSync(join(root, 'dist'), { recursive: true });
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      // Another worker builds: wait for it, then check again.
      await new Promise((resolve) => setTimeout(resolve, 200));
      if (statSync(lock, { throwIfNoEntry: false }) === undefined && !stale()) return;
    }
  }
  try {
    // vitest sets NODE_ENV=test, which Vite would otherwise build for: the production build is the one served.
    const env = { ...process.env, NODE_ENV: 'production' };
    if (stale()) execFileSync(join(root, 'node_modules/.bin/vite'), ['build', 'console', '--logLevel', 'warn'], { cwd: root, stdio: 'inherit', env });
  } finally {
    rmdirSync(lock);
  }
}
