#!/usr/bin/env node
// The installed package (`npm pack`, docs/operations/install.md) carries the compiled program only: dist/,
// no src/. It runs as it is; nothing is built at install or at start.
// A clone runs the compiled program (dist/, built by `npm install` through the prepare script) when it is
// at least as new as every file under src/; otherwise the TypeScript sources through tsx (a development
// dependency), so an edit is picked up at once without a build. The compiled form starts faster and uses
// ~30 MB less memory.
import { existsSync, readdirSync, statSync } from 'node:fs';

const root = new URL('../', import.meta.url);
const sources = new URL('src/', root);

function newestMtime(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const url = new URL(entry.name + (entry.isDirectory() ? '/' : ''), dir);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(url) : statSync(url).mtimeMs);
  }
  return newest;
}

const built = statSync(new URL('dist/.build-stamp', root), { throwIfNoEntry: false });
if (!existsSync(sources) || (built && built.mtimeMs >= newestMtime(sources))) {
  await import('../dist/src/cli/main.js');
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli/main.ts');
}
