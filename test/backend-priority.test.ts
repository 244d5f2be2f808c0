/**
 * The low-priority pool (bulk creation's chunks, README "Bulk subscription creation"): with the embedded
 * database its server processes run at nice 10 and the main pool's keep theirs; with DATABASE_URL
 * (a server that may be elsewhere: its process ids mean nothing here) no process is reniced.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { getPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { loadConfig } from '../src/config/config.ts';
import { lowerBackendPriority } from '../src/store/backend-priority.ts';
import { type OpenDatabase, openDatabase } from '../src/store/open.ts';
import { createTestDatabase } from './harness.ts';

const opened: OpenDatabase[] = [];
const dirs: string[] = [];
afterAll(async () => {
  for (const d of opened) await d.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const backendPid = async (q: OpenDatabase['db']) => Number((await q.query<{ pid: number }>('test:backend-pid', 'SELECT pg_backend_pid() AS pid'))[0]?.pid);

it('embedded database: the low-priority pool’s server processes at nice 10, the main pool’s unchanged', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'herald-priority-'));
  dirs.push(dataDir);
  const database = await openDatabase(loadConfig({ dataDir }, {}));
  opened.push(database);
  const main = await backendPid(database.db);
  const low = await backendPid(database.lowPriorityDb);
  expect(getPriority(low)).toBe(10);
  expect(getPriority(main)).toBeLessThan(10);
}, 120_000);

it('DATABASE_URL: nothing reniced; and only PostgreSQL processes are ever reniced', async () => {
  const database = await openDatabase(loadConfig({ databaseUrl: await createTestDatabase() }, {}));
  opened.push(database);
  const low = await backendPid(database.lowPriorityDb);
  expect(getPriority(low)).toBeLessThan(10);
  // This process is not a PostgreSQL server process: left alone.
  expect(lowerBackendPriority(process.pid)).toBe(false);
  expect(getPriority(process.pid)).toBeLessThan(10);
  expect(lowerBackendPriority(-1)).toBe(false);
});
