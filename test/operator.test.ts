/**
 * The operator's API (docs/reference/api-overview.md "Console API"): tokens made, listed and revoked by the real CLI
 * (`herald operator-tokens`) on the test database, Bearer authentication of /operator/* (no, malformed,
 * unknown, revoked token, a customer's API key), and every operator endpoint on the services the CLI uses.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleHistory, wholeMinute } from '../src/services/history-sampler.ts';
import { tripBreaker } from '../src/store/chain-holds.ts';
import { saveCursor, stopChain } from '../src/store/chain-state.ts';
import { recordReorganisation } from '../src/store/history.ts';
import { startTestApp, type TestApp, type TestResponse } from './harness.ts';

const run = promisify(execFile);
let t: TestApp;
/** The app's log lines (info and up): operator actions are logged with the token's name. */
const log: Record<string, unknown>[] = [];

beforeAll(async () => {
  t = await startTestApp({}, { logger: pino({ level: 'info' }, { write: (line: string) => void log.push(JSON.parse(line)) }) });
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
    // This file's database holds no token before this test; a retry under CI starts from none again.
    await t.app.database.db.query('test:no-tokens', 'DELETE FROM operator_tokens');
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
    expect(whoami.body.data.item).toEqual({ name: 'alice', billingEnabled: true });

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
    // Eight runs of the CLI, each a Node.js start: about 35 s at load 14, past the default 30 s.
  }, 120_000);

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
    // Refused at once: the revoking process forgets the key itself, the others on the change announcement.
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

    // Each change is in the operator's log with the name of the token that made it.
    const actions = log
      .filter((l) => l.operator !== undefined && l.customer === 'beta-ops')
      .map(({ msg, operator, keyId, amount, credits, domain }) => ({ msg, operator, keyId, amount, credits, domain }));
    const by = { operator: 'console', keyId: undefined, amount: undefined, credits: undefined, domain: undefined };
    expect(actions).toEqual([
      { ...by, msg: 'API key created by an operator', keyId },
      { ...by, msg: 'API key revoked by an operator', keyId },
      { ...by, msg: 'API key revoked by an operator', keyId },
      { ...by, msg: 'credits added by an operator', amount: 5000, credits: '5010' },
      { ...by, msg: 'callback domain verified by an operator', domain: 'beta.example.net' },
    ]);
  });
});

describe('operator chain endpoints and the lag history', () => {
  let token: string;
  beforeAll(async () => {
    token = await newToken('chains');
  });
  const db = () => t.app.database.db;
  const block = (height: number, secondsAgo: number) => ({
    height,
    hash: `0x${height.toString(16).padStart(64, '0')}`,
    timestamp: Math.floor(Date.now() / 1000) - secondsAgo,
  });

  it('shows each chain with its state, lag, stop reason and reorganisations of the last 24 hours; reset forgets a stopped chain', async () => {
    const dash = { blockchain: 'dash', network: 'testnet' } as const;
    const doge = { blockchain: 'dogecoin', network: 'testnet' } as const;
    await db().transaction('test:cursors', async (tx) => {
      await saveCursor(tx, dash, block(100, 120), 104);
      await saveCursor(tx, doge, block(50, 30), 50);
      await stopChain(tx, doge, 'reorganisation deeper than the window of 20 blocks');
      await recordReorganisation(tx, dash, 2);
      await recordReorganisation(tx, dash, 1);
    });
    await db().query('test:old-reorg', `INSERT INTO chain_reorganisations VALUES ('dash', 'testnet', now() - interval '25 hours', 3)`);
    const res = await asOperator(token, 'GET', '/operator/chains');
    expect(res.status, res.text).toBe(200);
    const byChain = (b: string) => res.body.data.items.find((c: { blockchain: string }) => c.blockchain === b);
    expect(byChain('dash')).toMatchObject({
      network: 'testnet',
      state: 'not-configured',
      headHeight: 104,
      processedHeight: 100,
      lagBlocks: 4,
      stoppedReason: null,
      reorganisations: 2,
      nodes: [],
    });
    expect(byChain('dash').lagSeconds).toBeGreaterThanOrEqual(120);
    expect(byChain('dogecoin')).toMatchObject({ state: 'stopped', stoppedReason: 'reorganisation deeper than the window of 20 blocks', reorganisations: 0 });

    const reset = await asOperator(token, 'POST', '/operator/chains/dogecoin/testnet/reset');
    expect(reset.status, reset.text).toBe(200);
    expect(reset.body.data.item).toEqual({ blockchain: 'dogecoin', network: 'testnet', forgottenHeight: 50, pendingEventsDeleted: 0, callbacksCancelled: 0 });
    const after = await asOperator(token, 'GET', '/operator/chains');
    expect(after.body.data.items.map((c: { blockchain: string }) => c.blockchain)).not.toContain('dogecoin');
    const again = await asOperator(token, 'POST', '/operator/chains/dogecoin/testnet/reset');
    expect(again.body.data.item.forgottenHeight).toBeNull();
    for (const path of ['/operator/chains/dogecoin/goerli/reset', '/operator/chains/nocoin/testnet/reset']) {
      const bad = await asOperator(token, 'POST', path);
      expect(bad.status, path).toBe(400);
      expect(bad.body.error.code).toBe('uri_not_found');
    }
    expectInvalidToken(await t.request('POST', '/operator/chains/dash/testnet/reset'));
  });

  it('shows a chain held by the deep-reorganisation breaker with its depth and blocks; release lets it go once, as herald chains release', async () => {
    const bch = { blockchain: 'bitcoin-cash', network: 'testnet' } as const;
    const blocks = [11, 12, 13, 14].map((height) => ({ height, orphanedHash: `old${height}`, newHash: `new${height}` }));
    await db().transaction('test:held', async (tx) => {
      await saveCursor(tx, bch, block(20, 30), 20);
      const trip = {
        at: new Date().toISOString(),
        reason: 'reorganisation' as const,
        depth: 10,
        ancestorHeight: 10,
        ancestorHash: 'a10',
        blocks,
        detail: null,
      };
      await tripBreaker(tx, bch, trip, 6);
      await tripBreaker(tx, bch, trip, 6); // the same trip again: not added twice
    });
    const res = await asOperator(token, 'GET', '/operator/chains');
    expect(res.status, res.text).toBe(200);
    const held = res.body.data.items.find((c: { blockchain: string }) => c.blockchain === 'bitcoin-cash');
    expect(held).toMatchObject({
      state: 'held',
      hold: { reason: 'reorganisation', depth: 10, breakerDepth: 6, ancestorHeight: 10, ancestorHash: 'a10', blocks, trips: 1, heldCallbacks: 0 },
    });
    expect(held.hold.description).toContain('a reorganisation of 10 blocks (more than reorgBreakerDepth 6)');

    const release = await asOperator(token, 'POST', '/operator/chains/bitcoin-cash/testnet/release');
    expect(release.status, release.text).toBe(200);
    expect(release.body.data.item).toMatchObject({ blockchain: 'bitcoin-cash', network: 'testnet', released: true, callbacksReleased: 0, hold: { depth: 10 } });
    const after = await asOperator(token, 'GET', '/operator/chains');
    expect(after.body.data.items.find((c: { blockchain: string }) => c.blockchain === 'bitcoin-cash')).toMatchObject({ state: 'not-configured', hold: null });
    const again = await asOperator(token, 'POST', '/operator/chains/bitcoin-cash/testnet/release');
    expect(again.body.data.item).toEqual({ blockchain: 'bitcoin-cash', network: 'testnet', released: false, callbacksReleased: 0, hold: null });
    expect((await asOperator(token, 'POST', '/operator/chains/bitcoin-cash/goerli/release')).body.error.code).toBe('uri_not_found');
    expectInvalidToken(await t.request('POST', '/operator/chains/bitcoin-cash/testnet/release'));
  });

  it('serves one lag sample per chain per minute over the minutes asked, the first sample of a minute kept, 7 days at most', async () => {
    const zcash = { blockchain: 'zcash', network: 'testnet' } as const;
    const now = wholeMinute(new Date()).getTime();
    const MINUTE = 60_000;
    const first = block(10, 600);
    await saveCursor(db(), zcash, first, 15);
    // Eight days ago, then three minutes of the last hour: lag 5, then 3 (and a second sample of that minute, ignored), then 0.
    await sampleHistory(db(), new Date(now - 8 * 24 * 60 * MINUTE));
    expect((await db().query('test:old', "SELECT 1 FROM chain_lag_minutes WHERE blockchain = 'zcash'")).length).toBe(1);
    await sampleHistory(db(), new Date(now - 3 * MINUTE + 5000));
    await saveCursor(db(), zcash, block(12, 300), 15);
    await sampleHistory(db(), new Date(now - 2 * MINUTE + 1000));
    await saveCursor(db(), zcash, block(13, 200), 15);
    await sampleHistory(db(), new Date(now - 2 * MINUTE + 30_000));
    await saveCursor(db(), zcash, block(15, 100), 15);
    await sampleHistory(db(), new Date(now - MINUTE));
    // The sample of eight days ago was pruned by the later ones.
    expect((await db().query('test:old', "SELECT 1 FROM chain_lag_minutes WHERE blockchain = 'zcash' AND minute < now() - interval '7 days'")).length).toBe(0);
    // The chain stops being followed: no more samples (the API role's own sampler reads the cursors too).
    await asOperator(token, 'POST', '/operator/chains/zcash/testnet/reset');

    const lag = async (query: string) => {
      const res = await asOperator(token, 'GET', `/operator/chains/zcash/testnet/lag${query}`);
      expect(res.status, res.text).toBe(200);
      // A sample the app's own sampler may have taken of the current minute is not this test's.
      return res.body.data.items.filter((i: { timestamp: number }) => i.timestamp < now / 1000);
    };
    const samples = await lag('');
    expect(samples.map((i: { timestamp: number }) => i.timestamp)).toEqual([now - 3 * MINUTE, now - 2 * MINUTE, now - MINUTE].map((ms) => ms / 1000));
    expect(samples.map((i: { lagBlocks: number }) => i.lagBlocks)).toEqual([5, 3, 0]);
    // The age of the last processed block at the sample's time.
    expect(samples[0].lagSeconds).toBe(Math.round((now - 3 * MINUTE + 5000) / 1000 - first.timestamp));
    expect(samples[2].lagSeconds).toBe(0);
    // The window ends at the minute the server answers in, which on a slow machine may be a later one than
    // `now`: the last three minutes hold the samples at most three minutes back from the minute of the answer.
    let answeredIn: number;
    let lastThree: { lagBlocks: number }[];
    do {
      answeredIn = wholeMinute(new Date()).getTime();
      lastThree = await lag('?minutes=3');
    } while (wholeMinute(new Date()).getTime() !== answeredIn);
    const minutesPassed = (answeredIn - now) / MINUTE;
    expect(lastThree.map((i) => i.lagBlocks)).toEqual([3, 0].slice(minutesPassed));
    expect((await lag('?minutes=10080')).length).toBe(3);
    for (const bad of ['?minutes=0', '?minutes=10081', '?minutes=soon']) {
      const res = await asOperator(token, 'GET', `/operator/chains/zcash/testnet/lag${bad}`);
      expect(res.body.error?.code, bad).toBe('invalid_data');
    }
    expect((await asOperator(token, 'GET', '/operator/chains/zcash/testnet/lag?window=1')).body.error.code).toBe('extra_query_attributes');
  });
});
