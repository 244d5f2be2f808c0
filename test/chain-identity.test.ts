/**
 * A node must be the chain its label names (docs/reference/chains.md "Chain identity"). Each family's adapter reads the node's
 * identity from its real RPC (EDR's eth_chainId, a fake Bitcoin Core's getblockchaininfo and block 0, a fake
 * java-tron's genesis block, a fake rippled's server_info network_id); herald refuses to follow a node on
 * another chain (the status says why, the node is never read) and follows it once the configuration declares
 * what it runs (chainId, HERALD_CHAIN_ID_<BLOCKCHAIN>_<NETWORK>).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createEvmAdapter } from '../src/chains/evm/adapter.ts';
import { createTronAdapter } from '../src/chains/tron/adapter.ts';
import { createUtxoAdapter } from '../src/chains/utxo/adapter.ts';
import { createXrpAdapter } from '../src/chains/xrp/adapter.ts';
import { loadConfig } from '../src/config/config.ts';
import { expectedIdentity } from '../src/domain/chain-identity.ts';
import { startTestApp, type TestApp } from './harness.ts';
import { type EvmNode, startEvmNode } from './support/evm-node.ts';
import { startFakeRippled } from './support/fake-rippled.ts';
import { startFakeTronNode } from './support/fake-tron-node.ts';
import { startFakeUtxoNode } from './support/fake-utxo-node.ts';
import { until } from './support/wait.ts';

const closers: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close();
});

describe("each family's node says which chain it is", () => {
  it('EVM: eth_chainId, in decimal (EDR)', async () => {
    const node = await startEvmNode({ chainId: 31337 });
    closers.push(() => node.close());
    const adapter = createEvmAdapter({ blockchain: 'ethereum', network: 'goerli', rpcUrl: node.url });
    closers.push(async () => adapter.close());
    expect(await adapter.getNodeIdentity()).toEqual({ chainId: '31337' });
  });

  it("Bitcoin family: getblockchaininfo.chain and block 0's hash (fake Bitcoin Core)", async () => {
    const node = await startFakeUtxoNode('dogecoin', { initialBlocks: 3 });
    closers.push(async () => node.close());
    const adapter = createUtxoAdapter({ blockchain: 'dogecoin', network: 'testnet', rpcUrl: node.urlWithCredentials, blockWorkers: 0 });
    closers.push(() => adapter.close());
    expect(await adapter.getNodeIdentity()).toEqual({ chainId: 'test', genesisHash: node.blockHash(0) });
  });

  it('Tron: the id of its genesis block (fake java-tron, getblockbynum 0)', async () => {
    const node = await startFakeTronNode();
    closers.push(async () => node.close());
    const adapter = createTronAdapter({ network: 'nile', rpcUrl: node.url });
    closers.push(() => adapter.close());
    expect(await adapter.getNodeIdentity()).toEqual({ chainId: node.blockHash(0) });
  });

  it('XRP: server_info network_id (fake rippled)', async () => {
    const node = await startFakeRippled({ networkId: 1 });
    closers.push(async () => node.close());
    const adapter = createXrpAdapter({ network: 'testnet', rpcUrl: node.url });
    closers.push(() => adapter.close());
    expect(await adapter.getNodeIdentity()).toEqual({ chainId: '1' });
  });
});

describe('the expected identities', () => {
  it("the label's own: chain ids, chain names with their genesis blocks, the Bitcoin Cash split; a declared chainId replaces it", () => {
    expect(expectedIdentity('ethereum', 'mainnet', 'evm')).toEqual({ family: 'evm', chainId: '1', declared: false });
    expect(expectedIdentity('binance-smart-chain', 'testnet', 'evm')?.chainId).toBe('97');
    expect(expectedIdentity('litecoin', 'testnet', 'utxo')).toEqual({
      family: 'utxo',
      chainId: 'test',
      declared: false,
      genesisHash: '4966625a4b2851d9fdee139e56211a0d88575f59ed816ff5e6a63deb4e3e29a0',
    });
    expect(expectedIdentity('bitcoin-cash', 'mainnet', 'utxo')).toMatchObject({ chainId: 'main', split: 'bitcoin-cash' });
    expect(expectedIdentity('xrp', 'testnet', 'xrp')?.chainId).toBe('1');
    expect(expectedIdentity('ethereum', 'goerli', 'evm', '0x7a69')).toEqual({ family: 'evm', chainId: '31337', declared: true });
    expect(expectedIdentity('litecoin', 'testnet', 'utxo', 'regtest')).toEqual({ family: 'utxo', chainId: 'regtest', declared: true });
  });

  it('HERALD_CHAIN_ID_<BLOCKCHAIN>_<NETWORK> sets chainId; a value the family cannot say is refused at start', () => {
    const config = loadConfig({}, { HERALD_RPC_ETHEREUM_GOERLI: 'http://127.0.0.1:8545', HERALD_CHAIN_ID_ETHEREUM_GOERLI: '31337' });
    expect(config.chains[0]).toMatchObject({ blockchain: 'ethereum', network: 'goerli', chainId: '31337' });
    expect(() => loadConfig({}, { HERALD_RPC_ETHEREUM_GOERLI: 'http://127.0.0.1:8545', HERALD_CHAIN_ID_ETHEREUM_GOERLI: 'regtest' })).toThrow(
      /chains\/0\/chainId: an EVM chain id is a number/,
    );
    expect(() => loadConfig({}, { HERALD_RPC_LITECOIN_TESTNET: 'http://127.0.0.1:9332', HERALD_CHAIN_ID_LITECOIN_TESTNET: '5' })).toThrow(
      /getblockchaininfo.chain says it/,
    );
  });
});

describe('herald refuses to follow a node on another chain, and follows it once it is declared', () => {
  let node: EvmNode;
  let t: TestApp | undefined;
  afterAll(async () => {
    await t?.close();
    await node?.close();
  });

  const chainItem = async (app: TestApp, key: string) =>
    (await app.request('GET', '/blockchain-events/status', { key })).body.data.items.find(
      (i: { blockchain: string; network: string }) => i.blockchain === 'ethereum' && i.network === 'goerli',
    );

  it('a local EVM node (chain id 31337) behind ethereum/goerli: not followed, the status says why; with chainId 31337 it is', { timeout: 60_000 }, async () => {
    node = await startEvmNode({ chainId: 31337, automine: true });
    const head = await node.mine(3);
    const chain = { blockchain: 'ethereum', network: 'goerli', rpcUrl: node.url, pollIntervalMs: 50, concurrency: 2, requestTimeoutMs: 5000 } as const;
    t = await startTestApp({ chains: [chain] });
    const c = await t.customer();
    const refused = await until('the node judged', async () => {
      const item = await chainItem(t as TestApp, c.key);
      return item?.nodes?.[0]?.reason ? item : undefined;
    });
    expect(refused.nodes[0]).toMatchObject({
      eligible: false,
      reason: "wrong chain: eth_chainId is 31337, not 5 (ethereum goerli's; a development or test node is declared with the chain's chainId setting)",
    });
    // Nothing was read from it: no block processed, however long it runs.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await chainItem(t, c.key)).toMatchObject({ state: 'starting', processedHeight: null });
    await t.close();

    t = await startTestApp({ chains: [{ ...chain, chainId: 31337 }] });
    const c2 = await t.customer();
    const followed = await until('the chain followed', async () => {
      const item = await chainItem(t as TestApp, c2.key);
      return item?.processedHeight >= head ? item : undefined;
    });
    expect(followed.nodes[0]).toMatchObject({ eligible: true, reason: null });
  });
});
