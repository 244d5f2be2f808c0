/** Operations endpoints: health, readiness, Prometheus metrics, the generated OpenAPI document, /docs. */
import { connect } from 'node:net';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningApp, startApp } from '../src/app.ts';
import { loadConfig } from '../src/config/config.ts';
import { createApiKey, createCustomer } from '../src/store/customers.ts';
import { HERALD_VERSION } from '../src/version.ts';
import { createTestDatabase, SAMPLE, startTestApp, type TestApp } from './harness.ts';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

describe('operations endpoints (no API key needed)', () => {
  it('/healthz and /readyz answer 200', async () => {
    expect((await t.request('GET', '/healthz')).body).toEqual({ status: 'ok', version: HERALD_VERSION });
    expect((await t.request('GET', '/readyz')).body).toEqual({ status: 'ready' });
  });

  it('/readyz asks the database at most once a second, however often it is called', async () => {
    const readyzQueries = async () =>
      Number(/herald_db_query_duration_seconds_count\{query="readyz"\} (\d+)/.exec((await t.request('GET', '/metrics')).text)?.[1] ?? 0);
    const before = await readyzQueries();
    const started = performance.now();
    const answers = await Promise.all(Array.from({ length: 30 }, () => t.request('GET', '/readyz')));
    for (let i = 0; i < 30; i++) answers.push(await t.request('GET', '/readyz'));
    const seconds = (performance.now() - started) / 1000;
    for (const r of answers) expect(r.body).toEqual({ status: 'ready' });
    expect((await readyzQueries()) - before).toBeLessThanOrEqual(Math.ceil(seconds) + 1);
  });

  it('/metrics counts requests by route and status, and shows latency and the database pool', async () => {
    const c = await t.customer();
    await t.request('GET', '/wallet-as-a-service/wallets/all-assets', { key: c.key });
    await t.request('GET', '/wallet-as-a-service/wallets/all-assets', { key: 'wrong' });
    const text = (await t.request('GET', '/metrics')).text;
    expect(text).toMatch(/herald_http_requests_total\{method="GET",route="\/wallet-as-a-service\/wallets\/all-assets",status="200"\} 1/);
    expect(text).toMatch(/herald_http_requests_total\{method="GET",route="\/wallet-as-a-service\/wallets\/all-assets",status="401"\} 1/);
    expect(text).toContain('herald_http_request_duration_seconds_bucket');
    expect(text).toMatch(/herald_db_pool_connections \d+/);
    expect(text).toContain('herald_db_query_duration_seconds_bucket{le="0.001",query="keys:owner"}');
  });

  it('/openapi.json is generated from the route schemas and lists every contract endpoint', async () => {
    const doc = (await t.request('GET', '/openapi.json')).body;
    expect(doc.openapi).toMatch(/^3\./);
    const paths = Object.keys(doc.paths);
    for (const p of [
      '/blockchain-events/{blockchain}/{network}/subscriptions/transaction-mined',
      '/blockchain-events/{blockchain}/{network}/subscriptions/address-tokens-transactions-confirmed',
      '/blockchain-events/{blockchain}/{network}/subscriptions/internal-transactions-for-specific-amount',
      '/wallet-as-a-service/wallets/all-assets',
      '/blockchain-events/{blockchain}/{network}/subscriptions',
      '/blockchain-events/subscriptions/{referenceId}',
      '/blockchain-events/{blockchain}/{network}/subscriptions/{referenceId}',
      '/blockchain-events/subscriptions/{referenceId}/activate',
    ]) {
      expect(paths).toContain(p);
    }
    const mined = doc.paths['/blockchain-events/{blockchain}/{network}/subscriptions/transaction-mined'].post;
    // Required without pullOnly: true: the item's own list and its `else` (docs/concepts/event-stream.md#pull-only-subscriptions).
    const item = mined.requestBody.content['application/json'].schema.properties.data.properties.item;
    expect([...item.required, ...(item.else?.required ?? [])]).toEqual(['transactionId', 'callbackUrl']);
    expect(Object.keys(mined.responses)).toContain('200');
    expect(paths).not.toContain('/metrics');
  });

  it("/docs renders the document under herald's name and mark, not the framework's", async () => {
    const r = await fetch(`${t.url}/docs`, { redirect: 'follow' });
    expect(r.status).toBe(200);
    const page = await r.text();
    expect(page).toContain('swagger');
    expect(page).toContain('<title>herald API reference</title>');
    const initializer = await (await fetch(`${t.url}/docs/static/swagger-initializer.js`)).text();
    const logo = Buffer.from(/data:image\/svg\+xml;base64,([A-Za-z0-9+/=]+)/.exec(initializer)?.[1] ?? '', 'base64').toString('utf8');
    expect(logo).toContain('aria-label="herald"');
    expect(logo).not.toMatch(/fastify/i);
  });

  it('GET / on the API role redirects to the console', async () => {
    const r = await fetch(`${t.url}/`, { redirect: 'manual' });
    expect(r.status).toBe(302);
    expect(r.headers.get('location')).toBe('/console/');
  });

  it('every response carries x-request-id, also the health endpoints', async () => {
    const r = await t.request('GET', '/healthz');
    expect(r.headers.get('x-request-id')).toMatch(/^[0-9a-f]{24}$/);
  });

  it('amounts stay exact: a ledger balance of 2^200 wei is shown to the last digit', async () => {
    const c = await t.customer();
    const wallet = await t.request('POST', '/wallet-as-a-service/wallets', { key: c.key, body: { data: { item: { walletName: 'rich' } } } });
    const walletId = wallet.body.data.item.walletId;
    await t.request('POST', `/wallet-as-a-service/wallets/${walletId}/ethereum/goerli/addresses`, {
      key: c.key,
      body: { data: { item: { address: SAMPLE.evmAddress } } },
    });
    // Chain following writes these columns; here the test plays its part.
    await t.app.database.db.query('test:ledger', 'UPDATE wallet_addresses SET confirmed_balance = $1, total_received = $1 WHERE wallet_id = $2', [
      (2n ** 200n).toString(),
      walletId,
    ]);
    await t.app.database.db.query(
      'test:token',
      `INSERT INTO wallet_token_balances (wallet_address_id, identifier, symbol, token_type, decimals, amount)
       SELECT id, '0xdac17f958d2ee523a2206206994597c13d831ec7', 'USDT', 'ERC-20', 6, 1234567 FROM wallet_addresses WHERE wallet_id = $1`,
      [walletId],
    );
    const assets = await t.request('GET', '/wallet-as-a-service/wallets/all-assets', { key: c.key });
    expect(assets.body.data.items[0]).toEqual({
      walletId,
      walletName: 'rich',
      coins: [
        {
          blockchain: 'ethereum',
          network: 'goerli',
          unit: 'ETH',
          confirmedBalance: '1606938044258990275541962092341162602522202.993782792835301376',
          totalReceived: '1606938044258990275541962092341162602522202.993782792835301376',
          totalSpent: '0',
          openingBalance: 'pending',
        },
      ],
      fungibleTokens: [
        {
          amount: '1.234567',
          blockchain: 'ethereum',
          network: 'goerli',
          identifier: '0xdac17f958d2ee523a2206206994597c13d831ec7',
          symbol: 'USDT',
          type: 'ERC-20',
        },
      ],
      nonFungibleTokens: [],
    });
  });
});

describe('what the log says', () => {
  let app: RunningApp;
  const lines: { level: number; msg: string }[] = [];
  beforeAll(async () => {
    const config = { ...loadConfig({ databaseUrl: await createTestDatabase(), port: 0 }, {}), logLevel: 'debug' as const };
    const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    app = await startApp(config, logger);
  });
  afterAll(() => app.close());

  it('a client that closes its connection halfway through the body is a debug line, not an unexpected server error', async () => {
    const customer = await createCustomer(app.database.db, 'half', { mainnetAllowed: true, maxActiveSubscriptions: null, requestsPerSecond: 100 }, 1000n);
    const { key } = await createApiKey(app.database.db, customer.id);
    const { port } = new URL(app.url as string);
    const half = '{"data": {"item": {"walletNa';
    await new Promise<void>((resolve, reject) => {
      const socket = connect(Number(port), '127.0.0.1', () => {
        socket.write(
          `POST /wallet-as-a-service/wallets HTTP/1.1\r\nHost: localhost\r\nx-api-key: ${key}\r\n` +
            `Content-Type: application/json\r\nContent-Length: 200\r\n\r\n${half}`,
        );
        // Give the server time to authenticate and start reading the body, then hang up.
        setTimeout(() => socket.destroy(), 200);
      });
      socket.on('close', () => resolve());
      socket.on('error', reject);
    });
    const seen = () => lines.some((l) => l.level === 20 && /closed the connection/.test(l.msg));
    for (let i = 0; i < 50 && !seen(); i++) await new Promise((r) => setTimeout(r, 20));
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);
    expect(seen()).toBe(true);
  });
});

describe('while the server shuts down', () => {
  /**
   * Opens a connection, authenticates a POST and sends half its body, so that the request is in flight
   * and the shutdown waits for it; `rest` finishes it and pipelines the request under test behind it.
   */
  async function halfSentRequest(port: number, key: string) {
    const body = JSON.stringify({ data: { item: { walletName: 'draining' } } });
    const socket = connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (chunk) => {
      received += chunk.toString('utf8');
    });
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    await new Promise<void>((resolve) => socket.on('connect', () => resolve()));
    socket.write(
      `POST /wallet-as-a-service/wallets HTTP/1.1\r\nHost: localhost\r\nx-api-key: ${key}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`,
    );
    return {
      async rest(next: string): Promise<string[]> {
        socket.write(`${body.slice(10)}${next}`);
        await closed;
        return received.split(/(?=HTTP\/1\.1 )/);
      },
    };
  }

  it('a request that arrives gets 503 service_unavailable in the envelope with Retry-After; the probes keep their own shape', async () => {
    const t = await startTestApp();
    const customer = await t.customer();
    const port = Number(new URL(t.url).port);
    const forApi = await halfSentRequest(port, customer.key);
    const forProbe = await halfSentRequest(port, customer.key);
    await new Promise((r) => setTimeout(r, 100)); // both in flight
    const closing = t.close();
    await new Promise((r) => setTimeout(r, 100)); // the server is draining
    const [api, probe] = await Promise.all([
      forApi.rest(`GET /wallet-as-a-service/wallets/all-assets?context=late HTTP/1.1\r\nHost: localhost\r\nx-api-key: ${customer.key}\r\n\r\n`),
      forProbe.rest('GET /readyz HTTP/1.1\r\nHost: localhost\r\n\r\n'),
    ]);
    await closing;
    // The requests already in flight are completed normally.
    expect(api[0]).toMatch(/^HTTP\/1\.1 201/);
    expect(probe[0]).toMatch(/^HTTP\/1\.1 201/);
    const late = api[1] ?? '';
    expect(late).toMatch(/^HTTP\/1\.1 503/);
    expect(late).toMatch(/\r\nretry-after: 1\r\n/i);
    const envelope = JSON.parse(late.slice(late.indexOf('\r\n\r\n') + 4));
    expect(envelope).toEqual({
      apiVersion: '2021-03-20',
      requestId: expect.stringMatching(/^[0-9a-f]{24}$/),
      context: 'late',
      error: { code: 'service_unavailable', message: expect.stringContaining('shutting down') },
    });
    const readyz = probe[1] ?? '';
    expect(readyz).toMatch(/^HTTP\/1\.1 503/);
    expect(JSON.parse(readyz.slice(readyz.indexOf('\r\n\r\n') + 4))).toEqual({ status: 'unavailable', reason: 'The server is shutting down.' });
  });
});

describe('the metrics port of a process without the api role', () => {
  let app: RunningApp;
  beforeAll(async () => {
    const config = {
      ...loadConfig({ databaseUrl: await createTestDatabase(), port: 0 }, {}),
      roles: ['delivery' as const],
      metricsPort: 0,
      logLevel: 'silent' as const,
    };
    app = await startApp(config);
  });
  afterAll(() => app?.close());

  it('serves /metrics with the delivery counters, /healthz and /readyz, and no API', async () => {
    expect(app.server).toBeUndefined();
    const base = app.metricsUrl as string;
    expect(base).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const metrics = await fetch(`${base}/metrics`);
    expect(metrics.status).toBe(200);
    const text = await metrics.text();
    expect(text).toMatch(/^# HELP herald_db_pool_connections/m);
    expect(text).toMatch(/^herald_callbacks_due \d+/m);
    expect(await (await fetch(`${base}/healthz`)).json()).toEqual({ status: 'ok', version: HERALD_VERSION });
    expect(await (await fetch(`${base}/readyz`)).json()).toEqual({ status: 'ready' });
    expect((await fetch(`${base}/blockchain-events/status`)).status).toBe(404);
  });

  it('HERALD_METRICS_PORT sets it', () => {
    expect(loadConfig({}, { HERALD_METRICS_PORT: '9464' }).metricsPort).toBe(9464);
  });
});
