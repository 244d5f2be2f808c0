/**
 * The operator's API (README "Console API"): tokens made, listed and revoked by the real CLI
 * (`herald operator-tokens`) on the test database, Bearer authentication of /operator/* (no, malformed,
 * unknown, revoked token, a customer's API key), and every operator endpoint on the services the CLI uses.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, type TestResponse } from './harness.ts';

const run = promisify(execFile);
let t: TestApp;

beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

/** Runs the real `herald` program on the test app's database. */
async function herald(...args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  const env = { ...process.env, DATABASE_URL: t.config.databaseUrl as string, HERALD_LOG_LEVEL: 'warn' };
  try {
    const { stdout, stderr } = await run('node', ['bin/herald.js', ...args], { env });
    return { stdout, stderr, code: 0 };
  } catch (error) {
    const e = error as { stdout: string; stderr: string; code: number };
    return { stdout: e.stdout, stderr: e.stderr, code: e.code };
  }
}

async function newToken(name: string): Promise<string> {
  const made = await herald('operator-tokens', 'create', '--name', name);
  expect(made.code, made.stderr).toBe(0);
  return made.stdout.trim();
}

const asOperator = (token: string, method: string, path: string, body?: unknown): Promise<TestResponse> =>
  t.request(method, path, { headers: { authorization: `Bearer ${token}` }, body });

function expectInvalidToken(res: TestResponse): void {
  expect(res.status, res.text).toBe(401);
  expect(res.body.error.code).toBe('invalid_operator_token');
  expect(res.body.error.message).toMatch(/operator-tokens create/);
  expect(res.body.requestId).toMatch(/^[0-9a-f]{24}$/);
}

describe('operator tokens', () => {
  it('are made once, listed, and revoked by name through the CLI; revoked ones stop working at once', async () => {
    const token = await newToken('alice');
    expect(token).toMatch(/^hop_[A-Za-z0-9_-]{43}$/);
    // Stored hashed: the token itself is nowhere in the database.
    const stored = await t.app.database.db.query<{ token_hash: Buffer; token_prefix: string }>(
      'test:tokens',
      'SELECT token_hash, token_prefix FROM operator_tokens',
    );
    expect(stored).toHaveLength(1);
    expect(stored[0]?.token_hash.length).toBe(32);
    expect(token.startsWith(stored[0]?.token_prefix as string)).toBe(true);

    const whoami = await asOperator(token, 'GET', '/operator/whoami');
    expect(whoami.status, whoami.text).toBe(200);
    expect(whoami.body.data.item).toEqual({ name: 'alice' });

    const twice = await herald('operator-tokens', 'create', '--name', 'alice');
    expect(twice.code).not.toBe(0);
    expect(twice.stderr).toMatch(/active operator token named 'alice' exists/);

    const listed = await herald('operator-tokens', 'list');
    expect(listed.stdout).toMatch(new RegExp(`^alice ${token.slice(0, 10)}\\.\\.\\. created \\S+ active$`, 'm'));
    expect(listed.stdout).not.toContain(token);

    const revoked = await herald('operator-tokens', 'revoke', '--name', 'alice');
    expect(revoked.code, revoked.stderr).toBe(0);
    expectInvalidToken(await asOperator(token, 'GET', '/operator/whoami'));
    expect((await herald('operator-tokens', 'list')).stdout).toMatch(/^alice \S+\.\.\. created \S+ revoked \S+$/m);
    expect((await herald('operator-tokens', 'revoke', '--name', 'alice')).stderr).toMatch(/No active operator token named 'alice'/);
    // The name is free again.
    const again = await newToken('alice');
    expect((await asOperator(again, 'GET', '/operator/whoami')).status).toBe(200);
  });

  it('answers 401 invalid_operator_token without a token, with a malformed or unknown one, and to a customer API key', async () => {
    const customer = await t.customer();
    expectInvalidToken(await t.request('GET', '/operator/whoami'));
    expectInvalidToken(await t.request('GET', '/operator/whoami', { headers: { authorization: 'Basic YWxpY2U6c2VjcmV0' } }));
    expectInvalidToken(await t.request('GET', '/operator/whoami', { headers: { authorization: 'Bearer' } }));
    expectInvalidToken(await asOperator('hop_unknown', 'GET', '/operator/whoami'));
    expectInvalidToken(await asOperator('x'.repeat(5000), 'GET', '/operator/whoami'));
    // A customer's key opens none of the operator routes, whether as x-api-key or as a Bearer token.
    expectInvalidToken(await t.request('GET', '/operator/customers', { key: customer.key }));
    expectInvalidToken(await asOperator(customer.key, 'POST', '/operator/customers/x/keys'));
    // And an operator token is no API key.
    const token = await newToken('bob');
    const asKey = await t.request('GET', '/account', { key: token });
    expect(asKey.body.error.code).toBe('invalid_api_key');
  });
});

describe('operator customer endpoints', () => {
  let token: string;
  beforeAll(async () => {
    token = await newToken('console');
  });

  it('lists customers and shows one with its keys and domains', async () => {
    const a = await t.customer({ name: 'acme-ops', credits: 1234n, plan: { mainnetAllowed: false, maxActiveSubscriptions: 5, requestsPerSecond: 7 } });
    await t.request('POST', '/blockchain-events/ethereum/goerli/subscriptions/block-mined', {
      key: a.key,
      body: { data: { item: { callbackUrl: 'https://hooks.example.com/b' } } },
    });
    const list = await asOperator(token, 'GET', '/operator/customers?limit=50');
    expect(list.status, list.text).toBe(200);
    expect(list.headers.get('x-credits-consumed')).toBe('0');
    const row = list.body.data.items.find((c: { name: string }) => c.name === 'acme-ops');
    const blockMined = t.config.costs.blockMined;
    expect(row).toEqual({
      name: 'acme-ops',
      plan: { mainnetAllowed: false, maxActiveSubscriptions: 5, requestsPerSecond: 7 },
      credits: 1234 - blockMined,
      activeSubscriptions: 1,
      keys: 1,
    });
    expect(list.body.data.total).toBe(list.body.data.items.length);
    const names = list.body.data.items.map((c: { name: string }) => c.name);
    expect(names).toEqual([...names].sort());
    const paged = await asOperator(token, 'GET', '/operator/customers?limit=1&offset=1');
    expect(paged.body.data.items).toHaveLength(1);
    expect((await asOperator(token, 'GET', '/operator/customers?limit=500')).body.error.code).toBe('limit_greater_than_allowed');

    const one = await asOperator(token, 'GET', '/operator/customers/acme-ops');
    expect(one.status, one.text).toBe(200);
    const item = one.body.data.item;
    expect(item).toMatchObject({ name: 'acme-ops', credits: 1234 - blockMined, activeSubscriptions: 1 });
    expect(item.keys).toEqual([{ keyId: expect.any(String), prefix: a.key.slice(0, 10), createdTimestamp: expect.any(Number), revokedTimestamp: null }]);
    expect(item.domains).toEqual([{ domain: 'hooks.example.com', verified: true, verifiedTimestamp: expect.any(Number) }]);
    const missing = await asOperator(token, 'GET', '/operator/customers/nobody');
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('resource_not_found');
  });

  it('creates and revokes keys, adds credits and marks a domain verified; the customer sees each change at once', async () => {
    const c = await t.customer({ name: 'beta-ops', credits: 10n, domains: [] });
    const made = await asOperator(token, 'POST', '/operator/customers/beta-ops/keys');
    expect(made.status, made.text).toBe(201);
    const { keyId, apiKey } = made.body.data.item;
    expect(apiKey).toMatch(/^hk_/);
    expect((await t.request('GET', '/account', { key: apiKey })).body.data.item.customerName).toBe('beta-ops');

    const revoked = await asOperator(token, 'POST', `/operator/customers/beta-ops/keys/${keyId}/revoke`);
    expect(revoked.status, revoked.text).toBe(200);
    expect(revoked.body.data.item).toEqual({ keyId, revokedTimestamp: expect.any(Number) });
    // The key cache forgets at once (the change is announced): the next call is refused.
    const refused = await t.request('GET', '/account', { key: apiKey });
    expect(refused.body.error.code).toBe('invalid_api_key');
    const again = await asOperator(token, 'POST', `/operator/customers/beta-ops/keys/${keyId}/revoke`);
    expect(again.body.data.item.revokedTimestamp).toBe(revoked.body.data.item.revokedTimestamp);
    for (const bad of ['999999', 'abc']) {
      const res = await asOperator(token, 'POST', `/operator/customers/beta-ops/keys/${bad}/revoke`);
      expect(res.status, bad).toBe(404);
    }
    // Another customer's key id is not this customer's.
    const other = await asOperator(token, 'GET', '/operator/customers/acme-ops');
    const otherKey = other.body.data.item.keys[0].keyId;
    expect((await asOperator(token, 'POST', `/operator/customers/beta-ops/keys/${otherKey}/revoke`)).status).toBe(404);

    const credited = await asOperator(token, 'POST', '/operator/customers/beta-ops/credits', { data: { item: { amount: 5000 } } });
    expect(credited.status, credited.text).toBe(200);
    expect(credited.body.data.item).toEqual({ credits: 5010 });
    expect((await t.request('GET', '/account', { key: c.key })).body.data.item.credits).toBe(5010);
    for (const [body, code] of [
      [{ data: { item: { amount: 0 } } }, 'invalid_data'],
      [{ data: { item: { amount: 'lots' } } }, 'invalid_data'],
      [{ data: { item: {} } }, 'missing_required_attributes'],
      [{ data: { item: { amount: 1, note: 'x' } } }, 'extra_body_attributes'],
      [{ amount: 1 }, 'invalid_request_body_structure'],
    ] as const) {
      const res = await asOperator(token, 'POST', '/operator/customers/beta-ops/credits', body);
      expect(res.body.error?.code, JSON.stringify(body)).toBe(code);
    }
    expect((await t.request('POST', '/operator/customers/beta-ops/credits', { headers: { authorization: `Bearer ${token}` } })).body.error.code).toBe(
      'missing_request_body',
    );

    // The customer cannot subscribe to an unverified host; the operator verifies it; now it can.
    const subscribe = () =>
      t.request('POST', '/blockchain-events/ethereum/goerli/subscriptions/block-mined', {
        key: c.key,
        body: { data: { item: { callbackUrl: 'https://beta.example.net/cb' } } },
      });
    expect((await subscribe()).body.error.code).toBe('callback_url_not_verified');
    const verified = await asOperator(token, 'POST', '/operator/customers/beta-ops/domains/beta.example.net/verify');
    expect(verified.status, verified.text).toBe(200);
    expect(verified.body.data.item).toEqual({ domain: 'beta.example.net', verified: true });
    expect((await subscribe()).status).toBe(200);
    const detail = await asOperator(token, 'GET', '/operator/customers/beta-ops');
    expect(detail.body.data.item.domains).toEqual([{ domain: 'beta.example.net', verified: true, verifiedTimestamp: expect.any(Number) }]);
    const badHost = await asOperator(token, 'POST', '/operator/customers/beta-ops/domains/not%20a%20host/verify');
    expect(badHost.body.error.code).toBe('invalid_data');
    expect((await asOperator(token, 'POST', '/operator/customers/nobody/domains/x.example/verify')).status).toBe(404);
  });
});
