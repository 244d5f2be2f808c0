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
    expectInvalidToken(await t.request('GET', '/operator/whoami', { key: customer.key }));
    expectInvalidToken(await asOperator(customer.key, 'GET', '/operator/whoami'));
    // And an operator token is no API key.
    const token = await newToken('bob');
    const asKey = await t.request('GET', '/account', { key: token });
    expect(asKey.body.error.code).toBe('invalid_api_key');
  });
});
