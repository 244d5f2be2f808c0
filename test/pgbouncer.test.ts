/**
 * herald with DATABASE_URL through a real PgBouncer in transaction pooling mode (issue 12, point 3):
 * the pool's statements unnamed (`databasePreparedStatements: false`), the LISTEN connection direct to
 * the server (`listenDatabaseUrl`). API, delivery and ingest in one process on a fake Bitcoin Core node;
 * callbacks to a real HTTPS receiver. Checks that migrations ran through PgBouncer, subscriptions are
 * created, blocks followed, callbacks delivered, and a revoked key stops working within a second (the key
 * cache, which relies on LISTEN). Also shows why the setting exists: named statements break through it;
 * and that without the setting herald finds the pooler by itself (issue 28, point 9), CLI commands too.
 *
 * Needs Debian's pgbouncer: skipped with a banner when it is missing locally, failed under CI.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { loadConfig } from '../src/config/config.ts';
import { revokeApiKey } from '../src/store/customers.ts';
import { createDb } from '../src/store/db.ts';
import { listMigrations } from '../src/store/migrate.ts';
import { openDatabase } from '../src/store/open.ts';
import { createTestDatabase, type TestApp, type TestCustomer } from './harness.ts';
import type { ChainDriver } from './support/chain-driver.ts';
import { startFakeUtxoDriver } from './support/fake-utxo-node.ts';
import { followHelpers } from './support/follow-helpers.ts';
import { type FollowedApp, startFollowedApp } from './support/followed-app.ts';
import { type PgBouncer, pgbouncerBinary, startPgBouncer } from './support/pgbouncer.ts';
import { describeWithRealNode } from './support/real-node.ts';
import type { Receiver } from './support/receiver.ts';
import { until } from './support/wait.ts';

const SECRET = 'whsec-pgbouncer';
const run = promisify(execFile);

describeWithRealNode('herald behind PgBouncer in transaction pooling mode (LISTEN direct)', pgbouncerBinary, () => {
  let bouncer: PgBouncer;
  let node: ChainDriver;
  let receiver: Receiver;
  let t: TestApp;
  let c: TestCustomer;
  let env: FollowedApp;
  let direct: string;
  let databaseName: string;

  beforeAll(async () => {
    direct = await createTestDatabase();
    databaseName = new URL(direct).pathname.slice(1);
    bouncer = await startPgBouncer(inject('adminDatabaseUrl'));
    env = await startFollowedApp(() => startFakeUtxoDriver('bitcoin'), {
      app: { databaseUrl: bouncer.url(databaseName), listenDatabaseUrl: direct, databasePreparedStatements: false },
    });
    ({ node, receiver, t, c } = env);
  }, 60_000);

  afterAll(async () => {
    await env?.close();
    await bouncer?.close();
  });

  const follow = followHelpers(() => ({ t, customer: c, receiver, blockchain: node.blockchain, network: node.network }), SECRET);

  it('the migrations ran through PgBouncer: the pool has no other way to the database', async () => {
    expect(t.config.databaseUrl).toBe(bouncer.url(databaseName));
    expect(t.app.database.applied).toHaveLength(listMigrations().length);
    const client = new pg.Client({ connectionString: direct });
    await client.connect();
    try {
      const { rows } = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM schema_migrations');
      expect(rows[0]?.n).toBe(listMigrations().length);
    } finally {
      await client.end();
    }
  });

  it('subscriptions are created, blocks followed and callbacks delivered, signed, to the HTTPS receiver', async () => {
    await follow.processed(await node.height());
    const address = await node.newAddress();
    const txid = await node.send(address, 10_000_000n);
    const mined = await follow.subscribeMined(txid, 'mined');
    const blocks = (await follow.subscribe('block-mined', {}, 'blocks')).referenceId;
    await t.app.ingest?.settled();
    const height = await node.mine(1);
    await follow.processed(height);
    const [cb] = await until('the mined callback', async () => follow.callbacksOf(mined).length === 1 && follow.callbacksOf(mined));
    follow.expectSigned(cb as NonNullable<typeof cb>);
    expect(cb?.json.data.item).toMatchObject({ transactionId: txid, minedInBlock: { height, hash: await node.blockHash(height) } });
    const next = await node.mine(2);
    await follow.processed(next);
    const heights = await until('three BLOCK_MINED callbacks', async () => {
      const got = follow.callbacksOf(blocks).map((b) => b.json.data.item.height as number);
      return got.length >= 3 && got;
    });
    expect([...heights].sort((a, b) => a - b)).toEqual([height, height + 1, height + 2]);
  });

  it('a revoked key stops working within 1 s: the key cache hears the change on its direct LISTEN connection', async () => {
    const path = '/wallet-as-a-service/wallets/all-assets';
    const customer = await t.customer();
    const keyLookups = async () =>
      Number(/herald_db_query_duration_seconds_count\{query="keys:owner"\} (\d+)/.exec((await t.request('GET', '/metrics')).text)?.[1] ?? 0);
    // The cache is used only while the listener is connected: two requests, one lookup.
    await until('the key cache to be live', async () => {
      const before = await keyLookups();
      const a = await t.request('GET', path, { key: customer.key });
      const b = await t.request('GET', path, { key: customer.key });
      return a.status === 200 && b.status === 200 && (await keyLookups()) - before <= 1;
    });
    const before = await keyLookups();
    expect((await t.request('GET', path, { key: customer.key })).status).toBe(200);
    expect(await keyLookups()).toBe(before); // served from the cache: only an announcement can end it

    const revokedAt = Date.now();
    expect(await revokeApiKey(t.app.database.db, customer.id, customer.key.slice(0, 10))).toBe(1);
    for (;;) {
      const r = await t.request('GET', path, { key: customer.key });
      if (r.status === 401) break;
      expect(Date.now() - revokedAt, 'the revoked key still works').toBeLessThan(1000);
      await new Promise((done) => setTimeout(done, 20));
    }
    expect(Date.now() - revokedAt).toBeLessThan(1000);
  });

  it('without databasePreparedStatements set, opening through it finds the pooler and sends statements unnamed: 300 at once all succeed', async () => {
    const viaBouncer = await openDatabase(loadConfig({}, { DATABASE_URL: bouncer.url(databaseName), HERALD_LISTEN_DATABASE_URL: direct }), { poolSize: 6 });
    try {
      expect(viaBouncer.preparedStatements).toBe(false);
      expect(viaBouncer.poolerNotice).toMatch(/pooler in transaction mode .* Set HERALD_DB_PREPARED_STATEMENTS=false/);
      expect(viaBouncer.poolerNotice).not.toContain('HERALD_LISTEN_DATABASE_URL'); // it is set
      const results = await Promise.allSettled(
        Array.from({ length: 300 }, (_, i) => viaBouncer.db.query('test:pgbouncer-named', 'SELECT $1::int + 1 AS n', [i])),
      );
      expect(results.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason))).toEqual([]);
    } finally {
      await viaBouncer.close();
    }
    // Without a direct LISTEN URL the notice says that LISTEN needs one too.
    const noListen = await openDatabase(loadConfig({}, { DATABASE_URL: bouncer.url(databaseName) }), { poolSize: 1 });
    await noListen.close();
    expect(noListen.poolerNotice).toContain('give HERALD_LISTEN_DATABASE_URL');
    // A direct connection is never taken for a pooler: named statements stay.
    for (let i = 0; i < 5; i++) {
      const straight = await openDatabase(loadConfig({}, { DATABASE_URL: direct }), { poolSize: 1 });
      await straight.close();
      expect(straight.preparedStatements).toBe(true);
      expect(straight.poolerNotice).toBeUndefined();
    }
    // The setting, when given, wins: no probe.
    const told = await openDatabase(loadConfig({}, { DATABASE_URL: bouncer.url(databaseName), HERALD_DB_PREPARED_STATEMENTS: 'false' }), { poolSize: 1 });
    await told.close();
    expect(told.preparedStatements).toBe(false);
    expect(told.poolerNotice).toBeUndefined();
  });

  it('a CLI command through it works without HERALD_DB_PREPARED_STATEMENTS and says on stderr what it found', async () => {
    const env = { ...process.env, DATABASE_URL: bouncer.url(databaseName), HERALD_LISTEN_DATABASE_URL: direct, HERALD_DB_PREPARED_STATEMENTS: '' };
    const created = await run('node', ['bin/herald.js', 'customers', 'create', '--name', 'pooled', '--json'], { env });
    expect(JSON.parse(created.stdout)).toMatchObject({ name: 'pooled' });
    expect(created.stderr).toContain('HERALD_DB_PREPARED_STATEMENTS=false');
    const listed = await run('node', ['bin/herald.js', 'customers', 'list', '--json', '--limit', '10000'], { env });
    expect((JSON.parse(listed.stdout) as { items: { name: string }[] }).items.map((c) => c.name)).toContain('pooled');
  }, 120_000);

  it('named prepared statements do break through it (why databasePreparedStatements exists)', async () => {
    const named = createDb(bouncer.url(databaseName), { poolSize: 6, preparedStatements: true });
    try {
      const results = await Promise.allSettled(Array.from({ length: 300 }, (_, i) => named.query('test:pgbouncer-named', 'SELECT $1::int + 1 AS n', [i])));
      const failures = results.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason));
      expect(failures.length).toBeGreaterThan(0);
      expect(failures[0]).toMatch(/prepared statement/);
    } finally {
      await named.close();
    }
  });
});
