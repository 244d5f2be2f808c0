/**
 * findTransactions (the batched findTransaction of the start-up already-mined check) against real nodes:
 * Anvil and EDR (JSON-RPC 2.0 batches of eth_getTransactionReceipt) and litecoind (Bitcoin Core's batches of
 * getrawtransaction and getblockheader). Each answer must be what findTransaction answers for the same
 * transaction, in the order asked: mined ones located, unknown and mempool ones undefined.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEvmAdapter } from '../src/chains/evm/adapter.ts';
import type { ChainAdapter } from '../src/chains/types.ts';
import { createUtxoAdapter } from '../src/chains/utxo/adapter.ts';
import { type AnvilNode, anvil, startAnvilNode } from './support/anvil-node.ts';
import { type EvmRpcNode, startEvmNode } from './support/evm-node.ts';
import { type LitecoinNode, litecoind, startLitecoinNode } from './support/litecoin-node.ts';
import { describeWithRealNode } from './support/real-node.ts';

const UNKNOWN_EVM = `0x${'99'.repeat(32)}`;
const UNKNOWN_UTXO = 'ab'.repeat(32);

async function expectSameAsOneByOne(adapter: ChainAdapter, ids: string[]) {
  const batched = await (adapter.findTransactions as NonNullable<ChainAdapter['findTransactions']>)(ids);
  const single = await Promise.all(ids.map((id) => (adapter.findTransaction as NonNullable<ChainAdapter['findTransaction']>)(id)));
  expect(batched).toEqual(single);
  return batched;
}

function evmCases(name: string, start: () => Promise<EvmRpcNode>) {
  let node: EvmRpcNode;
  beforeAll(async () => {
    node = await start();
  });
  afterAll(async () => {
    await node?.close();
  });

  it(`${name}: mined transactions located in one batch, unknown and pending ones undefined, in the order asked`, async () => {
    const [from, to] = node.accounts as unknown as [{ address: string }, { address: string }];
    await node.setAutomine(false);
    const send = () => node.request<string>('eth_sendTransaction', [{ from: from.address, to: to.address, value: '0x1' }]);
    const first = await send();
    const second = await send();
    const height = await node.mine(1);
    const third = await send();
    await node.mine(1);
    const pending = await send(); // never mined
    // Batches served: no fall back to one request per transaction (it would say so).
    const warnings: unknown[] = [];
    const logger = { warn: (...args: unknown[]) => warnings.push(args), info: () => {} };
    const adapter = createEvmAdapter({ blockchain: 'ethereum', network: 'goerli', rpcUrl: node.url, logger });
    try {
      const located = await expectSameAsOneByOne(adapter, [first, UNKNOWN_EVM, second, pending, third]);
      expect(located.map((l) => l?.height)).toEqual([height, undefined, height, undefined, height + 1]);
      expect(located[0]?.hash).toMatch(/^0x[0-9a-f]{64}$/);
      expect(await adapter.findTransactions([])).toEqual([]);
      expect(warnings).toEqual([]);
    } finally {
      await adapter.close();
    }
  });
}

describeWithRealNode('findTransactions on Anvil', anvil, () => {
  evmCases('Anvil', () => startAnvilNode() as Promise<AnvilNode>);
});

describe('findTransactions on EDR', () => {
  evmCases('EDR', () => startEvmNode());
});

describeWithRealNode('findTransactions on litecoind', litecoind, () => {
  let node: LitecoinNode;
  beforeAll(async () => {
    node = await startLitecoinNode();
  });
  afterAll(async () => {
    await node?.close();
  });

  it('getrawtransaction and getblockheader in one batch each: mined located, unknown and mempool ones undefined', async () => {
    const address = await node.rpc<string>('getnewaddress');
    const first = await node.rpc<string>('sendtoaddress', address, 1);
    const second = await node.rpc<string>('sendtoaddress', address, 1);
    const height = await node.mine(1);
    const third = await node.rpc<string>('sendtoaddress', address, 1);
    await node.mine(1);
    const inMempool = await node.rpc<string>('sendtoaddress', address, 1);
    const { user, password } = node.credentials;
    const adapter = createUtxoAdapter({ blockchain: 'litecoin', network: 'testnet', rpcUrl: node.url, auth: { user, password } });
    try {
      const located = await expectSameAsOneByOne(adapter, [first, UNKNOWN_UTXO, second, inMempool, third, first]);
      expect(located.map((l) => l?.height)).toEqual([height, undefined, height, undefined, height + 1, height]);
      expect(located[0]?.hash).toBe(await node.rpc<string>('getblockhash', height));
    } finally {
      await adapter.close();
    }
  });
});
