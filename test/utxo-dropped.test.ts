/**
 * Dropped unconfirmed transactions (docs/reference/events/address-coins-transaction-unconfirmed-dropped.md)
 * on the fake Bitcoin Core node (it speaks Core's RPC formats; test/support/fake-utxo): a BIP125
 * replacement of a transaction herald announced gives the announced subscription
 * ADDRESS_COINS_TRANSACTION_UNCONFIRMED_DROPPED, reason replaced, naming the replacement, once; the
 * replacement itself fires nothing, and mining it sends nothing more; the event stream filters on the DROPPED type. A double
 * spend mined without passing through the mempool gives reason conflicted: the fake speaks Core 30's
 * getblock verbosity 3, whose inputs carry their prevout inline (the block's resolvedSpends). litecoind's
 * own replacement and the mined conflict at verbosity 2 are in test/litecoin-mempool.test.ts.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { TestApp, TestCustomer } from './harness.ts';
import type { ChainDriver } from './support/chain-driver.ts';
import { type FakeUtxoNode, startFakeUtxoDriver } from './support/fake-utxo-node.ts';
import { followHelpers } from './support/follow-helpers.ts';
import { type FollowedApp, startFollowedApp } from './support/followed-app.ts';
import type { Receiver } from './support/receiver.ts';
import { streamSettled } from './support/stream-settled.ts';
import { until } from './support/wait.ts';

const SECRET = 'whsec-utxo-dropped';
let env: FollowedApp<ChainDriver & { node: FakeUtxoNode }>;
let t: TestApp;
let c: TestCustomer;
let receiver: Receiver;

const { subscribe, indexed, callbacksOf, expectSigned } = followHelpers(
  () => ({ t, customer: c, receiver, blockchain: env.node.blockchain, network: env.node.network }),
  SECRET,
);

beforeAll(async () => {
  env = await startFollowedApp(() => startFakeUtxoDriver('bitcoin'), { chain: { confirmations: 1, mempoolPollIntervalMs: 50 } });
  ({ t, c, receiver } = env);
}, 60_000);

afterAll(() => env?.close());

const settle = async () => {
  await new Promise((r) => setTimeout(r, 400));
  await t.app.worker?.settled();
};

it('an announced deposit replaced (RBF) in the mempool is DROPPED, replaced, naming the replacement; nothing more when the replacement is mined', async () => {
  const fake = env.node.node;
  const address = fake.newAddress();
  const sub = (await subscribe('address-coins-transactions-unconfirmed', { address }, 'replaced')).referenceId;
  await indexed();
  const payer = fake.newAddress();
  fake.send(payer, 50_000_000n);
  await env.mineAndProcess();
  const original = fake.spend(payer, address, 20_000_000n).txid;
  await until('the original', async () => callbacksOf(sub).length === 1);
  const replacement = fake.replace(original, payer, fake.newAddress(), 20_000_000n);
  expect(fake.rpc<string[]>('getrawmempool')).toEqual([replacement]);
  await until('the dropped callback', async () => callbacksOf(sub).length === 2);
  const [announced, dropped] = callbacksOf(sub);
  expectSigned(dropped);
  expect(dropped?.json.data).toEqual({
    product: 'BLOCKCHAIN_EVENTS',
    event: 'ADDRESS_COINS_TRANSACTION_UNCONFIRMED_DROPPED',
    item: {
      blockchain: env.node.blockchain,
      network: env.node.network,
      address,
      transactionId: original,
      amount: '0.2',
      unit: 'BTC',
      direction: 'incoming',
      firstSeenInMempoolTimestamp: announced?.json.data.item.firstSeenInMempoolTimestamp,
      reason: 'replaced',
      replacedByTransactionId: replacement,
    },
  });
  // The event stream has it, and its filter takes the DROPPED type (docs/concepts/event-stream.md).
  await streamSettled(t.app.database.db, c.id);
  const stream = await t.request(
    'GET',
    `/blockchain-events/events?${new URLSearchParams({ referenceId: sub, eventType: 'ADDRESS_COINS_TRANSACTION_UNCONFIRMED_DROPPED', limit: '100' })}`,
    { key: c.key },
  );
  expect(stream.status, stream.text).toBe(200);
  expect(stream.body.data.items.map((e: { idempotencyKey: string; data: unknown }) => [e.idempotencyKey, e.data])).toEqual([
    [dropped?.json.idempotencyKey, dropped?.json.data],
  ]);
  await env.mineAndProcess();
  await t.restart();
  await env.mineAndProcess();
  await settle();
  expect(callbacksOf(sub)).toHaveLength(2);
});

it('an announced deposit whose coins a mined transaction spends (verbosity 3, never in the mempool) is DROPPED, conflicted, naming it', async () => {
  const fake = env.node.node;
  const address = fake.newAddress();
  const sub = (await subscribe('address-coins-transactions-unconfirmed', { address }, 'conflicted')).referenceId;
  await indexed();
  const payer = fake.newAddress();
  fake.send(payer, 50_000_000n);
  await env.mineAndProcess();
  const original = fake.spend(payer, address, 20_000_000n).txid;
  await until('the original', async () => callbacksOf(sub).length === 1);
  // The double spend goes straight into a block: replaced and mined in one step, so no read of the
  // mempool ever sees it (Core would have it from a miner that never relayed it).
  const conflict = fake.replace(original, payer, fake.newAddress(), 20_000_000n);
  fake.mine(1);
  expect(fake.rpc<string[]>('getrawmempool')).toEqual([]);
  const block = fake.rpc<{ tx: { txid: string; vin: { prevout?: unknown }[] }[] }>('getblock', [fake.blockHash(fake.height()), 3]);
  expect(block.tx.find((tx) => tx.txid === conflict)?.vin.every((v) => v.prevout !== undefined)).toBe(true);
  await until('the dropped callback', async () => callbacksOf(sub).length === 2);
  const [announced, dropped] = callbacksOf(sub);
  expectSigned(dropped);
  expect(dropped?.json.data).toMatchObject({ event: 'ADDRESS_COINS_TRANSACTION_UNCONFIRMED_DROPPED' });
  expect(dropped?.json.data.item).toEqual({
    ...announced?.json.data.item,
    safety: undefined,
    reason: 'conflicted',
    replacedByTransactionId: conflict,
  });
  await env.mineAndProcess();
  await settle();
  expect(callbacksOf(sub)).toHaveLength(2);
});
