/** Tenant isolation: customer B can neither see, list, delete nor activate A's things (404, not 403). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SAMPLE, startTestApp, type TestApp, type TestCustomer } from './harness.ts';

let t: TestApp;
let a: TestCustomer;
let b: TestCustomer;
let subscriptionId: string;
let walletId: string;

beforeAll(async () => {
  t = await startTestApp();
  a = await t.customer({ domains: ['a.example.com'] });
  b = await t.customer();
  const sub = await t.request('POST', '/blockchain-events/ethereum/goerli/subscriptions/transaction-mined', {
    key: a.key,
    body: { data: { item: { transactionId: SAMPLE.evmTx, callbackUrl: 'https://a.example.com/hooks' } } },
  });
  subscriptionId = sub.body.data.item.referenceId;
  walletId = (await t.request('POST', '/wallet-as-a-service/wallets', { key: a.key, body: { data: { item: { walletName: 'a-wallet' } } } })).body.data.item
    .walletId;
  const added = await t.request('POST', `/wallet-as-a-service/wallets/${walletId}/ethereum/goerli/addresses`, {
    key: a.key,
    body: { data: { item: { address: SAMPLE.evmAddress } } },
  });
  expect(added.status).toBe(201);
});
afterAll(() => t.close());

describe("another customer's resources do not exist for B", () => {
  it.each([
    ['GET', () => `/blockchain-events/subscriptions/${subscriptionId}`],
    ['DELETE', () => `/blockchain-events/ethereum/goerli/subscriptions/${subscriptionId}`],
    ['POST', () => `/blockchain-events/subscriptions/${subscriptionId}/activate`],
    ['GET', () => `/wallet-as-a-service/wallets/${walletId}`],
    ['DELETE', () => `/wallet-as-a-service/wallets/${walletId}/ethereum/goerli/addresses/${SAMPLE.evmAddress}`],
    ['DELETE', () => '/blockchain-events/callback-domains/a.example.com'],
  ])('%s %s is 404 resource_not_found', async (method, path) => {
    const r = await t.request(method, path(), { key: b.key });
    expect(r.status).toBe(404);
    expect(r.body.error.code).toBe('resource_not_found');
  });

  it("B cannot add an address to A's wallet", async () => {
    const r = await t.request('POST', `/wallet-as-a-service/wallets/${walletId}/ethereum/goerli/addresses`, {
      key: b.key,
      body: { data: { item: { address: '0xfb6916095ca1df60bb79ce92ce3ea74c37c5d359' } } },
    });
    expect(r.status).toBe(404);
  });

  it("B's lists hold none of A's subscriptions, wallets or domains", async () => {
    const subs = await t.request('GET', '/blockchain-events/ethereum/goerli/subscriptions', { key: b.key });
    expect(subs.body.data).toMatchObject({ total: 0, items: [] });
    const assets = await t.request('GET', '/wallet-as-a-service/wallets/all-assets', { key: b.key });
    expect(assets.body.data).toMatchObject({ total: 0, items: [] });
    const domains = await t.request('GET', '/blockchain-events/callback-domains', { key: b.key });
    expect(domains.body.data.items.map((d: { domain: string }) => d.domain)).toEqual(['hooks.example.com']); // B's own
    expect(domains.body.data.total).toBe(1);
  });

  it("A still has everything after B's attempts", async () => {
    expect((await t.request('GET', `/blockchain-events/subscriptions/${subscriptionId}`, { key: a.key })).status).toBe(200);
    const wallet = await t.request('GET', `/wallet-as-a-service/wallets/${walletId}`, { key: a.key });
    expect(wallet.status).toBe(200);
    expect(wallet.body.data.item.addresses).toHaveLength(1);
    expect(wallet.body.data.item.coins).toEqual([
      { blockchain: 'ethereum', network: 'goerli', unit: 'ETH', confirmedBalance: '0', totalReceived: '0', totalSpent: '0', openingBalance: 'pending' },
    ]);
  });

  it('a duplicate check never looks across tenants: B may subscribe to the same target', async () => {
    const r = await t.request('POST', '/blockchain-events/ethereum/goerli/subscriptions/transaction-mined', {
      key: b.key,
      body: { data: { item: { transactionId: SAMPLE.evmTx, callbackUrl: SAMPLE.callbackUrl } } },
    });
    expect(r.status).toBe(200);
  });
});
