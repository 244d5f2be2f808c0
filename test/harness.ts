/**
 * The test harness: a real herald on a real PostgreSQL database of its own, listening on a free port,
 * and helpers to make customers, keys and verified domains through the same store code the CLI uses.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Logger } from 'pino';
import { inject } from 'vitest';
import { type RunningApp, startApp } from '../src/app.ts';
import { type Config, loadConfig } from '../src/config/config.ts';
import type { Clock } from '../src/delivery/worker.ts';
import { createApiKey, createCustomer, type Plan } from '../src/store/customers.ts';
import { createDb, type Db } from '../src/store/db.ts';
import { upsertDomain } from '../src/store/domains.ts';
import { migrate } from '../src/store/migrate.ts';

/** A fresh, empty database on the test server; returns its URL. */
export async function createTestDatabase(): Promise<string> {
  const admin = new URL(inject('adminDatabaseUrl'));
  const name = `herald_test_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  await client.query(`CREATE DATABASE ${name}`);
  await client.end();
  admin.pathname = `/${name}`;
  return admin.toString();
}

/** A fresh database with herald's schema, opened with a small pool; the caller closes it. */
export async function openMigratedTestDatabase(poolSize = 2): Promise<Db> {
  const db = createDb(await createTestDatabase(), { poolSize });
  await migrate(db);
  return db;
}

export interface TestCustomer {
  id: string;
  name: string;
  key: string;
}

export interface TestApp {
  app: RunningApp;
  url: string;
  config: Config;
  customer(options?: { name?: string; plan?: Partial<Plan>; credits?: bigint; domains?: string[]; allowedEndpoints?: string[] }): Promise<TestCustomer>;
  request(method: string, path: string, options?: { key?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> }): Promise<TestResponse>;
  /**
   * Stops the service, runs `whileDown`, and starts it again on the same database and configuration (a
   * new port: url changes).
   */
  restart(whileDown?: () => Promise<void>): Promise<void>;
  close(): Promise<void>;
}

export interface TestResponse {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: test assertions read arbitrary JSON
  body: any;
  text: string;
}

/**
 * options.clock: the delivery worker's clock (tests move it instead of waiting for retry delays).
 * options.logger: the app's logger (tests that read the operator's log); default one from the config.
 */
export async function startTestApp(overrides: Partial<Config> = {}, options: { clock?: Clock; logger?: Logger } = {}): Promise<TestApp> {
  const databaseUrl = await createTestDatabase();
  const config = {
    ...loadConfig({ databaseUrl, port: 0 }, {}),
    logLevel: (process.env.HERALD_TEST_LOG_LEVEL ?? 'silent') as Config['logLevel'],
    databasePoolSize: 10,
    // Most tests subscribe on chains they do not follow (no node needed to test the API); the refusal
    // of such creates (docs/reference/chains.md "Chains without a node") is tested with this set back to false.
    subscriptions: { allowUnfollowedChains: true },
    ...overrides,
  };
  const started = await startApp(config, options.logger, { clock: options.clock });
  let n = 0;
  const testApp: TestApp = {
    app: started,
    url: started.url as string,
    config,
    async customer(options = {}) {
      const name = options.name ?? `customer-${++n}-${randomBytes(3).toString('hex')}`;
      const plan: Plan = { mainnetAllowed: true, maxActiveSubscriptions: null, requestsPerSecond: 100_000, ...options.plan };
      const customer = await createCustomer(testApp.app.database.db, name, plan, options.credits ?? 100_000_000n);
      for (const domain of options.domains ?? ['hooks.example.com']) await upsertDomain(testApp.app.database.db, customer.id, domain, 'operator');
      const { key } = await createApiKey(testApp.app.database.db, customer.id, { allowedEndpoints: options.allowedEndpoints });
      return { id: customer.id, name, key };
    },
    async request(method, path, options = {}) {
      const headers: Record<string, string> = { ...options.headers };
      if (options.key) headers['x-api-key'] = options.key;
      let body: string | undefined = options.rawBody;
      if (options.body !== undefined) {
        body = JSON.stringify(options.body);
        headers['content-type'] ??= 'application/json';
      }
      const response = await fetch(`${testApp.url}${path}`, { method, headers, body });
      const text = await response.text();
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      return { status: response.status, headers: response.headers, body: parsed, text };
    },
    async restart(whileDown) {
      await testApp.app.close();
      await whileDown?.();
      testApp.app = await startApp(config, options.logger, { clock: options.clock });
      testApp.url = testApp.app.url as string;
    },
    close: () => testApp.app.close(),
  };
  return testApp;
}

/** Valid sample targets per blockchain family, for building requests. */
export const SAMPLE = {
  evmTx: `0x${'ab'.repeat(32)}`,
  evmAddress: '0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed',
  btcTx: 'cd'.repeat(32),
  btcTestnetAddress: 'tb1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3q0sl5k7',
  tronAddress: 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t',
  callbackUrl: 'https://hooks.example.com/callbacks',
};
