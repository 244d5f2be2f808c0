/**
 * herald's version: the one in package.json, read once. `herald --version`, /healthz and the "herald is
 * ready" log line show it (docs/operations/install.md). package.json is one level up from src/, two from
 * the compiled dist/src/; the installed package carries it too.
 */
import { readFileSync } from 'node:fs';

function packageVersion(): string {
  for (const path of ['../package.json', '../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(path, import.meta.url), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'herald' && pkg.version) return pkg.version;
    } catch {
      // not at this level
    }
  }
  return 'unknown';
}

export const HERALD_VERSION = packageVersion();
