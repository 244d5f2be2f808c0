/**
 * The `evicted` reason of ADDRESS_COINS_TRANSACTION_UNCONFIRMED_DROPPED (docs/concepts/deposit-safety.md#evicted)
 * on the EVM test node (EDR) with automine off: a pending payment announced, then dropped from the node's
 * pool (`hardhat_dropTransaction`): `eth_getTransactionByHash` answers null at three checks spanning the
 * chain's mempoolEvictionSpanMs (400 ms here), and the sender's nonce at the block herald applied
 * (`eth_getTransactionCount` at its hash) is still the payment's: DROPPED, evicted, once. A mined payment
 * whose announcement stayed open (the block applied before the announcement committed) is never called
 * evicted: the node answers it with its block; nor is a transaction the node does not know whose sender's
 * nonce a block herald applied took.
 */
import type { Address } from 'viem';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '../src/config/config.ts';
import { recordAnnounced } from '../src/store/dropped.ts';
import { startTestApp, type TestApp, type TestCustomer } from './harness.ts';
import { walletClient } from './support/evm-contracts.ts';
import { type EvmNode, startEvmNode } from './support/evm-node.ts';
import { followHelpers } from './support/follow-helpers.ts';
import { type Receiver, startReceiver } from './support/receiver.ts';
import { createTestCa, writeCaFile } from './support/tls.ts';
import { until } from './support/wait.ts';

const SECRET = 'whsec-evm-evicted';
const SPAN_MS = 400;
const chain = { blockchain: 'ethereum', network: 'goerli' } as const;

let node: EvmNode;
let receiver: Receiver;
let t: TestApp;
let c: TestCustomer;

const { processed, subscribe, indexed, callbacksOf, expectSigned } = followHelpers(() => ({ t, customer: c, receiver, ...chain }), SECRET);

beforeAll(async () => {
  const ca = await createTestCa();
  [node, receiver] = await Promise.all([startEvmNode({ automine: false }), startReceiver({ ca })]);
  t = await startTestApp({
    chains: [
      {
        ...chain,
        rpcUrl: node.url,
        pollIntervalMs: 50,
        mempoolPollIntervalMs: 50,
        mempoolEvictionSpanMs: SPAN_MS,
        concurrency: 8,
        requestTimeoutMs: 5000,
      },
    ],
    delivery: { ...loadConfig({}, {}).delivery, allowNetworks: ['127.0.0.1/32', '::1/128'], caFile: writeCaFile(ca.caPem), pollIntervalMs: 20 },
  });
  c = await t.customer({ domains: ['localhost'] });
  await processed(Number(await node.request<string>('eth_blockNumber', [])));
}, 60_000);

afterAll(async () => {
  await t?.close();
  await receiver?.close();
  await node?.close();
});

const fee = { maxFeePerGas: 10_000_000_000n, maxPriorityFeePerGas: 1_000_000_000n };
const openRows = (ids: string[]) =>
  t.app.database.db.query<{ transaction_id: string; missing_checks: number }>(
    'test:open',
    'SELECT transaction_id, missing_checks FROM mempool_announced WHERE transaction_id = ANY ($1::text[])',
    [ids],
  );
const settle = async () => {
  await new Promise((r) => setTimeout(r, 4 * SPAN_MS));
  await t.app.worker?.settled();
};

it('a pending payment dropped from the pool is DROPPED, evicted, once; a new block and a restart send nothing more', { timeout: 120_000 }, async () => {
  const to = node.accounts[5]?.address as Address;
  const sub = (await subscribe('address-coins-transactions-unconfirmed', { address: to }, 'eth-evicted')).referenceId;
  await indexed();
  const wallet = walletClient(node, 1);
  const nonce = Number(await node.request<string>('eth_getTransactionCount', [node.accounts[1]?.address, 'pending']));
  const pending = await wallet.sendTransaction({ to, value: 1_000n, nonce, ...fee, account: wallet.account ?? null, chain: wallet.chain });
  const [announced] = await until('the pending payment', async () => callbacksOf(sub).length === 1 && callbacksOf(sub));
  // In the pool: checks find it, nothing is dropped.
  await settle();
  expect(callbacksOf(sub)).toHaveLength(1);
  expect(await node.request<boolean>('hardhat_dropTransaction', [pending])).toBe(true);
  expect(await node.request('eth_getTransactionByHash', [pending])).toBeNull();
  await until('the evicted payment', async () => callbacksOf(sub).length >= 2, 60_000);
  const dropped = callbacksOf(sub)[1];
  expectSigned(dropped);
  expect(dropped?.json.data).toEqual({
    product: 'BLOCKCHAIN_EVENTS',
    event: 'ADDRESS_COINS_TRANSACTION_UNCONFIRMED_DROPPED',
    item: { ...announced?.json.data.item, safety: undefined, reason: 'evicted' },
  });
  expect(await openRows([pending])).toEqual([]);
  const height = await node.mine(1);
  await processed(height);
  await t.restart();
  await processed(height);
  await settle();
  expect(callbacksOf(sub)).toHaveLength(2);
});

it('a mined payment whose announcement stayed open (the block applied before the announcement committed) is never called evicted', {
  timeout: 120_000,
}, async () => {
  const to = node.accounts[6]?.address as Address;
  const sub = (await subscribe('address-coins-transactions-unconfirmed', { address: to }, 'eth-mined-race')).referenceId;
  await indexed();
  // Sent and mined while herald is down: its mempool loop never sees it, its follower applies the block.
  let mined = '';
  let height = 0;
  let nonce = 0;
  await t.restart(async () => {
    const wallet = walletClient(node, 2);
    nonce = Number(await node.request<string>('eth_getTransactionCount', [node.accounts[2]?.address, 'pending']));
    mined = await wallet.sendTransaction({ to, value: 2_000n, nonce, ...fee, account: wallet.account ?? null, chain: wallet.chain });
    height = await node.mine(1);
  });
  await processed(height);
  expect(callbacksOf(sub)).toHaveLength(0);
  // What the mempool loop commits when it read the payment before that block and commits after it.
  await recordAnnounced(
    t.app.database.db,
    chain,
    [{ transactionId: mined, subscriptionId: sub, eventType: 'ADDRESS_COINS_TRANSACTION_UNCONFIRMED', item: { ...chain, address: to, transactionId: mined } }],
    [{ transactionId: mined, key: `${String(node.accounts[2]?.address).toLowerCase()}:${nonce}` }],
    new Date(),
  );
  // And one the node has never heard of (answered null at every check) whose nonce that block took: the
  // sender's nonce at the applied block is past it, so it is not proven unmined either.
  const unknown = `0x${'ab'.repeat(32)}`;
  await recordAnnounced(
    t.app.database.db,
    chain,
    [
      {
        transactionId: unknown,
        subscriptionId: sub,
        eventType: 'ADDRESS_COINS_TRANSACTION_UNCONFIRMED',
        item: { ...chain, address: to, transactionId: unknown },
      },
    ],
    [{ transactionId: unknown, key: `${String(node.accounts[2]?.address).toLowerCase()}:${nonce}` }],
    new Date(),
  );
  // Checked again and again, well past the span.
  await until(
    'many missing checks',
    async () => {
      const row = (await openRows([unknown]))[0];
      return row === undefined || row.missing_checks >= 6;
    },
    60_000,
  );
  await t.app.worker?.settled();
  expect(callbacksOf(sub)).toHaveLength(0);
  // The mined one: the node answers it with its block, never missing.
  expect(await openRows([mined])).toEqual([{ transaction_id: mined, missing_checks: 0 }]);
  expect((await openRows([unknown]))[0]?.missing_checks).toBeGreaterThanOrEqual(6);
});
