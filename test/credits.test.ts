/** Credits: exact debits, nothing taken on errors, 402 at the boundary, no overdraft under concurrency. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findCustomerByName } from '../src/store/customers.ts';
import { SAMPLE, startTestApp, type TestApp } from './harness.ts';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const balance = async (name: string) => (await findCustomerByName(t.app.database.db, name))?.credits;
const txBody = (n: number, extra: Record<string, unknown> = {}) => ({
  data: { item: { transactionId: `0x${n.toString(16).padStart(64, '0')}`, callbackUrl: SAMPLE.callbackUrl, ...extra } },
});
const mined = '/blockchain-events/ethereum/goerli/subscriptions/transaction-mined';

describe('credits', () => {
  it('debits exactly the contract cost of each endpoint and reports it in the headers', async () => {
    const c = await t.customer({ credits: 1_000_000n });
    const steps: [string, string, unknown, bigint][] = [
      ['POST', mined, txBody(1), 1000n],
      [
        'POST',
        '/blockchain-events/ethereum/goerli/subscriptions/address-tokens-transactions-confirmed',
        { data: { item: { address: SAMPLE.evmAddress, callbackUrl: SAMPLE.callbackUrl } } },
        1000n,
      ],
      [
        'POST',
        '/blockchain-events/ethereum/goerli/subscriptions/internal-transactions-for-specific-amount',
        { data: { item: { amountHigherThan: 1, callbackUrl: SAMPLE.callbackUrl } } },
        10000n,
      ],
      ['GET', '/blockchain-events/ethereum/goerli/subscriptions', undefined, 3n], // 1 per item, 3 items
      ['GET', '/wallet-as-a-service/wallets/all-assets', undefined, 500n], // at least 500 on an empty page
    ];
    let expected = 1_000_000n;
    for (const [method, path, body, cost] of steps) {
      const r = await t.request(method, path, { key: c.key, body });
      expect(r.status, r.text).toBeLessThan(300);
      expected -= cost;
      expect(r.headers.get('x-credits-consumed')).toBe(String(cost));
      expect(r.headers.get('x-credits-available')).toBe(String(expected));
      expect(await balance(c.name)).toBe(expected);
    }
    const id = (await t.request('GET', '/blockchain-events/ethereum/goerli/subscriptions', { key: c.key })).body.data.items[0].referenceId;
    expected -= 3n;
    for (const [method, path, cost] of [
      ['GET', `/blockchain-events/subscriptions/${id}`, 1n],
      ['POST', `/blockchain-events/subscriptions/${id}/activate`, 5n],
      ['DELETE', `/blockchain-events/ethereum/goerli/subscriptions/${id}`, 1n],
    ] as const) {
      const r = await t.request(method, path, { key: c.key });
      expect(r.status).toBeLessThan(300);
      expected -= cost;
      expect(r.headers.get('x-credits-consumed')).toBe(String(cost));
    }
    expect(await balance(c.name)).toBe(expected);
  });

  it('charges all-assets 500 per wallet returned', async () => {
    const c = await t.customer({ credits: 1_000_000n });
    for (let i = 0; i < 3; i++) await t.request('POST', '/wallet-as-a-service/wallets', { key: c.key, body: { data: { item: { walletName: `w${i}` } } } });
    const before = await balance(c.name);
    const r = await t.request('GET', '/wallet-as-a-service/wallets/all-assets?limit=2', { key: c.key });
    expect(r.body.data.items).toHaveLength(2);
    expect(r.headers.get('x-credits-consumed')).toBe('1000');
    expect(await balance(c.name)).toBe((before as bigint) - 1000n);
  });

  it('takes nothing when the call fails', async () => {
    const c = await t.customer({ credits: 50_000n });
    await t.request('POST', mined, { key: c.key, body: txBody(7) });
    const before = await balance(c.name);
    const failures = [
      await t.request('POST', mined, { key: c.key, body: txBody(7) }), // duplicate
      await t.request('POST', mined, { key: c.key, body: txBody(8, { callbackUrl: 'https://unverified.example.org/' }) }),
      await t.request('POST', mined, { key: c.key, body: { data: { item: { transactionId: 'nope', callbackUrl: SAMPLE.callbackUrl } } } }),
      await t.request('GET', '/blockchain-events/subscriptions/7d9f3c52-4c8e-4a8e-9d6b-5a1f2e3d4c5b', { key: c.key }),
    ];
    for (const r of failures) expect(r.status).toBeGreaterThanOrEqual(400);
    expect(await balance(c.name)).toBe(before);
  });

  it('402 exactly at the boundary: 999 credits cannot buy a 1000-credit call, 1000 can', async () => {
    const c = await t.customer({ credits: 999n });
    const refused = await t.request('POST', mined, { key: c.key, body: txBody(1) });
    expect(refused.status).toBe(402);
    expect(refused.body.error.code).toBe('insufficient_credits');
    expect(await balance(c.name)).toBe(999n);
    expect((await t.request('GET', '/blockchain-events/ethereum/goerli/subscriptions', { key: c.key })).body.data.total).toBe(0);

    const exact = await t.customer({ credits: 1000n });
    const ok = await t.request('POST', mined, { key: exact.key, body: txBody(1) });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('x-credits-available')).toBe('0');
    expect(await balance(exact.name)).toBe(0n);
  });

  it('concurrent requests never overdraw: 50 racing creates with credits for 17 make exactly 17', async () => {
    const c = await t.customer({ credits: 17_500n });
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => t.request('POST', mined, { key: c.key, body: txBody(1000 + i) })));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(17);
    expect(statuses.filter((s) => s === 402)).toHaveLength(33);
    expect(await balance(c.name)).toBe(500n);
    const listed = await t.request('GET', '/blockchain-events/ethereum/goerli/subscriptions', { key: c.key });
    expect(listed.body.data.total).toBe(17);
  });

  it('concurrent identical creates make one subscription, not two', async () => {
    const c = await t.customer({ credits: 100_000n });
    const results = await Promise.all(Array.from({ length: 10 }, () => t.request('POST', mined, { key: c.key, body: txBody(42) })));
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    expect(results.filter((r) => r.status === 409).every((r) => r.body.error.code === 'already_exists')).toBe(true);
    expect(await balance(c.name)).toBe(99_000n);
  });

  it('concurrent creates never pass the active-subscription cap', async () => {
    const c = await t.customer({ plan: { maxActiveSubscriptions: 5 } });
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => t.request('POST', mined, { key: c.key, body: txBody(5000 + i) })));
    expect(results.filter((r) => r.status === 200)).toHaveLength(5);
    expect(results.filter((r) => r.status === 403).every((r) => r.body.error.code === 'blockchain_events_callbacks_limit_reached')).toBe(true);
  });
});

describe('billing.enabled false (single-tenant installs, docs/operations/single-tenant.md)', () => {
  let free: TestApp;
  beforeAll(async () => {
    free = await startTestApp({ billing: { enabled: false } });
  });
  afterAll(() => free.close());

  it('charges nothing, refuses nothing for credits or plan, and sends no x-credits-* header', async () => {
    // No credits at all, a plan without mainnets and a cap of one active subscription: none of it applies.
    const c = await free.customer({ credits: 0n, plan: { mainnetAllowed: false, maxActiveSubscriptions: 1 } });
    for (let n = 1; n <= 3; n++) {
      const res = await free.request('POST', '/blockchain-events/ethereum/mainnet/subscriptions/transaction-mined', { key: c.key, body: txBody(n) });
      expect(res.status, res.text).toBe(200);
      expect(res.headers.get('x-credits-consumed')).toBeNull();
      expect(res.headers.get('x-credits-available')).toBeNull();
    }
    const listed = await free.request('GET', '/blockchain-events/subscriptions', { key: c.key });
    expect(listed.status).toBe(200);
    expect(listed.body.data.items).toHaveLength(3);
    expect(listed.headers.get('x-credits-consumed')).toBeNull();
    const assets = await free.request('GET', '/wallet-as-a-service/wallets/all-assets', { key: c.key });
    expect(assets.status, assets.text).toBe(200);
    expect((await findCustomerByName(free.app.database.db, c.name))?.credits).toBe(0n);
    // The account says billing is off, and the plan limits nothing but the request rate.
    const account = await free.request('GET', '/account', { key: c.key });
    expect(account.status, account.text).toBe(200);
    expect(account.body.data.item).toMatchObject({ billingEnabled: false, plan: { mainnetAllowed: true, maxActiveSubscriptions: null } });
    // Errors stay errors (a callback URL that is not https is refused), never a 402.
    const bad = await free.request('POST', '/blockchain-events/ethereum/mainnet/subscriptions/transaction-mined', {
      key: c.key,
      body: txBody(4, { callbackUrl: 'ftp://x' }),
    });
    expect(bad.status).toBeGreaterThanOrEqual(400);
    expect(bad.status).toBeLessThan(500);
    expect(bad.status).not.toBe(402);
  });

  it('billing stays on by default: the same customer is refused (402) and charged with billing', async () => {
    const c = await t.customer({ credits: 0n });
    expect((await t.request('POST', mined, { key: c.key, body: txBody(99) })).status).toBe(402);
    const paying = await t.customer({ credits: 1000n });
    const res = await t.request('POST', mined, { key: paying.key, body: txBody(99) });
    expect(res.status, res.text).toBe(200);
    expect(res.headers.get('x-credits-available')).toBe('0');
    expect((await t.request('GET', '/account', { key: c.key })).body.data.item.billingEnabled).toBe(true);
  });
});
