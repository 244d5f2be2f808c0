/** The key and domain cache never keeps an answer read before a change was announced, and spares the database repeated unknown keys. */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccessCache } from '../src/services/access.ts';
import { createApiKey, createCustomer, hashApiKey } from '../src/store/customers.ts';
import type { Db } from '../src/store/db.ts';
import { openMigratedTestDatabase, startTestApp, type TestApp } from './harness.ts';
import { until } from './support/wait.ts';

let db: Db;
beforeAll(async () => {
  db = await openMigratedTestDatabase();
});
afterAll(() => db.close());

/** The real database, with a hook that runs while a chosen query is in flight. */
function withHook(label: string, during: () => void): { db: Db; reads: () => number } {
  let reads = 0;
  const hooked: Db = {
    ...db,
    async query(l, sql, params) {
      const rows = await db.query(l, sql, params);
      if (l === label) {
        reads++;
        during();
      }
      return rows as never;
    },
  };
  return { db: hooked, reads: () => reads };
}

it('an announcement that arrives while a key is being read keeps that answer out of the cache', async () => {
  const customer = await createCustomer(db, 'race', { mainnetAllowed: true, maxActiveSubscriptions: null, requestsPerSecond: 10 }, 0n);
  const { key } = await createApiKey(db, customer.id);
  let cache: AccessCache | undefined;
  let announce = true;
  const hooked = withHook('keys:owner', () => {
    if (announce) cache?.forgetCustomer(customer.id); // the revocation's NOTIFY lands mid-read
  });
  cache = new AccessCache(hooked.db);
  cache.setLive(true);
  expect(await cache.keyOwner(key)).toBeDefined();
  announce = false;
  await cache.keyOwner(key);
  expect(hooked.reads()).toBe(2); // the first answer was not cached
  await cache.keyOwner(key);
  expect(hooked.reads()).toBe(2); // the second one was
});

it('the cache is not used while the change listener is disconnected', async () => {
  const customer = await createCustomer(db, 'offline', { mainnetAllowed: true, maxActiveSubscriptions: null, requestsPerSecond: 10 }, 0n);
  const { key } = await createApiKey(db, customer.id);
  const hooked = withHook('keys:owner', () => {});
  const cache = new AccessCache(hooked.db);
  cache.setLive(false);
  await cache.keyOwner(key);
  await cache.keyOwner(key);
  expect(hooked.reads()).toBe(2);
});

it('unknown keys are remembered, within a bound: the oldest is dropped first', async () => {
  const hooked = withHook('keys:owner', () => {});
  const cache = new AccessCache(hooked.db, { maxUnknownKeys: 2 });
  cache.setLive(true);
  for (const key of ['hk_unknown-a', 'hk_unknown-b', 'hk_unknown-a', 'hk_unknown-b']) expect(await cache.keyOwner(key)).toBeUndefined();
  expect(hooked.reads()).toBe(2);
  await cache.keyOwner('hk_unknown-c'); // the cache is full: 'a', the oldest, makes room
  await cache.keyOwner('hk_unknown-b');
  expect(hooked.reads()).toBe(3);
  await cache.keyOwner('hk_unknown-a');
  expect(hooked.reads()).toBe(4);
});

describe('unauthenticated load on a running service', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  /** Key lookups that reached the database, as the store wrapper counted them. */
  async function keyLookups(): Promise<number> {
    const text = (await t.request('GET', '/metrics')).text;
    return Number(/herald_db_query_duration_seconds_count\{query="keys:owner"\} (\d+)/.exec(text)?.[1] ?? 0);
  }

  /**
   * The cache is used only once the change listener is connected (until then every lookup reads the
   * database, by design); on a loaded machine that can take a moment after start.
   */
  async function cacheLive(path: string): Promise<void> {
    await until('the change listener to connect (the key cache to be live)', async () => {
      const key = `hk_probe-${Math.random().toString(36).slice(2)}`;
      const before = await keyLookups();
      await t.request('GET', path, { key });
      await t.request('GET', path, { key });
      return (await keyLookups()) - before === 1;
    });
  }

  it('many requests with the same unknown key, at once and one after another, read the database once', async () => {
    const path = '/wallet-as-a-service/wallets/all-assets';
    await cacheLive(path);
    const before = await keyLookups();
    const concurrent = await Promise.all(Array.from({ length: 20 }, () => t.request('GET', path, { key: 'hk_made-up-key' })));
    for (let i = 0; i < 20; i++) concurrent.push(await t.request('GET', path, { key: 'hk_made-up-key' }));
    for (const r of concurrent) expect(r.body.error.code).toBe('invalid_api_key');
    expect((await keyLookups()) - before).toBe(1);
  });

  it('a key created after it was refused as unknown works at once (the announcement forgets unknown keys)', async () => {
    const customer = await t.customer();
    const key = `hk_${randomBytes(16).toString('hex')}`;
    const path = '/wallet-as-a-service/wallets/all-assets';
    // The customer's own announcements (customer, domain, key) must have landed first: one arriving
    // during the lookup below would keep its answer out of the cache and this test would prove nothing.
    await new Promise((r) => setTimeout(r, 200));
    expect((await t.request('GET', path, { key })).status).toBe(401);
    const lookups = await keyLookups();
    expect((await t.request('GET', path, { key })).status).toBe(401);
    expect(await keyLookups()).toBe(lookups); // remembered as unknown
    // A key with the value chosen here (createApiKey draws its own): the same row the CLI would insert.
    await t.app.database.db.query('test:insert-key', 'INSERT INTO api_keys (customer_id, key_hash, key_prefix) VALUES ($1, $2, $3)', [
      customer.id,
      hashApiKey(key),
      key.slice(0, 10),
    ]);
    // The announcement travels through PostgreSQL to the listener in milliseconds; the unknown entry
    // would otherwise live 5 s.
    const started = Date.now();
    let status = 0;
    while (Date.now() - started < 1_000 && status !== 200) {
      status = (await t.request('GET', path, { key })).status;
      if (status !== 200) await new Promise((r) => setTimeout(r, 20));
    }
    expect(status).toBe(200);
  });

  /** Operator token lookups that reached the database. */
  async function operatorLookups(): Promise<number> {
    const text = (await t.request('GET', '/metrics')).text;
    return Number(/herald_db_query_duration_seconds_count\{query="operator-tokens:find"\} (\d+)/.exec(text)?.[1] ?? 0);
  }

  it('many operator requests with the same unknown token, at once and one after another, read the database once', async () => {
    await cacheLive('/wallet-as-a-service/wallets/all-assets');
    const bearer = { authorization: 'Bearer hop_made-up-operator-token' };
    const before = await operatorLookups();
    const answers = await Promise.all(Array.from({ length: 20 }, () => t.request('GET', '/operator/whoami', { headers: bearer })));
    for (let i = 0; i < 20; i++) answers.push(await t.request('GET', '/operator/whoami', { headers: bearer }));
    for (const r of answers) expect(r.body.error.code).toBe('invalid_operator_token');
    expect((await operatorLookups()) - before).toBe(1);
  });

  it('an operator token created after it was refused as unknown works at once (the announcement forgets unknown tokens)', async () => {
    await cacheLive('/wallet-as-a-service/wallets/all-assets');
    const token = `hop_${randomBytes(32).toString('base64url')}`;
    const bearer = { authorization: `Bearer ${token}` };
    expect((await t.request('GET', '/operator/whoami', { headers: bearer })).status).toBe(401);
    const lookups = await operatorLookups();
    expect((await t.request('GET', '/operator/whoami', { headers: bearer })).status).toBe(401);
    expect(await operatorLookups()).toBe(lookups); // remembered as unknown
    // The row `herald operator-tokens create` inserts, with a token chosen here.
    await t.app.database.db.query('test:insert-operator-token', 'INSERT INTO operator_tokens (name, token_hash, token_prefix) VALUES ($1, $2, $3)', [
      `late-${randomBytes(3).toString('hex')}`,
      hashApiKey(token),
      token.slice(0, 10),
    ]);
    const started = Date.now();
    let status = 0;
    while (Date.now() - started < 1_000 && status !== 200) {
      status = (await t.request('GET', '/operator/whoami', { headers: bearer })).status;
      if (status !== 200) await new Promise((r) => setTimeout(r, 20));
    }
    expect(status).toBe(200);
  });
});
