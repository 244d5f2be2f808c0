/**
 * The Callback Data reads against a REAL Bitcoin-family node: litecoind 0.21 in regtest, as herald's
 * litecoin/testnet. The same checks as on the fake nodes (test/support/callback-data-checks.ts), the
 * litecoin spelling `strippedsize`, and a second litecoind started without a transaction index, whose
 * transaction reads answer 404 saying what the operator can change, while its block reads still work.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './harness.ts';
import { checkUtxoReads } from './support/callback-data-checks.ts';
import { type LitecoinDriver, litecoind, startLitecoinDriver } from './support/litecoin-node.ts';
import { describeWithRealNode } from './support/real-node.ts';

describeWithRealNode('Callback Data reads on a real litecoind (regtest)', litecoind, () => {
  let d: LitecoinDriver;
  let t: TestApp;

  beforeAll(async () => {
    d = await startLitecoinDriver({ fundingCoins: 10 });
    // The API role only: the reads need no chain following.
    t = await startTestApp({
      roles: ['api'],
      chains: [
        { blockchain: d.blockchain, network: d.network, rpcUrl: d.rpcUrl, ...d.chainConfig, pollIntervalMs: 1000, concurrency: 4, requestTimeoutMs: 10_000 },
      ],
    });
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    await d?.close();
  });

  it('blocks by height and hash, transactions with senders, fee and spent outputs', async () => {
    const c = await t.customer();
    const { hash } = await checkUtxoReads(t, c, d, 10_000_000n, (method, params) => d.node.rpc(method, ...params));
    const block = await t.request('GET', `/blockchain-events/litecoin/testnet/blocks/hash/${hash}`, { key: c.key });
    expect(block.body.data.item.blockchainSpecific.strippedsize).toBeGreaterThan(0);
    expect(block.body.data.item.blockchainSpecific).not.toHaveProperty('strippedSize');
  });

  it('a node without -txindex: transaction reads say what to change; block reads work', async () => {
    const bare = await startLitecoinDriver({ fundingCoins: 2, args: ['-txindex=0'] });
    const app = await startTestApp({
      roles: ['api'],
      chains: [
        {
          blockchain: bare.blockchain,
          network: bare.network,
          rpcUrl: bare.rpcUrl,
          ...bare.chainConfig,
          pollIntervalMs: 1000,
          concurrency: 4,
          requestTimeoutMs: 10_000,
        },
      ],
    });
    try {
      const c = await app.customer({ credits: 10_000n });
      const txid = await bare.send(await bare.newAddress(), 1_000_000n);
      const height = await bare.mine(1);
      const res = await app.request('GET', `/blockchain-events/litecoin/testnet/transactions/${txid}`, { key: c.key });
      expect(`${res.status} ${res.body.error?.code}`).toBe('404 resource_not_found');
      expect(res.body.error.message).toMatch(/no transaction index.*-txindex=1/);
      expect(res.text).not.toContain('127.0.0.1');
      const block = await app.request('GET', `/blockchain-events/litecoin/testnet/blocks/height/${height}`, { key: c.key });
      expect(block.status, block.text).toBe(200);
      expect(block.body.data.item.transactionsCount).toBe(2);
      expect(block.headers.get('x-credits-available')).toBe('9500');
    } finally {
      await app.close();
      await bare.close();
    }
  }, 120_000);
});
