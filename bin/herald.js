#!/usr/bin/env node
// Runs the compiled program (dist/, built by `npm install` through the prepare script) when it is at
// least as new as every file under src/; otherwise the TypeScript sources through tsx, so an edit is
// picked up at once without a build. The compiled form starts faster and uses ~30 MB less memory.
import { readdirSync, statSync } from 'node:fs';

const root = new URL('../', import.meta.url);

function newestMtime(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const url = new URL(entry.name + (entry.isDirectory() ? '/' : ''), dir);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(url) : statSync(url).mtimeMs);
  }
  return newest;
}

const built = statSync(new URL('dist/.build-stamp', root), { throwIfNoEntry: false });
if (built && built.mtimeMs >= newestMtime(new URL('src/', root))) {
  await import('../dist/src/cli/main.js');
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli/main.ts');
}
