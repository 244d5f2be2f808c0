/**
 * The program as a newcomer runs it: `herald serve` on a new data directory (first key printed once),
 * the operator commands while the server runs and while it does not, graceful stop on SIGTERM, and a
 * restart that finds everything written before.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../src/store/embedded.ts';

const run = promisify(execFile);
const dataDir = mkdtempSync(join(tmpdir(), 'herald-cli-'));
// No chain is followed here: subscriptions are accepted all the same (docs/reference/chains.md "Chains without a node").
const env = { ...process.env, DATABASE_URL: '', HERALD_LOG_LEVEL: 'warn', HERALD_SUBSCRIPTIONS_ALLOW_UNFOLLOWED_CHAINS: 'true' };
const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
const herald = (...args: string[]) => run('node', ['bin/herald.js', ...args, '--data-dir', dataDir], { env });

interface Server {
  child: ChildProcess;
  url: string;
  stdout: () => string;
}

async function startServer(moreEnv: Record<string, string> = {}): Promise<Server> {
  const port = await freePort();
  // Port and data directory from the environment: a flag's absence must leave them to HERALD_PORT and
  // HERALD_DATA_DIR (other tests give --port).
  const child = spawn('node', ['bin/herald.js', 'serve'], { env: { ...env, HERALD_PORT: String(port), HERALD_DATA_DIR: dataDir, ...moreEnv } });
  let out = '';
  child.stdout?.on('data', (chunk) => {
    out += chunk;
  });
  child.stderr?.on('data', (chunk) => {
    out += chunk;
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server exited early: ${out}`);
    const ready = await fetch(`${url}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) return { child, url, stdout: () => out };
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`server not ready: ${out}`);
}

async function stop(server: Server): Promise<number | null> {
  const exited = new Promise<number | null>((done) => server.child.once('exit', (code) => done(code)));
  server.child.kill('SIGTERM');
  return await exited;
}

const call = (server: Server, key: string, method: string, path: string, body?: unknown) =>
  fetch(`${server.url}${path}`, {
    method,
    headers: { 'x-api-key': key, ...(body !== undefined && { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

describe('herald on a new data directory', () => {
  let firstKey = '';
  let acmeKey = '';
  let subscriptionId = '';

  it('prints one API key on the very first start and serves with it', async () => {
    const server = await startServer();
    const match = server.stdout().match(/hk_[A-Za-z0-9_-]{43}/);
    expect(match).not.toBeNull();
    firstKey = match?.[0] ?? '';
    const r = await call(server, firstKey, 'GET', '/wallet-as-a-service/wallets/all-assets');
    expect(r.status).toBe(200);
    expect(await (await fetch(`${server.url}/healthz`)).json()).toEqual({ status: 'ok', version });

    // Operator commands while the server runs: they share its embedded database.
    await herald('customers', 'create', '--name', 'acme', '--credits', '50000', '--max-subscriptions', '10');
    acmeKey = (await herald('keys', 'create', '--customer', 'acme')).stdout.trim();
    expect(acmeKey).toMatch(/^hk_/);
    await herald('domains', 'add', '--customer', 'acme', '--domain', 'hooks.acme.example', '--verified');
    await herald('credits', 'add', '--customer', 'acme', '--amount', '1000');
    const created = await call(server, acmeKey, 'POST', '/blockchain-events/ethereum/goerli/subscriptions/transaction-mined', {
      data: { item: { transactionId: `0x${'1'.repeat(64)}`, callbackUrl: 'https://hooks.acme.example/cb' } },
    });
    expect(created.status).toBe(200);
    expect(created.headers.get('x-credits-available')).toBe('50000');
    subscriptionId = ((await created.json()) as { data: { item: { referenceId: string } } }).data.item.referenceId;

    expect(await stop(server)).toBe(0);
    // The embedded PostgreSQL was stopped with the server.
    expect(existsSync(join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);
  });

  it('keeps everything across a restart and prints no new key; the ready line names the version', async () => {
    const server = await startServer({ HERALD_LOG_LEVEL: 'info' });
    expect(server.stdout()).not.toMatch(/hk_/);
    const ready = server
      .stdout()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { msg: string; version?: string })
      .find((line) => line.msg === 'herald is ready');
    expect(ready?.version).toBe(version);
    const r = await call(server, acmeKey, 'GET', `/blockchain-events/subscriptions/${subscriptionId}`);
    expect(r.status).toBe(200);
    expect(((await r.json()) as { data: { item: { callbackUrl: string } } }).data.item.callbackUrl).toBe('https://hooks.acme.example/cb');
    expect((await call(server, firstKey, 'GET', '/blockchain-events/callback-domains')).status).toBe(200);

    // Revocation takes effect at once, from another process.
    const keys = (await herald('customers', 'show', '--name', 'acme')).stdout;
    const prefix = keys.match(/key \d+ (hk_\S{7})\.\.\. active/)?.[1] ?? '';
    await herald('keys', 'revoke', '--customer', 'acme', '--key', prefix);
    expect((await call(server, acmeKey, 'GET', `/blockchain-events/subscriptions/${subscriptionId}`)).status).toBe(401);
    expect(await stop(server)).toBe(0);
  });

  it('finishes requests in flight on SIGTERM', async () => {
    const server = await startServer();
    const inFlight = Array.from({ length: 80 }, () => call(server, firstKey, 'GET', '/wallet-as-a-service/wallets/all-assets').then((r) => r.status));
    await Promise.race(inFlight); // the server is answering them: the others are in flight now
    const exited = stop(server);
    const statuses = await Promise.allSettled(inFlight);
    expect(await exited).toBe(0);
    // Every request the server accepted got its answer; none was cut off half-way.
    for (const s of statuses) if (s.status === 'fulfilled') expect([200, 503]).toContain(s.value);
    expect(statuses.some((s) => s.status === 'fulfilled' && s.value === 200)).toBe(true);
  });

  it('after a SIGKILL, the next start adopts the orphaned database server and stops it on exit', async () => {
    const killed = await startServer();
    const gone = new Promise((done) => killed.child.once('exit', done));
    killed.child.kill('SIGKILL');
    await gone;
    expect(existsSync(join(dataDir, 'postgres', 'postmaster.pid'))).toBe(true); // the server outlived herald
    const next = await startServer();
    expect((await call(next, firstKey, 'GET', '/wallet-as-a-service/wallets/all-assets')).status).toBe(200);
    expect(await stop(next)).toBe(0);
    expect(existsSync(join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);
  });

  it('runs operator commands with no server running, and migrate reports an up-to-date database', async () => {
    const out = await herald('customers', 'create', '--name', 'offline', '--no-mainnet');
    expect(out.stdout).toContain("created customer 'offline'");
    expect(out.stdout).toContain('mainnet no');
    expect((await herald('migrate')).stdout).toContain('up to date');
    expect(existsSync(join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);
  });

  it("sets, shows and removes a customer's own allow-list of non-public networks, and explains a malformed one", async () => {
    const set = await herald('customers', 'update', '--name', 'offline', '--allow-networks', '10.1.0.0/16, fd00:1::/64,192.0.2.7');
    expect(set.stdout).toContain('allowed non-public networks: 10.1.0.0/16, fd00:1::/64, 192.0.2.7/32 (plus delivery.allowNetworks)');
    expect((await herald('customers', 'show', '--name', 'offline')).stdout).toContain('allowed non-public networks: 10.1.0.0/16, fd00:1::/64, 192.0.2.7/32');
    await expect(herald('customers', 'update', '--name', 'offline', '--allow-networks', '10.2.0.0/16,10.0.0.0/33')).rejects.toMatchObject({
      stderr: expect.stringContaining("'10.0.0.0/33' is not a network: the prefix must be 0..32 for IPv4"),
    });
    // Refused as a whole: the list is still the one set above.
    expect((await herald('customers', 'show', '--name', 'offline')).stdout).toContain('allowed non-public networks: 10.1.0.0/16, fd00:1::/64, 192.0.2.7/32');
    expect((await herald('customers', 'update', '--name', 'offline', '--allow-networks', '')).stdout).toContain('allowed non-public networks: none of its own');
    expect((await herald('customers', 'show', '--name', 'offline')).stdout).toContain('allowed non-public networks: none of its own');
  });

  it('explains mistakes: unknown customer, duplicate name, bad number', async () => {
    await expect(herald('keys', 'create', '--customer', 'nobody')).rejects.toMatchObject({ stderr: expect.stringContaining("no customer named 'nobody'") });
    await expect(herald('customers', 'create', '--name', 'acme')).rejects.toMatchObject({ stderr: expect.stringContaining('already exists') });
    await expect(herald('credits', 'add', '--customer', 'acme', '--amount', 'lots')).rejects.toMatchObject({
      stderr: expect.stringContaining('--amount must be an integer'),
    });
  });

  it('lists customers, keys, domains, subscriptions and chains, as text and with --json, through the services the API uses', async () => {
    const customers = JSON.parse((await herald('customers', 'list', '--json')).stdout) as { total: number; items: { name: string; credits: number }[] };
    expect(customers.total).toBe(3);
    expect(customers.items.map((c) => c.name)).toEqual(['acme', 'default', 'offline']);
    expect(typeof customers.items[0]?.credits).toBe('number');
    expect((await herald('customers', 'list', '--limit', '1', '--offset', '1')).stdout).toMatch(
      /^default: credits .*\n\(1 of 3 from offset 1; next: --offset 2\)\n$/,
    );

    // The key revoked in the second test, by its prefix.
    expect((await herald('keys', 'list', '--customer', 'acme')).stdout).toMatch(new RegExp(`^key \\d+ ${acmeKey.slice(0, 10)}\\.\\.\\. revoked \\d{4}-`));
    const domains = JSON.parse((await herald('domains', 'list', '--customer', 'acme', '--json')).stdout) as { items: { domain: string; verifiedAt: string }[] };
    expect(domains.items).toMatchObject([{ domain: 'hooks.acme.example', verifiedAt: expect.stringMatching(/^\d{4}-/) }]);

    const subscriptions = JSON.parse((await herald('subscriptions', 'list', '--customer', 'acme', '--json')).stdout) as {
      total: number;
      items: Record<string, unknown>[];
    };
    expect(subscriptions.total).toBe(1);
    expect(subscriptions.items[0]).toMatchObject({
      referenceId: subscriptionId,
      eventType: 'TRANSACTION_MINED',
      blockchain: 'ethereum',
      network: 'goerli',
      callbackUrl: 'https://hooks.acme.example/cb',
      isActive: true,
      callbacks: { delivered: 0, failed: 0, pending: 0 },
    });
    expect(JSON.stringify(subscriptions)).not.toContain('callbackSecretKey');
    expect((await herald('subscriptions', 'list', '--customer', 'acme', '--search', subscriptionId.toUpperCase())).stdout).toContain(
      `${subscriptionId} TRANSACTION_MINED ethereum/goerli 0x${'1'.repeat(64)} -> https://hooks.acme.example/cb active`,
    );
    expect((await herald('subscriptions', 'list', '--customer', 'acme', '--inactive')).stdout).toContain("customer 'acme' has no subscriptions that match");

    // No node follows anything here: the chain of acme's active subscription is listed as without one.
    const chains = JSON.parse((await herald('chains', 'status', '--json')).stdout) as { items: { blockchain: string; network: string; state: string }[] };
    expect(chains.items.map((c) => [c.blockchain, c.network, c.state])).toEqual([['ethereum', 'goerli', 'no-node']]);
    await expect(herald('keys', 'list', '--customer', 'nobody')).rejects.toMatchObject({ stderr: expect.stringContaining("no customer named 'nobody'") });
  }, 180_000);

  it('--json on the commands that print data: one JSON document on stdout', async () => {
    expect(JSON.parse((await herald('credits', 'add', '--customer', 'offline', '--amount', '5', '--json')).stdout)).toEqual({
      customer: 'offline',
      credits: 10_000_005,
    });
    const shown = JSON.parse((await herald('customers', 'show', '--name', 'offline', '--json')).stdout);
    expect(shown).toMatchObject({ name: 'offline', credits: 10_000_005, plan: { mainnetAllowed: false }, allowNetworks: [], keys: [] });
    const created = await herald('keys', 'create', '--customer', 'offline', '--json');
    const key = JSON.parse(created.stdout) as { customer: string; keyId: string; apiKey: string };
    expect(key.apiKey).toMatch(/^hk_/);
    expect(JSON.parse((await herald('keys', 'revoke', '--customer', 'offline', '--key', key.keyId, '--json')).stdout)).toEqual({
      customer: 'offline',
      revoked: 1,
    });
    expect(JSON.parse((await herald('migrate', '--json')).stdout)).toEqual({ applied: [] });
  }, 120_000);

  it('a command other than serve and migrate, run where there is no database, stops with a message and creates nothing there', async () => {
    const elsewhere = mkdtempSync(join(tmpdir(), 'herald-cli-elsewhere-'));
    try {
      for (const args of [
        ['customers', 'show', '--name', 'acme'],
        ['customers', 'list'],
        ['prune', '--dry-run'],
      ]) {
        // From another directory, without --data-dir: ./data there is where it would look.
        const failed = await run('node', [join(process.cwd(), 'bin/herald.js'), ...args], { env, cwd: elsewhere }).then(
          () => undefined,
          (error: { code: number; stderr: string }) => error,
        );
        expect(failed?.code).toBe(2);
        expect(failed?.stderr).toContain(`There is no herald database in ${join(realpathSync(elsewhere), 'data')}`);
        expect(failed?.stderr).toContain('--data-dir');
        expect(failed?.stderr).toContain('DATABASE_URL');
        expect(readdirSync(elsewhere)).toEqual([]); // no initdb, not even the directory
      }
    } finally {
      rmSync(elsewhere, { recursive: true, force: true });
    }
  }, 90_000);

  it('--version prints the version in package.json', async () => {
    expect((await run('node', ['bin/herald.js', '--version'], { env })).stdout.trim()).toBe(version);
  });

  it.each([
    [[], undefined],
    [['serve'], undefined],
    [['customers', 'create'], '--name <name>'],
    [['customers', 'update'], '--name <name>'],
    [['keys', 'create'], '--customer <name>'],
    [['keys', 'revoke'], '--key <id-or-prefix>'],
    [['credits', 'add'], '--amount <n>'],
    [['domains', 'add'], '--domain <host>'],
    [['migrate'], undefined],
    [['customers', 'list'], undefined],
    [['keys', 'list'], '--customer <name>'],
    [['domains', 'list'], '--customer <name>'],
    [['subscriptions', 'list'], '--customer <name>'],
    [['chains', 'status'], undefined],
    [['chains', 'reset'], '--yes'],
  ])('--help for %j marks its required options', async (args, required) => {
    const { stdout } = await run('node', ['bin/herald.js', ...args, '--help'], { env });
    expect(stdout).toContain('Usage: herald');
    if (args.length > 0) expect(stdout).toContain('--data-dir');
    if (required) expect(stdout).toMatch(new RegExp(`${required.replace(/[<>]/g, '.')}\\s+\\(required\\) `));
    if (args.length > 1 && args[0] !== 'serve') expect(stdout).toMatch(/--json\s+print the result as JSON/);
    expect(stdout).not.toMatch(/--(data-dir|json|label|limit).*\(required\)/);
  });
});
