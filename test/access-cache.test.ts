/** The key and domain cache never keeps an answer read before a change was announced. */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { AccessCache } from '../src/services/access.ts';
import { createApiKey, createCustomer } from '../src/store/customers.ts';
import { createDb, type Db } from '../src/store/db.ts';
import { migrate } from '../src/store/migrate.ts';
import { createTestDatabase } from './harness.ts';

let db: Db;
beforeAll(async () => {
  db = createDb(await createTestDatabase(), { poolSize: 2 });
  await migrate(db);
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
