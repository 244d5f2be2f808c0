/**
 * getNodeHealth of each family against a node speaking its real format (the EVM test node, and the fakes
 * of test/support for the families that cannot run here): the head's height and hash as getHead and
 * getBlockHash tell them, and the node's own word on whether it is in step with its network.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { startEvmNode } from '../../test/support/evm-node.ts';
import { startFakeRippled } from '../../test/support/fake-rippled.ts';
import { startFakeTronNode } from '../../test/support/fake-tron-node.ts';
import { startFakeUtxoNode } from '../../test/support/fake-utxo-node.ts';
import { startFaultProxy } from '../../test/support/fault-proxy.ts';
import { createEvmAdapter } from './evm/adapter.ts';
import { createTronAdapter } from './tron/adapter.ts';
import { createUtxoAdapter } from './utxo/adapter.ts';
import { createXrpAdapter } from './xrp/adapter.ts';

const closers: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close();
});

describe('getNodeHealth', () => {
  it('EVM: eth_syncing false is in step; geth’s progress object is syncing; the head is the latest header', async () => {
    const node = await startEvmNode({ automine: false });
    closers.push(() => node.close());
    await node.mine(4);
    const proxy = await startFaultProxy(node.url);
    closers.push(() => proxy.close());
    const adapter = createEvmAdapter({ blockchain: 'ethereum', network: 'goerli', rpcUrl: proxy.url });
    closers.push(() => adapter.close());
    const health = await adapter.getNodeHealth();
    expect(health).toEqual({ height: 4, hash: await adapter.getBlockHash(4) });
    proxy.syncing();
    expect(await adapter.getNodeHealth()).toEqual({ height: 4, hash: health.hash, syncing: 'eth_syncing says the node is syncing: block 4 of 1004' });
    proxy.rateLimit(7);
    await expect(adapter.getNodeHealth()).rejects.toMatchObject({ status: 429, retryAfterMs: 7000 });
  });

  it('Bitcoin family: getblockchaininfo; initial block download or headers beyond blocks + 2 is syncing', async () => {
    const node = await startFakeUtxoNode('bitcoin');
    closers.push(() => node.close());
    const adapter = createUtxoAdapter({ blockchain: 'bitcoin', network: 'testnet', rpcUrl: node.urlWithCredentials });
    closers.push(() => adapter.close());
    const tip = node.height();
    expect(await adapter.getNodeHealth()).toEqual({ height: tip, hash: node.blockHash(tip) });
    node.setSyncing({ headersAhead: 2 });
    expect((await adapter.getNodeHealth()).syncing).toBeUndefined(); // a block or two in flight is normal
    node.setSyncing({ headersAhead: 3 });
    expect((await adapter.getNodeHealth()).syncing).toBe(`3 blocks behind its own headers (block ${tip} of ${tip + 3})`);
    node.setSyncing({ initialBlockDownload: true });
    expect((await adapter.getNodeHealth()).syncing).toBe(`initial block download (block ${tip} of ${tip} headers)`);
  });

  it('XRP: server_state full is in step, syncing is not; the head is the validated ledger', async () => {
    const fake = await startFakeRippled();
    closers.push(() => fake.close());
    fake.closeLedgers(3);
    const adapter = createXrpAdapter({ network: 'testnet', rpcUrl: fake.url });
    closers.push(() => adapter.close());
    const health = await adapter.getNodeHealth();
    expect(health).toEqual({ height: fake.validatedIndex, hash: await adapter.getBlockHash(fake.validatedIndex) });
    fake.setServerState('syncing');
    expect(await adapter.getNodeHealth()).toEqual({ ...health, syncing: "server_state is 'syncing'" });
    fake.setServerState('proposing');
    expect((await adapter.getNodeHealth()).syncing).toBeUndefined();
  });

  it('Tron: a head block older than a minute is a node still syncing', async () => {
    const fresh = await startFakeTronNode();
    const stale = await startFakeTronNode({ genesisMs: Date.now() - 10 * 60_000 });
    closers.push(
      () => fresh.close(),
      () => stale.close(),
    );
    const a = createTronAdapter({ network: 'nile', rpcUrl: fresh.url });
    const b = createTronAdapter({ network: 'nile', rpcUrl: stale.url });
    closers.push(
      () => a.close(),
      () => b.close(),
    );
    const head = await a.getHead();
    expect(await a.getNodeHealth()).toEqual({ height: head, hash: await a.getBlockHash(head) });
    expect((await b.getNodeHealth()).syncing).toMatch(/^its head block is (59\d|60\d) s old \(blocks come every 3 s\): syncing or cut off from its peers$/);
  });
});
