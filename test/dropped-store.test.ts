/**
 * The announcements of unconfirmed transactions on the real database (store/dropped.ts, migration 070;
 * docs/reference/events/address-coins-transaction-unconfirmed-dropped.md): a later transaction sharing a
 * claim takes the announcement (replaced), a block closes the announcements of its transactions without
 * returning them (mined: never dropped) and returns those whose outpoints its other transactions spend
 * (conflicted), each once; prune by age. The end-to-end paths are tested on litecoind
 * (test/litecoin-mempool.test.ts), the fake Bitcoin Core node (test/utxo-dropped.test.ts) and the EVM test
 * node (test/evm-mempool.test.ts).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Db } from '../src/store/db.ts';
import { pruneAnnounced, recordAnnounced, takeReplaced, takeSettledByBlock } from '../src/store/dropped.ts';
import { startTestApp, type TestApp } from './harness.ts';

let t: TestApp;
let db: Db;
beforeAll(async () => {
  t = await startTestApp();
  db = t.app.database.db;
});
afterAll(async () => t?.close());

const chain = { blockchain: 'dogecoin', network: 'testnet' } as const;
const id = (n: number) => n.toString(16).padStart(64, '0');
const announce = (transactionId: string, subscriptionId: string) => ({
  transactionId,
  subscriptionId,
  eventType: 'ADDRESS_COINS_TRANSACTION_UNCONFIRMED',
  item: { transactionId, amount: '1' },
});
const open = async () =>
  (
    await db.query<{ transaction_id: string }>('test:open', 'SELECT transaction_id FROM mempool_announced WHERE blockchain = $1 ORDER BY 1', [chain.blockchain])
  ).map((r) => r.transaction_id);

it('replaced: the announcement of a transaction whose outpoint a later one claims, for each subscription, once; the replacer itself is not taken', async () => {
  const [s1, s2] = [randomUUID(), randomUUID()];
  const at = new Date();
  await recordAnnounced(
    db,
    chain,
    [announce(id(1), s1), announce(id(1), s2)],
    [
      { transactionId: id(1), key: `${id(100)}:0` },
      { transactionId: id(1), key: `${id(100)}:1` },
      // Not announced: its claims are not kept.
      { transactionId: id(9), key: `${id(100)}:2` },
    ],
    at,
  );
  expect(await takeReplaced(db, chain, [{ transactionId: id(9), key: `${id(100)}:2` }])).toEqual([]);
  const taken = await takeReplaced(db, chain, [
    { transactionId: id(2), key: `${id(100)}:1` },
    { transactionId: id(3), key: `${id(100)}:0` },
  ]);
  expect(taken.map((d) => [d.transactionId, d.subscriptionId, d.byTransactionId]).sort()).toEqual(
    [
      [id(1), s1, id(2)],
      [id(1), s2, id(2)],
    ].sort(),
  );
  expect(taken[0]?.item).toEqual({ transactionId: id(1), amount: '1' });
  expect(await takeReplaced(db, chain, [{ transactionId: id(3), key: `${id(100)}:0` }])).toEqual([]);
  expect(await open()).toEqual([]);
});

it('a block: its own transactions are closed and never returned (mined), even when they share a claim; those whose outpoints its transactions spend are conflicted', async () => {
  const s = randomUUID();
  await recordAnnounced(
    db,
    chain,
    [announce(id(11), s), announce(id(12), s), announce(id(13), s)],
    [
      { transactionId: id(11), key: `${id(200)}:0` },
      { transactionId: id(12), key: `${id(201)}:0` },
      { transactionId: id(13), key: `${id(202)}:0` },
    ],
    new Date(),
  );
  // id(11) mined (its own input listed as a spend of the block), id(20) spends id(12)'s outpoint; id(13) untouched.
  const conflicted = await takeSettledByBlock(
    db,
    chain,
    [id(11), id(20)],
    [
      { transactionId: id(11), key: `${id(200)}:0` },
      { transactionId: id(20), key: `${id(201)}:0` },
    ],
  );
  expect(conflicted.map((d) => [d.transactionId, d.byTransactionId])).toEqual([[id(12), id(20)]]);
  expect(await open()).toEqual([id(13)]);
  // Applied again (a restart before the commit would roll it back; after, nothing is left to take).
  expect(await takeSettledByBlock(db, chain, [id(11), id(20)], [{ transactionId: id(20), key: `${id(201)}:0` }])).toEqual([]);
});

it('prune: announcements older than the bound go with their claims', async () => {
  const s = randomUUID();
  await recordAnnounced(db, chain, [announce(id(31), s)], [{ transactionId: id(31), key: `${id(300)}:0` }], new Date(Date.now() - 3600_000));
  await pruneAnnounced(db, chain, new Date(Date.now() - 60_000));
  expect(await open()).toEqual([id(13)]);
  expect(await takeSettledByBlock(db, chain, [], [{ transactionId: id(32), key: `${id(300)}:0` }])).toEqual([]);
  const claims = await db.query('test:claims', 'SELECT 1 FROM mempool_announced_spends WHERE blockchain = $1 AND transaction_id = $2', [
    chain.blockchain,
    id(31),
  ]);
  expect(claims).toHaveLength(0);
});
