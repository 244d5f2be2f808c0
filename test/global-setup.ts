/**
 * One PostgreSQL server for the whole test run: the server of DATABASE_URL when set (CI runs the suite
 * a second time against Debian's PostgreSQL 15 that way), otherwise an embedded one in a temporary
 * directory. Each test file makes its own database in it (see harness.ts), so files run in parallel.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { openEmbeddedDatabase } from '../src/store/embedded.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    adminDatabaseUrl: string;
  }
}

export default async function setup(project: TestProject) {
  if (process.env.DATABASE_URL) {
    project.provide('adminDatabaseUrl', process.env.DATABASE_URL);
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'herald-test-'));
  const embedded = await openEmbeddedDatabase(dir);
  project.provide('adminDatabaseUrl', embedded.url);
  return async () => {
    await embedded.stop();
    rmSync(dir, { recursive: true, force: true });
  };
}
