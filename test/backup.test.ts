/**
 * Backups (docs/operations/backup.md): a populated database is backed up, wiped (a new empty database, a
 * new data directory), restored, and every row of every table is back; the keys authenticate, the
 * subscriptions and callbacks are listed and new ones can be made.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gunzipSync, gzipSync } from 'node:zlib';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKUP_FORMAT, backupDatabase, RestoreError, restoreDatabase } from '../src/store/backup.ts';
import { enqueueCallbacks } from '../src/store/callbacks.ts';
import { createDb } from '../src/store/db.ts';
import { createTestDatabase, SAMPLE, startTestApp, type TestApp, type TestCustomer } from './harness.ts';

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'herald-backup-'));
const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('HERALD_') && name !== 'DATABASE_URL'));

/** Every table's rows (as text, sorted) and the applied migrations: two databases with equal contents are equal here. */
async function contents(url: string): Promise<Record<string, string[]>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const tables = await client.query<{ name: string }>(
      `SELECT relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = current_schema()
        WHERE relkind IN ('r', 'p') AND NOT relispartition ORDER BY relname`,
    );
    const out: Record<string, string[]> = {};
    for (const { name } of tables.rows) {
      const select = name === 'schema_migrations' ? 'SELECT version, name FROM schema_migrations t' : `SELECT * FROM "${name}" t`;
      const rows = await client.query<{ row: string }>(`SELECT row_to_json(s)::text AS row FROM (${select}) s ORDER BY 1`);
      out[name] = rows.rows.map((r) => r.row);
    }
    return out;
  } finally {
    await client.end();
  }
}

let source: TestApp;
let acme: TestCustomer;
const subscriptionIds: string[] = [];

beforeAll(async () => {
  // The api role only: no delivery worker changes the callbacks while they are compared.
  source = await startTestApp({ roles: ['api'] });
  acme = await source.customer({ name: 'acme' });
  for (const path of ['ethereum/mainnet/subscriptions/transaction-mined', 'ethereum/mainnet/subscriptions/address-coins-transactions-confirmed']) {
    const item = path.endsWith('mined') ? { transactionId: SAMPLE.evmTx } : { address: SAMPLE.evmAddress, allowDuplicates: false };
    const res = await source.request('POST', `/blockchain-events/${path}`, {
      key: acme.key,
      body: { data: { item: { ...item, callbackUrl: SAMPLE.callbackUrl } } },
    });
    expect(res.status, res.text).toBe(200);
    subscriptionIds.push(res.body.data.item.referenceId);
  }
  await source.app.database.db.transaction('test:enqueue', (tx) =>
    enqueueCallbacks(
      tx,
      [1, 2, 3].map((n) => ({
        id: randomUUID(),
        customerId: acme.id,
        subscriptionId: subscriptionIds[0] as string,
        eventType: 'TRANSACTION_MINED',
        idempotencyKey: `k${n}`,
        body: `{"n":${n},"amount":"0.000000000000000001"}`,
        callbackUrl: SAMPLE.callbackUrl,
      })),
    ),
  );
});

afterAll(async () => {
  await source?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('herald backup and restore', () => {
  it('restores every row of every table into an empty database, where the key, subscriptions and callbacks work', async () => {
    const file = join(dir, 'acme.json.gz');
    const backup = await backupDatabase(source.app.database.url, file);
    expect(backup.tables.customers).toBeGreaterThanOrEqual(1);
    expect(backup.tables.subscriptions).toBe(2);
    expect(backup.tables.callbacks).toBe(3);

    const target = await createTestDatabase();
    const db = createDb(target, { poolSize: 2 });
    try {
      const restored = await restoreDatabase(db, target, file);
      expect(restored.rows).toBe(backup.rows);
      expect(restored.applied).toEqual([]);
      // A second restore into it is refused: it is no longer empty.
      await expect(restoreDatabase(db, target, file)).rejects.toThrow(/the database is not empty/);
    } finally {
      await db.close();
    }
    expect(await contents(target)).toEqual(await contents(source.app.database.url));

    const copy = await startTestApp({ roles: ['api'], databaseUrl: target });
    try {
      const listed = await copy.request('GET', '/blockchain-events/subscriptions', { key: acme.key });
      expect(listed.status, listed.text).toBe(200);
      expect(listed.body.data.items.map((s: { referenceId: string }) => s.referenceId).sort()).toEqual([...subscriptionIds].sort());
      const callbacks = await copy.request('GET', `/blockchain-events/subscriptions/${subscriptionIds[0]}/callbacks`, { key: acme.key });
      expect(callbacks.status, callbacks.text).toBe(200);
      expect(callbacks.body.data.total).toBe(3);
      // The identity sequences went on from the backup's values: new rows do not collide with restored ones.
      const created = await copy.request('POST', '/blockchain-events/ethereum/mainnet/subscriptions/transaction-mined', {
        key: acme.key,
        body: { data: { item: { transactionId: `0x${'cd'.repeat(32)}`, callbackUrl: SAMPLE.callbackUrl } } },
      });
      expect(created.status, created.text).toBe(200);
      const other = await copy.customer({ name: 'after-restore' });
      expect((await copy.request('GET', '/blockchain-events/subscriptions', { key: other.key })).status).toBe(200);
    } finally {
      await copy.close();
    }
  });

  it('`herald restore` makes a new embedded data directory from a backup, and `herald backup` there gives the same rows (the CLI, two runs)', async () => {
    const file = join(dir, 'for-embedded.json.gz');
    await backupDatabase(source.app.database.url, file);
    const dataDir = join(dir, 'data');
    const restore = await run('node', ['bin/herald.js', 'restore', file, '--data-dir', dataDir, '--json'], { env });
    expect(JSON.parse(restore.stdout)).toMatchObject({ tables: { subscriptions: 2, callbacks: 3 }, applied: [] });
    const again = join(dir, 'from-embedded.json.gz');
    await run('node', ['bin/herald.js', 'backup', '--output', again, '--data-dir', dataDir], { env });
    const rows = (f: string) =>
      gunzipSync(readFileSync(f))
        .toString()
        .split('\n')
        .filter((line) => line.startsWith('{"table"'));
    expect(rows(again)).toEqual(rows(file));
  }, 120_000);

  it('refuses a file cut short, and one that is not a backup, leaving the database empty', async () => {
    const file = join(dir, 'whole.json.gz');
    await backupDatabase(source.app.database.url, file);
    const lines = gunzipSync(readFileSync(file)).toString().trimEnd().split('\n');
    expect(JSON.parse(lines[0] as string).format).toBe(BACKUP_FORMAT);
    const cut = join(dir, 'cut.json.gz');
    writeFileSync(cut, gzipSync(`${lines.slice(0, -1).join('\n')}\n`));
    const notBackup = join(dir, 'not-a-backup.json.gz');
    writeFileSync(notBackup, gzipSync('{"hello":"world"}\n'));
    for (const [bad, message] of [
      [cut, /cut short/],
      [notBackup, /not a herald backup/],
    ] as const) {
      const target = await createTestDatabase();
      const db = createDb(target, { poolSize: 2 });
      try {
        const error = await restoreDatabase(db, target, bad).catch((e) => e);
        expect(error).toBeInstanceOf(RestoreError);
        expect(error.message).toMatch(message);
        const left = await db.query<{ n: number }>('test:count', `SELECT count(*)::int AS n FROM customers`).catch(() => [{ n: 0 }]);
        expect(left[0]?.n).toBe(0);
      } finally {
        await db.close();
      }
    }
  });
});
