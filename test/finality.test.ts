/**
 * finality: "finalized" (docs/concepts/confirmations-and-reorganisations.md#finality): a coin deposit's
 * callback is held until the chain's own finality signal covers its block, then sent once. On a real Anvil
 * (its `finalized` block tag, two epochs below the head: 4 blocks with 2 slots an epoch), the fake java-tron
 * (walletsolidity/getnowblock, the solidified block) and the fake Dash Core (getblock's `chainlock`, a
 * ChainLock arriving after its block and released without a new block).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp, TestCustomer } from './harness.ts';
import { anvil } from './support/anvil-node.ts';
import type { ChainDriver } from './support/chain-driver.ts';
import { startEvmDriver, TEST_CONTRACTS } from './support/evm-driver.ts';
import { type FakeTronNode, startFakeTronDriver } from './support/fake-tron-node.ts';
import { type FakeUtxoNode, startFakeUtxoDriver } from './support/fake-utxo-node.ts';
import { followHelpers } from './support/follow-helpers.ts';
import { type FollowedApp, startFollowedApp } from './support/followed-app.ts';
import { describeWithRealNode } from './support/real-node.ts';
import type { Receiver } from './support/receiver.ts';
import { until } from './support/wait.ts';

const SECRET = 'whsec-finality';
const settle = () => new Promise((r) => setTimeout(r, 1_500)); // past the follower's finality read interval (1 s)

/**
 * The shared scenario: subscribe with finality, deposit, mine `held` blocks (the deposit's block not yet
 * final: no callback), then `finalize()` (more blocks, or the signal alone) and see exactly one callback.
 */
function finalityScenario(
  name: string,
  start: () => Promise<ChainDriver>,
  steps: { amount: bigint; held: number; finalize: (env: FollowedApp, depositHeight: number) => Promise<void>; prepare?: (env: FollowedApp) => void },
) {
  describe(name, () => {
    let env: FollowedApp;
    let t: TestApp;
    let c: TestCustomer;
    let receiver: Receiver;
    let blockchain = '';
    let network = '';
    const { subscribe, callbacksOf, expectSigned } = followHelpers(() => ({ t, customer: c, receiver, blockchain, network }), SECRET);

    beforeAll(async () => {
      env = await startFollowedApp(start);
      ({ t, c, receiver } = env);
      ({ blockchain, network } = env.node);
      steps.prepare?.(env);
    }, 60_000);
    afterAll(() => env?.close());

    it('holds the callback until the block is final, then sends it once', async () => {
      const address = await env.node.newAddress();
      const created = await subscribe('address-coins-transactions-confirmed', { address, finality: 'finalized' }, 'final');
      expect(created.item).toMatchObject({ address, finality: 'finalized' });
      expect(created.item).not.toHaveProperty('receiveCallbackOn');
      await t.app.ingest?.settled();

      const deposit = await env.node.send(address, steps.amount);
      const depositHeight = await env.mineAndProcess();
      if (steps.held > 0) await env.mineAndProcess(steps.held);
      await settle();
      expect(callbacksOf(created.referenceId)).toHaveLength(0);

      await steps.finalize(env, depositHeight);
      const [callback] = await until(
        'the callback once the block is final',
        async () => callbacksOf(created.referenceId).length > 0 && callbacksOf(created.referenceId),
      );
      expectSigned(callback);
      expect(callback?.json.data.item).toMatchObject({ transactionId: deposit, direction: 'incoming', minedInBlock: { height: depositHeight } });
      await env.mineAndProcess(2);
      await settle();
      expect(callbacksOf(created.referenceId)).toHaveLength(1);
    });
  });
}

describeWithRealNode('finality on a real Anvil', anvil, () => {
  finalityScenario(
    'ethereum: the node\'s "finalized" block tag',
    () =>
      startEvmDriver({
        node: 'anvil',
        slotsInAnEpoch: 2,
        blockchain: 'ethereum',
        network: 'sepolia',
        chainId: 11155111,
        ...TEST_CONTRACTS,
      }),
    {
      amount: 10n ** 17n,
      held: 3, // finalized = head - 4: the deposit's block is final at the 4th block after it
      finalize: async (env) => {
        await env.mineAndProcess();
      },
    },
  );
});

finalityScenario('tron: the solidified block (walletsolidity/getnowblock)', () => startFakeTronDriver({ network: 'nile' }), {
  amount: 5_000_000n,
  held: 2,
  prepare: (env) => {
    (env.node as unknown as { node: FakeTronNode }).node.solidifiedLag = 3;
  },
  finalize: async (env) => {
    await env.mineAndProcess(); // solidified = head - 3 = the deposit's block
  },
});

finalityScenario('dash: ChainLocks (getblock chainlock)', () => startFakeUtxoDriver('dash'), {
  amount: 50_000_000n,
  held: 2,
  prepare: (env) => {
    const node = (env.node as unknown as { node: FakeUtxoNode }).node;
    node.chain.chainLockedHeight = node.height(); // what is mined from now on waits for its lock
  },
  finalize: async (env, depositHeight) => {
    // The ChainLock arrives after the blocks, no new block: the follower's sweep sends it.
    (env.node as unknown as { node: FakeUtxoNode }).node.chain.chainLockedHeight = depositHeight;
  },
});

describe('dash: a block reorganised away before its ChainLock', () => {
  let env: FollowedApp;
  let t: TestApp;
  let c: TestCustomer;
  let receiver: Receiver;
  const { subscribe, callbacksOf } = followHelpers(() => ({ t, customer: c, receiver, blockchain: 'dash', network: env.node.network }), SECRET);
  beforeAll(async () => {
    env = await startFollowedApp(() => startFakeUtxoDriver('dash'));
    ({ t, c, receiver } = env);
  }, 60_000);
  afterAll(() => env?.close());

  it('sends nothing for the dropped block, and the deposit mined again once its new block is locked', async () => {
    const node = (env.node as unknown as { node: FakeUtxoNode }).node;
    node.chain.chainLockedHeight = node.height();
    const address = await env.node.newAddress();
    const created = await subscribe('address-coins-transactions-confirmed', { address, finality: 'finalized' }, 'reorg');
    await t.app.ingest?.settled();
    const deposit = await env.node.send(address, 50_000_000n);
    const first = await env.mineAndProcess();
    const firstHash = await env.node.blockHash(first);
    // The block is replaced before any lock (the deposit mined again in the new blocks), then everything is locked.
    const height = await env.node.reorg(1);
    await env.mineAndProcess(0);
    node.chain.chainLockedHeight = height;
    const [callback] = await until('the deposit in its new block', async () => callbacksOf(created.referenceId).length > 0 && callbacksOf(created.referenceId));
    expect(callback?.json.data.item).toMatchObject({ transactionId: deposit });
    expect(callback?.json.data.item).not.toMatchObject({ minedInBlock: { hash: firstHash } });
    await settle();
    expect(callbacksOf(created.referenceId)).toHaveLength(1);
  });
});
