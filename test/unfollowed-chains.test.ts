/**
 * Subscriptions on chains this installation follows no node of (docs/reference/chains.md "Chains without a node"): refused by
 * default with 409 invalid_data naming the chain (single and bulk creates); accepted with
 * subscriptions.allowUnfollowedChains, and then listed by GET /blockchain-events/status as no-node. A chain an
 * ingest process elsewhere reports nodes of (chain_nodes) counts as followed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChainConfig } from '../src/config/config.ts';
import { createOperatorToken } from '../src/store/operator-tokens.ts';
import { SAMPLE, startTestApp, type TestApp, type TestCustomer } from './harness.ts';

// Followed: a litecoin testnet node (nothing has to answer there for the creates).
const FOLLOWED: ChainConfig[] = [
  { blockchain: 'litecoin', network: 'testnet', rpcUrl: 'http://127.0.0.1:9', pollIntervalMs: 1000, concurrency: 1, requestTimeoutMs: 1000 },
];
const blockMined = (chain: string) => `/blockchain-events/${chain}/subscriptions/block-mined`;
const body = { context: 'c1', data: { item: { callbackUrl: SAMPLE.callbackUrl } } };

async function statusOf(t: TestApp, key: string, blockchain: string, network: string) {
  const res = await t.request('GET', '/blockchain-events/status', { key });
  expect(res.status).toBe(200);
  return res.body.data.items.find((i: { blockchain: string; network: string }) => i.blockchain === blockchain && i.network === network);
}

describe('refused by default', () => {
  let t: TestApp;
  let c: TestCustomer;
  beforeAll(async () => {
    t = await startTestApp({ chains: FOLLOWED, subscriptions: { allowUnfollowedChains: false } });
    c = await t.customer();
  });
  afterAll(async () => t?.close());

  it('a create on a chain without a node answers 409 invalid_data naming the chain and what to do; nothing is charged or stored', async () => {
    const before = (await t.request('GET', '/account', { key: c.key })).body;
    const res = await t.request('POST', blockMined('bitcoin/testnet'), { key: c.key, body });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('invalid_data');
    expect(res.body.error.message).toContain('follows no bitcoin testnet node');
    expect(res.body.error.message).toContain('the operator has to add a bitcoin testnet node');
    expect(res.body.error.details).toEqual([{ attribute: 'network', message: res.body.error.message }]);
    const list = await t.request('GET', '/blockchain-events/bitcoin/testnet/subscriptions', { key: c.key });
    expect(list.body.data.total).toBe(0);
    const after = (await t.request('GET', '/account', { key: c.key })).body;
    expect(after.data.item.credits).toBe(before.data.item.credits);
  });

  it('the bulk create is refused whole, the same way', async () => {
    const res = await t.request('POST', '/blockchain-events/bitcoin/testnet/subscriptions/transaction-mined/bulk', {
      key: c.key,
      body: { data: { items: [{ transactionId: SAMPLE.btcTx, callbackUrl: SAMPLE.callbackUrl }] } },
    });
    expect(res.status).toBe(409);
    expect(res.body.error).toMatchObject({ code: 'invalid_data' });
    expect(res.body.error.message).toContain('follows no bitcoin testnet node');
  });

  it('a chain of the configuration is accepted', async () => {
    expect((await t.request('POST', blockMined('litecoin/testnet'), { key: c.key, body })).status).toBe(200);
  });

  it('a chain whose nodes an ingest process elsewhere checked lately is followed (an API process without the node URLs)', async () => {
    const db = t.app.database.db;
    const insert = (checkedAt: Date) =>
      db.query(
        'test:chain-node',
        `INSERT INTO chain_nodes (blockchain, network, node, eligible, reason, head_height, head_hash, lag_blocks, error_rate, latency_ms, checked_at, changed_at)
         VALUES ('dogecoin', 'testnet', 'http://dogecoind:44555/', true, NULL, 10, 'h10', 0, 0, 1, $1, $1)
         ON CONFLICT (blockchain, network, node) DO UPDATE SET checked_at = EXCLUDED.checked_at`,
        [checkedAt],
      );
    await insert(new Date(Date.now() - 3600_000)); // an hour ago: not followed any more
    expect((await t.request('POST', blockMined('dogecoin/testnet'), { key: c.key, body })).status).toBe(409);
    await insert(new Date());
    expect((await t.request('POST', blockMined('dogecoin/testnet'), { key: c.key, body })).status).toBe(200);
  });
});

describe('subscriptions.allowUnfollowedChains: true', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ chains: FOLLOWED, subscriptions: { allowUnfollowedChains: true } });
  });
  afterAll(async () => t?.close());

  it('accepts them, and the status lists the chain as no-node, to the customers who have subscriptions there', async () => {
    const [c, other] = [await t.customer(), await t.customer()];
    expect((await t.request('POST', blockMined('bitcoin/testnet'), { key: c.key, body })).status).toBe(200);
    expect(
      (await t.request('POST', blockMined('bitcoin/testnet'), { key: c.key, body: { data: { item: { callbackUrl: `${SAMPLE.callbackUrl}/2` } } } })).status,
    ).toBe(200);
    expect(await statusOf(t, c.key, 'bitcoin', 'testnet')).toMatchObject({
      state: 'no-node',
      processedHeight: null,
      nodes: [],
      stopReason: 'no node follows this chain: its 2 active subscriptions send no callbacks until the operator adds one',
    });
    expect(await statusOf(t, other.key, 'bitcoin', 'testnet')).toBeUndefined();
    // The operator's view (the console's chains page) lists it too, with every customer's subscriptions.
    const token = (await createOperatorToken(t.app.database.db, 'ops')) as { token: string };
    const chains = await t.request('GET', '/operator/chains', { headers: { authorization: `Bearer ${token.token}` } });
    expect(chains.body.data.items.find((i: { blockchain: string }) => i.blockchain === 'bitcoin')).toMatchObject({
      network: 'testnet',
      state: 'no-node',
      stoppedReason: 'no node follows this chain: its 2 active subscriptions send no callbacks until the operator adds one',
    });
    // The followed chain is not no-node, whatever its subscriptions.
    expect((await t.request('POST', blockMined('litecoin/testnet'), { key: c.key, body })).status).toBe(200);
    expect((await statusOf(t, c.key, 'litecoin', 'testnet')).state).not.toBe('no-node');
  });
});
