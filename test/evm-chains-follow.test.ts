/**
 * binance-smart-chain and ethereum-classic followed end to end on the real EVM test node (EDR), through the
 * shared follow scenarios (test/support/follow-scenarios.ts): the node runs with the chain id of the test
 * network herald is told it follows (BSC testnet 97, Mordor 63), and herald is configured with that chain.
 * ethereum/goerli has its own, fuller suite (test/evm-follow.test.ts); here is what differs per chain
 * (docs/reference/events/README.md#token-objects; docs/reference/api.md#settled-callback-contents): the unit of coin callbacks (BNB, ETC), the fungible token type
 * (BEP-20 on BSC, ERC-20 on ETC; NFTs are ERC-721 on both) and the network names, over a representative
 * subset: coins to and from an address, coins each-confirmation, block events with a reorganisation, a
 * transaction mined again after one, fungible and NFT transfers (confirmed and each-confirmation), the NFT
 * in the wallet's all-assets, internal transfers (address events, each-confirmation, the amount event), and the Callback Data reads (no `transactionStatus` on these two chains,
 * docs/reference/api.md#callback-data-reads). ethereum/goerli runs the coin each-confirmation scenario here, which its own suite lacks.
 *
 * The same scenarios run on a second real EVM node, Anvil (test/support/anvil-node.ts), as ethereum/goerli:
 * Anvil serves eth_getBlockReceipts and trace_block (and debug_traceBlockByNumber), as production nodes do
 * and EDR does not, so herald takes its block-level path there (checked by counting the requests herald sent,
 * through a proxy), and its per-transaction fallback on EDR.
 */
import { describe, expect, it } from 'vitest';
import { CHAINS } from '../src/domain/chains.ts';
import { anvil } from './support/anvil-node.ts';
import { GOERLI_TEST_CHAIN, startEvmDriver } from './support/evm-driver.ts';
import { type FaultProxy, startFaultProxy } from './support/fault-proxy.ts';
import { describeFollowScenarios, SCENARIOS as EVERY_SCENARIO, type ScenarioName } from './support/follow-scenarios.ts';
import { describeWithRealNode } from './support/real-node.ts';

const SCENARIOS: ScenarioName[] = ['mined', 'reorg', 'blocks', 'coins', 'coins-each', 'tokens', 'internal', 'reads'];
/** docs/reference/api.md#callback-data-reads: the EVM block keys, and the transaction keys of ethereum-classic and BSC (ethereum's without `transactionStatus`). */
const READS = {
  block: ['difficulty', 'extraData', 'gasLimit', 'gasUsed', 'minedInSeconds', 'nonce', 'sha3Uncles', 'size', 'totalDifficulty', 'uncles'],
  transaction: ['contract', 'gasLimit', 'gasPrice', 'gasUsed', 'inputData', 'nonce'],
};

describe('the chains as herald names them', () => {
  it('BSC and ETC: their test networks and units (the units the scenarios below expect of the callbacks)', () => {
    expect(CHAINS['binance-smart-chain']).toMatchObject({ family: 'evm', networks: ['mainnet', 'testnet'], unit: 'BNB', decimals: 18 });
    expect(CHAINS['ethereum-classic']).toMatchObject({ family: 'evm', networks: ['mainnet', 'mordor'], unit: 'ETC', decimals: 18 });
  });
});

describeFollowScenarios(
  'binance-smart-chain/testnet on the EVM test node (chain id 97): shared follow scenarios',
  () =>
    startEvmDriver({
      blockchain: 'binance-smart-chain',
      network: 'testnet',
      chainId: 97,
      token: { name: 'Herald BEP-20 Dollar', symbol: 'HBUSD', decimals: 18, type: 'BEP-20' },
      nft: { name: 'Herald BSC Collectible', symbol: 'HBSCC' },
    }),
  { confirmations: 3, amount: 10n ** 17n, opening: 'read', unit: 'BNB', reads: READS, scenarios: SCENARIOS },
);

describeFollowScenarios(
  'ethereum-classic/mordor on the EVM test node (chain id 63): shared follow scenarios',
  () =>
    startEvmDriver({
      blockchain: 'ethereum-classic',
      network: 'mordor',
      chainId: 63,
      token: { name: 'Herald Classic Token', symbol: 'HETC', decimals: 6, type: 'ERC-20' },
      nft: { name: 'Herald Classic Collectible', symbol: 'HETCC' },
    }),
  { confirmations: 3, amount: 10n ** 17n, opening: 'read', unit: 'ETC', reads: READS, scenarios: SCENARIOS },
);

// ethereum/goerli's own suite (test/evm-follow.test.ts) has no coin each-confirmation test: the shared one here.
describeFollowScenarios('ethereum/goerli on the EVM test node (chain id 5): the shared scenario its own suite lacks', () => startEvmDriver(GOERLI_TEST_CHAIN), {
  confirmations: 3,
  amount: 10n ** 17n,
  opening: 'read',
  unit: 'ETH',
  scenarios: ['coins-each'],
});

// Anvil: every scenario (the default ones, the ledger and a restart included), herald's requests counted.
describeWithRealNode('anvil', anvil, () => {
  let proxy: FaultProxy | undefined;
  describeFollowScenarios(
    'ethereum/goerli on Anvil (block-level receipts and traces): shared follow scenarios',
    async () => {
      const driver = await startEvmDriver({
        node: 'anvil',
        ...GOERLI_TEST_CHAIN,
      });
      // Herald reads the node through a counting proxy (its newHeads WebSocket goes to Anvil directly).
      const counting = await startFaultProxy(driver.rpcUrl);
      proxy = counting;
      return {
        ...driver,
        rpcUrl: counting.url,
        close: async () => {
          await counting.close();
          await driver.close();
        },
      };
    },
    {
      confirmations: 3,
      amount: 10n ** 17n,
      opening: 'read',
      unit: 'ETH',
      reads: { block: READS.block, transaction: [...READS.transaction, 'transactionStatus'].sort() },
      scenarios: EVERY_SCENARIO,
    },
  );

  // (eth_getTransactionReceipt is asked too: a TRANSACTION_MINED subscription looks its transaction up once.)
  it('herald read Anvil block by block: eth_getBlockReceipts and trace_block, never a trace per transaction', () => {
    const requests = proxy?.requests ?? new Map<string, number>();
    expect(requests.get('eth_getBlockReceipts')).toBeGreaterThan(10);
    expect(requests.get('trace_block')).toBeGreaterThan(10);
    for (const method of ['debug_traceBlockByNumber', 'debug_traceTransaction']) expect(requests.get(method)).toBeUndefined();
  });
});
