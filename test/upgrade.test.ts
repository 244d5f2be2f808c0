/**
 * Upgrades (docs/operations/upgrade.md): a database of an earlier herald, with its data, is brought to this
 * version's schema by the migrations, and every subscription, callback and key survives and works.
 *
 * The fixture (test/fixtures/upgrade/2c78b0f.json.gz, 2 KB) is a `herald backup` of the embedded database
 * of main at commit 2c78b0f (2026-11-29, 25 migrations): first start (customer `default` and the key
 * below), the domain hooks.example.com verified, two subscriptions made through its API, two pending
 * callbacks of the first. Restoring it applies the backup's 25 migrations, loads the rows, then applies
 * every later migration: the same path as an upgrade in place.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { restoreDatabase } from '../src/store/backup.ts';
import { createDb } from '../src/store/db.ts';
import { listMigrations } from '../src/store/migrate.ts';
import { createTestDatabase, SAMPLE, startTestApp, type TestApp } from './harness.ts';

const FIXTURE = 'test/fixtures/upgrade/2c78b0f.json.gz';
/** The first-start key of that database (a test key: only this fixture knows it). */
const KEY = 'hk_j4RkH5VY28qciZecGqTEKYFCgp_DwkvXGDtCWOO9ziA';
const SUBSCRIPTIONS = ['01a234f5-4e3c-7f7e-8cd8-cfdc7863818c', '01a234f5-4e8b-74b5-bf54-8b7283de7551'];

let upgraded: TestApp;
let applied: string[] = [];

beforeAll(async () => {
  const url = await createTestDatabase();
  const db = createDb(url, { poolSize: 2 });
  try {
    const restored = await restoreDatabase(db, url, FIXTURE);
    expect(restored.migrations).toHaveLength(25);
    applied = restored.applied;
  } finally {
    await db.close();
  }
  upgraded = await startTestApp({ databaseUrl: url, roles: ['api'] });
});
afterAll(async () => {
  await upgraded?.close();
});

describe('upgrade from an earlier schema (main at 2c78b0f)', () => {
  it('applies every later migration, once, forward', async () => {
    expect(applied.length).toBeGreaterThan(0);
    const versions = await upgraded.app.database.db.query<{ version: number }>('test:versions', 'SELECT version FROM schema_migrations ORDER BY version');
    expect(versions.map((v) => v.version)).toEqual(listMigrations().map((m) => m.version));
  });

  it('the key authenticates, the subscriptions and callbacks are there and work', async () => {
    const listed = await upgraded.request('GET', '/blockchain-events/subscriptions', { key: KEY });
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body.data.items.map((s: { referenceId: string }) => s.referenceId).sort()).toEqual(SUBSCRIPTIONS);
    const one = await upgraded.request('GET', `/blockchain-events/subscriptions/${SUBSCRIPTIONS[0]}`, { key: KEY });
    expect(one.status, one.text).toBe(200);
    expect(one.body.data.item).toMatchObject({ eventType: 'TRANSACTION_MINED', isActive: true, callbackUrl: 'https://hooks.example.com/callbacks' });
    const callbacks = await upgraded.request('GET', `/blockchain-events/subscriptions/${SUBSCRIPTIONS[0]}/callbacks`, { key: KEY });
    expect(callbacks.status, callbacks.text).toBe(200);
    expect(callbacks.body.data.total).toBe(2);
    // Writes work on the upgraded schema: make a new subscription, delete a restored one.
    const created = await upgraded.request('POST', '/blockchain-events/ethereum/mainnet/subscriptions/transaction-mined', {
      key: KEY,
      body: { data: { item: { transactionId: `0x${'cd'.repeat(32)}`, callbackUrl: SAMPLE.callbackUrl } } },
    });
    expect(created.status, created.text).toBe(200);
    const deleted = await upgraded.request('DELETE', `/blockchain-events/ethereum/mainnet/subscriptions/${SUBSCRIPTIONS[1]}`, { key: KEY });
    expect(deleted.status, deleted.text).toBe(200);
    expect(deleted.body.data.item.referenceId).toBe(SUBSCRIPTIONS[1]);
  });
});
