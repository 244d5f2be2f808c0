/** The bulk insert of derived-address windows (store/xpub-addresses.ts insertDerivedWindows) on PostgreSQL. */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createCustomer } from '../src/store/customers.ts';
import type { Db } from '../src/store/db.ts';
import { insertDerivedWindows, listDerivedAddresses } from '../src/store/xpub-addresses.ts';
import { openMigratedTestDatabase } from './harness.ts';

let db: Db;
beforeAll(async () => {
  db = await openMigratedTestDatabase();
});
afterAll(() => db.close());

async function keySubscription(customerId: string): Promise<string> {
  const id = randomUUID();
  await db.query(
    'test:xpub-subscription',
    `INSERT INTO subscriptions (id, customer_id, event_type, blockchain, network, target, callback_url, callback_host, allow_duplicates, duplicate_key, api_version, wallet_key)
     VALUES ($1, $2, 'XPUB_COINS_TRANSACTION_CONFIRMED', 'bitcoin', 'mainnet', $3::text, 'https://hooks.example.com/x', 'hooks.example.com', true,
       sha256(convert_to($3::text, 'UTF8')), '2021-03-20', '{}'::jsonb)`,
    [id, customerId, `zpub-${id}`],
  );
  return id;
}

it('stores each window split into its addresses, with their indexes and paths; an address already there is left as it is', async () => {
  const customer = await createCustomer(db, 'windows', { mainnetAllowed: true, maxActiveSubscriptions: null, requestsPerSecond: 100 }, 0n);
  const [a, b] = [await keySubscription(customer.id), await keySubscription(customer.id)];
  const added = await insertDerivedWindows(db, [
    { subscriptionId: a, change: false, from: 0, prefix: "m/84'/0'/0'/0", addresses: 'bc1qa0\nbc1qa1\nbc1qa2' },
    { subscriptionId: a, change: true, from: 5, prefix: "m/84'/0'/0'/1", addresses: 'bc1qc5\nbc1qc6' },
    { subscriptionId: b, change: false, from: 0, prefix: 'm/0', addresses: '' },
    { subscriptionId: b, change: false, from: 0, prefix: 'm/0', addresses: 'bc1qb0' },
  ]);
  expect(added).toBe(6);
  const listed = await listDerivedAddresses(db, customer.id, a, {}, { limit: 10, offset: 0 });
  expect(listed.items.map((r) => [r.address, r.derivationPath, r.change, r.index, r.used])).toEqual([
    ['bc1qa0', "m/84'/0'/0'/0/0", false, 0, false],
    ['bc1qa1', "m/84'/0'/0'/0/1", false, 1, false],
    ['bc1qa2', "m/84'/0'/0'/0/2", false, 2, false],
    ['bc1qc5', "m/84'/0'/0'/1/5", true, 5, false],
    ['bc1qc6', "m/84'/0'/0'/1/6", true, 6, false],
  ]);
  // Indexes 2 and 3 of a's receive chain: 2 is there already.
  expect(await insertDerivedWindows(db, [{ subscriptionId: a, change: false, from: 2, prefix: "m/84'/0'/0'/0", addresses: 'bc1qOTHER\nbc1qa3' }])).toBe(1);
  const after = await listDerivedAddresses(db, customer.id, a, { change: false }, { limit: 10, offset: 0 });
  expect(after.items.map((r) => r.address)).toEqual(['bc1qa0', 'bc1qa1', 'bc1qa2', 'bc1qa3']);
  expect(await insertDerivedWindows(db, [])).toBe(0);
});
