/** Lists: oldest first, ties by id, pages that add up to the whole, total always the full count. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SAMPLE, startTestApp, type TestApp, type TestCustomer } from './harness.ts';

let t: TestApp;
let c: TestCustomer;
const created: string[] = [];
const wallets: string[] = [];

beforeAll(async () => {
  t = await startTestApp();
  c = await t.customer();
  for (let i = 0; i < 7; i++) {
    const r = await t.request('POST', '/blockchain-events/bitcoin/testnet/subscriptions/transaction-mined', {
      key: c.key,
      body: { data: { item: { transactionId: String(i).repeat(64), callbackUrl: SAMPLE.callbackUrl } } },
    });
    created.push(r.body.data.item.referenceId);
    const w = await t.request('POST', '/wallet-as-a-service/wallets', { key: c.key, body: { data: { item: { walletName: `wallet ${i}` } } } });
    wallets.push(w.body.data.item.walletId);
  }
});
afterAll(() => t.close());

describe.each([
  ['subscriptions', '/blockchain-events/bitcoin/testnet/subscriptions', 'referenceId', () => created],
  ['all-assets', '/wallet-as-a-service/wallets/all-assets', 'walletId', () => wallets],
])('%s pages', (_name, path, idField, expected) => {
  it('default page holds everything in creation order with limit 50 and offset 0', async () => {
    const r = await t.request('GET', path, { key: c.key });
    expect(r.body.data).toMatchObject({ limit: 50, offset: 0, total: 7 });
    expect(r.body.data.items.map((x: Record<string, string>) => x[idField])).toEqual(expected());
  });

  it('pages of 3 add up to the whole, in order', async () => {
    const seen: string[] = [];
    for (const offset of [0, 3, 6]) {
      const r = await t.request('GET', `${path}?limit=3&offset=${offset}`, { key: c.key });
      expect(r.body.data).toMatchObject({ limit: 3, offset, total: 7 });
      seen.push(...r.body.data.items.map((x: Record<string, string>) => x[idField]));
    }
    expect(seen).toEqual(expected());
  });

  it('an offset past the end is an empty page with the total', async () => {
    const r = await t.request('GET', `${path}?offset=100`, { key: c.key });
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({ limit: 50, offset: 100, total: 7, items: [] });
  });
});

it('list items carry blockchain, network, and the create fields', async () => {
  const r = await t.request('GET', '/blockchain-events/bitcoin/testnet/subscriptions?limit=1', { key: c.key });
  expect(r.body.data.items[0]).toEqual({
    referenceId: created[0],
    eventType: 'TRANSACTION_MINED',
    createdTimestamp: expect.any(Number),
    isActive: true,
    callbackUrl: SAMPLE.callbackUrl,
    callbackSecretKey: '',
    transactionId: '0'.repeat(64),
    blockchain: 'bitcoin',
    network: 'testnet',
  });
});
