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
import { expect, it } from 'vitest';
import { recordAnnounced } from '../src/store/dropped.ts';
import { walletClient } from './support/evm-contracts.ts';
import { followedEvmNode } from './support/evm-driver.ts';
import { startEvmNode } from './support/evm-node.ts';
import { useFollowedApp } from './support/followed-app.ts';
import { until } from './support/wait.ts';

const SECRET = 'whsec-evm-evicted';
const SPAN_MS = 400;
const chain = { blockchain: 'ethereum', network: 'goerli' } as const;

const f = useFollowedApp(async () => followedEvmNode(await startEvmNode({ automine: false })), {
  chain: { mempoolPollIntervalMs: 50, mempoolEvictionSpanMs: SPAN_MS },
  secret: SECRET,
});
const { processed, subscribe, indexed, callbacksOf, expectSigned } = f;

const fee = { maxFeePerGas: 10_000_000_000n, maxPriorityFeePerGas: 1_000_000_000n };
const openRows = (ids: string[]) =>
  f.t.app.database.db.query<{ transaction_id: string; missing_checks: number }>(
    'test:open',
    'SELECT transaction_id, missing_checks FROM mempool_announced WHERE transaction_id = ANY ($1::text[])',
    [ids],
  );
const settle = async () => {
  await new Promise((r) => setTimeout(r, 4 * SPAN_MS));
  await f.t.app.worker?.settled();
};

it('a pending payment dropped from the pool is DROPPED, evicted, once; a new block and a restart send nothing more', { timeout: 120_000 }, async () => {
  const to = f.node.accounts[5]?.address as Address;
  const sub = (await subscribe('address-coins-transactions-unconfirmed', { address: to }, 'eth-evicted')).referenceId;
  await indexed();
  const wallet = walletClient(f.node, 1);
  const nonce = Number(await f.node.request<string>('eth_getTransactionCount', [f.node.accounts[1]?.address, 'pending']));
  const pending = await wallet.sendTransaction({ to, value: 1_000n, nonce, ...fee, account: wallet.account ?? null, chain: wallet.chain });
  const [announced] = await until('the pending payment', async () => callbacksOf(sub).length === 1 && callbacksOf(sub));
  // In the pool: checks find it, nothing is dropped.
  await settle();
  expect(callbacksOf(sub)).toHaveLength(1);
  expect(await f.node.request<boolean>('hardhat_dropTransaction', [pending])).toBe(true);
  expect(await f.node.request('eth_getTransactionByHash', [pending])).toBeNull();
  await until('the evicted payment', async () => callbacksOf(sub).length >= 2, 60_000);
  const dropped = callbacksOf(sub)[1];
  expectSigned(dropped);
  expect(dropped?.json.data).toEqual({
    product: 'BLOCKCHAIN_EVENTS',
    event: 'ADDRESS_COINS_TRANSACTION_UNCONFIRMED_DROPPED',
    item: { ...announced?.json.data.item, safety: undefined, reason: 'evicted' },
  });
  expect(await openRows([pending])).toEqual([]);
  const height = await f.node.mine(1);
  await processed(height);
  await f.t.restart();
  await processed(height);
  await settle();
  expect(callbacksOf(sub)).toHaveLength(2);
});

it('a mined payment whose announcement stayed open (the block applied before the announcement committed) is never called evicted', {
  timeout: 120_000,
}, async () => {
  const to = f.node.accounts[6]?.address as Address;
  const sub = (await subscribe('address-coins-transactions-unconfirmed', { address: to }, 'eth-mined-race')).referenceId;
  await indexed();
  // Sent and mined while herald is down: its mempool loop never sees it, its follower applies the block.
  let mined = '';
  let height = 0;
  let nonce = 0;
  await f.t.restart(async () => {
    const wallet = walletClient(f.node, 2);
    nonce = Number(await f.node.request<string>('eth_getTransactionCount', [f.node.accounts[2]?.address, 'pending']));
    mined = await wallet.sendTransaction({ to, value: 2_000n, nonce, ...fee, account: wallet.account ?? null, chain: wallet.chain });
    height = await f.node.mine(1);
  });
  await processed(height);
  expect(callbacksOf(sub)).toHaveLength(0);
  // What the mempool loop commits when it read the payment before that block and commits after it.
  await recordAnnounced(
    f.t.app.database.db,
    chain,
    [{ transactionId: mined, subscriptionId: sub, eventType: 'ADDRESS_COINS_TRANSACTION_UNCONFIRMED', item: { ...chain, address: to, transactionId: mined } }],
    [{ transactionId: mined, key: `${String(f.node.accounts[2]?.address).toLowerCase()}:${nonce}` }],
    new Date(),
  );
  // And one the node has never heard of (answered null at every check) whose nonce that block took: the
  // sender's nonce at the applied block is past it, so it is not proven unmined either.
  const unknown = `0x${'ab'.repeat(32)}`;
  await recordAnnounced(
    f.t.app.database.db,
    chain,
    [
      {
        transactionId: unknown,
        subscriptionId: sub,
        eventType: 'ADDRESS_COINS_TRANSACTION_UNCONFIRMED',
        item: { ...chain, address: to, transactionId: unknown },
      },
    ],
    [{ transactionId: unknown, key: `${String(f.node.accounts[2]?.address).toLowerCase()}:${nonce}` }],
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
  await f.t.app.worker?.settled();
  expect(callbacksOf(sub)).toHaveLength(0);
  // The mined one: the node answers it with its block, never missing.
  expect(await openRows([mined])).toEqual([{ transaction_id: mined, missing_checks: 0 }]);
  expect((await openRows([unknown]))[0]?.missing_checks).toBeGreaterThanOrEqual(6);
});
