/**
 * The follower's set of watched addresses (src/wallets/watched-set.ts) against a real database: loaded in
 * pages up to an id bound read under the chain's lock, then kept current by the block statement's rows
 * above that bound, so a block asks the database about the few of its addresses that may be watched and
 * still finds every address added since, once.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { blockTransactionPrelude, readBlockState } from '../src/store/block-apply.ts';
import { WatchedAddressSet } from '../src/wallets/watched-set.ts';
import { startTestApp, type TestApp } from './harness.ts';
import { testnetAddress } from './support/utxo-blocks.ts';

const CHAIN = { blockchain: 'bitcoin', network: 'testnet' } as const;

let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

async function setup() {
  t = await startTestApp({ roles: ['api'] });
  const app = t;
  const customer = await app.customer();
  const wallet = async (walletName: string) =>
    (await app.request('POST', '/wallet-as-a-service/wallets', { key: customer.key, body: { data: { item: { walletName } } } })).body.data.item
      .walletId as string;
  const path = (walletId: string) => `/wallet-as-a-service/wallets/${walletId}/bitcoin/testnet/addresses`;
  const watch = async (walletId: string, address: string) => {
    const r = await app.request('POST', path(walletId), { key: customer.key, body: { data: { item: { address } } } });
    expect(r.status, r.text).toBe(201);
  };
  const unwatch = async (walletId: string, address: string) => {
    const r = await app.request('DELETE', `${path(walletId)}/${address}`, { key: customer.key });
    expect(r.status, r.text).toBe(200);
  };
  const db = app.app.database.db;
  /** The block statement's read, as the follower makes it, and what the set makes of it. */
  const read = (set: WatchedAddressSet, touched: string[]) =>
    db.transaction(
      'test:read-state',
      async (tx) => {
        const state = await readBlockState(tx, CHAIN, { subscriptionIds: [], candidates: set.candidates(touched), since: set.since });
        return set.watchedOf(state.watched, touched);
      },
      { prelude: blockTransactionPrelude(CHAIN) },
    );
  const subscribe = async (address: string) => {
    const r = await app.request('POST', '/blockchain-events/bitcoin/testnet/subscriptions/address-tokens-transactions-confirmed', {
      key: customer.key,
      body: { data: { item: { address, callbackUrl: 'https://hooks.example.com/callbacks' } } },
    });
    expect(r.status, r.text).toBe(201);
  };
  const bulk = (addresses: string[]) =>
    app.request('POST', '/blockchain-events/bitcoin/testnet/subscriptions/address-coins-transactions-confirmed/bulk', {
      key: customer.key,
      body: { data: { items: addresses.map((address) => ({ address, callbackUrl: 'https://hooks.example.com/callbacks', allowDuplicates: true })) } },
    });
  /** The addresses the customer's subscriptions watch (store/subscribed-addresses.ts). */
  const subscribedRows = async () =>
    (
      await db.query<{ normalized_address: string }>(
        'test:subscribed',
        'SELECT normalized_address FROM wallet_addresses WHERE subscribed_by = $1 ORDER BY normalized_address',
        [customer.id],
      )
    ).map((r) => r.normalized_address);
  return { db, customer, wallet, watch, unwatch, read, subscribe, bulk, subscribedRows };
}

describe('the follower’s set of watched addresses', () => {
  it('loads in pages, names only its addresses as candidates, and learns the addresses added since, each row once', async () => {
    const s = await setup();
    const [a, b, c, d, e, late] = ['a', 'b', 'c', 'd', 'e', 'late'].map(testnetAddress) as [string, string, string, string, string, string];
    const idle = testnetAddress('idle');
    const w1 = await s.wallet('one');
    const w2 = await s.wallet('two');
    for (const address of [a, b, c, d, e]) await s.watch(w1, address);
    await s.watch(w2, a); // one address, two wallets: two rows

    const set = new WatchedAddressSet();
    await set.load(s.db, CHAIN, 2); // pages of 2 rows: the page boundaries fall inside the list
    expect(set.size).toBe(5);
    expect(set.candidates([a, idle, e])).toEqual([a, e]);
    const before = set.since;

    // The two rows of `a` and the row of `e`; nothing added.
    const first = await s.read(set, [a, idle, e]);
    expect(first.map((w) => w.address).sort()).toEqual([a, a, e].sort());
    expect(new Set(first.map((w) => w.id)).size).toBe(3);
    expect(set.since).toBe(before);

    // Added after the load (under the chain's lock, as the API adds): found by the bound, not by the candidates.
    await s.watch(w2, late);
    expect(set.candidates([late])).toEqual([]);
    const second = await s.read(set, [late, b]);
    expect(second.map((w) => w.address).sort()).toEqual([b, late].sort());
    expect(set.since).toBeGreaterThan(before);
    expect(set.candidates([late])).toEqual([late]);

    // Learnt once: the next block finds it as a candidate, and an added address the block does not touch is learnt but not returned.
    await s.watch(w1, late);
    const third = await s.read(set, [c]);
    expect(third.map((w) => w.address)).toEqual([c]);
    const fourth = await s.read(set, [late]);
    expect(fourth.map((w) => w.address)).toEqual([late, late]);

    // Removed from every wallet: still a candidate, but no row answers for it.
    await s.unwatch(w1, d);
    expect(set.candidates([d])).toEqual([d]);
    expect(await s.read(set, [d])).toEqual([]);
  });

  it('an address subscription watches its address (learnt as an added row); a load watches the subscribed addresses left out and stops those no subscription names', async () => {
    const s = await setup();
    const [kept, lost, stale] = ['kept', 'lost', 'stale'].map(testnetAddress) as [string, string, string];
    const set = new WatchedAddressSet();
    await set.load(s.db, CHAIN);
    await s.subscribe(kept);
    expect(await s.subscribedRows()).toEqual([kept]);
    expect((await s.read(set, [kept])).map((w) => w.address)).toEqual([kept]);
    // A bulk create watches the addresses of the items it created, once each.
    const [one, two] = ['bulk-one', 'bulk-two'].map(testnetAddress) as [string, string];
    const bulk = await s.bulk([one, two, one]);
    expect(bulk.status, bulk.text).toBe(200);
    expect(await s.subscribedRows()).toEqual([kept, one, two].sort());
    await s.db.query('test:unbulk', 'DELETE FROM subscriptions WHERE customer_id = $1 AND target = ANY ($2::text[])', [s.customer.id, [one, two]]);
    expect(await s.subscribedRows()).toEqual([kept]);

    // A process stopped between a create's commit and its watch (`lost` subscribed, not watched), and a
    // watch left after its last subscription ended (`stale`, as two subscriptions ended at once leave it).
    await s.subscribe(lost);
    await s.db.query('test:lose', 'DELETE FROM wallet_addresses WHERE subscribed_by = $1 AND normalized_address = $2', [s.customer.id, lost]);
    await s.db.query(
      'test:stale',
      `INSERT INTO wallet_addresses (subscribed_by, blockchain, network, address, normalized_address) VALUES ($1, 'bitcoin', 'testnet', $2, $2)`,
      [s.customer.id, stale],
    );
    const reloaded = new WatchedAddressSet();
    await reloaded.load(s.db, CHAIN);
    expect(await s.subscribedRows()).toEqual([kept, lost].sort());
    expect(reloaded.candidates([kept, lost, stale]).sort()).toEqual([kept, lost].sort());
  });

  it('an empty chain loads as empty and learns its first address', async () => {
    const s = await setup();
    const set = new WatchedAddressSet();
    await set.load(s.db, CHAIN);
    expect(set.size).toBe(0);
    expect(set.since).toBe(0);
    const first = testnetAddress('first');
    await s.watch(await s.wallet('w'), first);
    expect((await s.read(set, [first])).map((w) => w.address)).toEqual([first]);
    expect(set.size).toBe(1);
  });
});
