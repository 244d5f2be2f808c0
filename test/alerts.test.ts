/**
 * Operator alerts on a real database and a real HTTPS receiver: each kind fires once per change of state
 * (a state must hold for alerts.holdSeconds, a stopped chain at once), arrives signed with the Standard
 * Webhooks headers (checked here with an independent HMAC), a flood of deactivations gives a bounded
 * number of alerts, two monitors on one database raise each alert once, and an alert the webhook did not
 * take is sent again with the same webhook-id until it is taken or its retries run out.
 *
 * The detection tests drive the monitor's passes with a time of their own (`now`), as the monitor's
 * timer would, so holding a state for a minute takes no minute. The last ones run whole herald
 * processes (two delivery roles on one database) with their own timers.
 */
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningApp, startApp } from '../src/app.ts';
import { type Config, loadConfig } from '../src/config/config.ts';
import { type AlertMonitorDeps, detectAlerts } from '../src/delivery/alert-monitor.ts';
import { sendDueAlerts } from '../src/delivery/alert-sender.ts';
import { CallbackSender } from '../src/delivery/sender.ts';
import { createMetrics, type Metrics } from '../src/metrics.ts';
import { type AttemptOutcome, destinationOf, enqueueCallbacks, recordOutcomes } from '../src/store/callbacks.ts';
import { createDb, type Db } from '../src/store/db.ts';
import { startTestApp, type TestApp, type TestCustomer } from './harness.ts';
import { type ReceivedRequest, type Receiver, startReceiver } from './support/receiver.ts';
import { createTestCa, type TestCa, writeCaFile } from './support/tls.ts';
import { until } from './support/wait.ts';

const SECOND = 1000;
const SECRET = `whsec_${randomBytes(24).toString('base64')}`;
const CHAINS: Config['chains'] = [
  { blockchain: 'litecoin', network: 'testnet', rpcUrl: 'http://127.0.0.1:9', pollIntervalMs: 1000, concurrency: 8, requestTimeoutMs: 10000 },
  { blockchain: 'ethereum', network: 'goerli', rpcUrl: 'http://127.0.0.1:9', pollIntervalMs: 1000, concurrency: 8, requestTimeoutMs: 10000 },
];
const LTC = { blockchain: 'litecoin', network: 'testnet' };

/**
 * The receiver's side of Standard Webhooks, written from the specification, not from signing.ts:
 * key = base64 after "whsec_", signature = base64 HMAC-SHA256 of `${id}.${timestamp}.${body}`, the
 * header a space-separated list of "v1,<signature>", the timestamp within five minutes.
 */
function verifyStandardWebhook(secret: string, request: ReceivedRequest): boolean {
  const id = request.headers['webhook-id'] as string;
  const timestamp = request.headers['webhook-timestamp'] as string;
  const signatures = String(request.headers['webhook-signature'] ?? '').split(' ');
  if (!id || !/^\d+$/.test(timestamp) || Math.abs(Date.now() / 1000 - Number(timestamp)) > 300) return false;
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(request.rawBody).digest('base64');
  return signatures.some((s) => s === `v1,${expected}`);
}

interface Alert {
  id: string;
  type: string;
  timestamp: string;
  data: Record<string, unknown>;
}

/** Every request at the receiver, checked and parsed: each must be a signed JSON POST. */
function alertsAt(r: Receiver, secret = SECRET): Alert[] {
  return r.received.map((req) => {
    expect(req.method).toBe('POST');
    expect(req.headers['content-type']).toBe('application/json');
    expect(verifyStandardWebhook(secret, req), `signature of ${req.rawBody}`).toBe(true);
    return { id: req.headers['webhook-id'] as string, ...JSON.parse(req.rawBody.toString()) };
  });
}

/** A logger whose warn lines the test can read. */
function captureLogs(): { logger: pino.Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level: 'warn' }, stream), lines };
}

async function counterValue(metrics: Metrics, name: string, labels: Record<string, string>): Promise<number> {
  const metric = (await metrics.registry.getMetricsAsJSON()).find((m) => m.name === name);
  const values = (metric?.values ?? []) as { value: number; labels: Record<string, string> }[];
  return values.filter((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l)).reduce((sum, v) => sum + v.value, 0);
}

/** Now, to the whole second: block timestamps are whole seconds, so lags come out exact. */
const wholeSecond = () => new Date(Math.floor(Date.now() / 1000) * 1000);

let ca: TestCa;
let t: TestApp;
let db: Db;
let sender: CallbackSender;

beforeAll(async () => {
  ca = await createTestCa();
  // The API role only: the test runs the monitor's passes itself.
  t = await startTestApp({ roles: ['api'], chains: CHAINS });
  db = t.app.database.db;
  sender = new CallbackSender({ timeoutMs: 2000, perDestination: 4, allowNetworks: [], ca: [ca.caPem], responseBodyLimit: 1024, userAgent: 'herald-test' });
});
afterAll(async () => {
  await sender?.close();
  await t?.close();
});

/** Sets a chain's cursor as a follower would have left it. */
async function setChain(
  chain: { blockchain: string; network: string },
  values: { height: number; nodeHead: number; blockTimestamp: Date; seenAt: Date; state?: 'following' | 'stopped'; stopReason?: string },
): Promise<void> {
  await db.query(
    'test:set-chain',
    `INSERT INTO chain_cursors AS c (blockchain, network, height, hash, state, stop_reason, block_timestamp, node_head, node_head_seen_at, updated_at)
     VALUES ($1, $2, $3::bigint, 'h' || $3::bigint, $4, $5, $6, $7, $8, $8)
     ON CONFLICT (blockchain, network) DO UPDATE SET height = EXCLUDED.height, hash = EXCLUDED.hash, state = EXCLUDED.state,
       stop_reason = EXCLUDED.stop_reason, block_timestamp = EXCLUDED.block_timestamp, node_head = EXCLUDED.node_head,
       node_head_seen_at = EXCLUDED.node_head_seen_at, updated_at = EXCLUDED.updated_at`,
    [
      chain.blockchain,
      chain.network,
      values.height,
      values.state ?? 'following',
      values.stopReason ?? null,
      Math.floor(values.blockTimestamp.getTime() / 1000),
      values.nodeHead,
      values.seenAt,
    ],
  );
}

/** Sets a node's row as the ingest role writes it (migration 013). */
async function setNode(node: string, eligible: boolean, checkedAt: Date, reason: string | null = eligible ? null : 'syncing'): Promise<void> {
  await db.query(
    'test:set-node',
    `INSERT INTO chain_nodes AS n (blockchain, network, node, eligible, reason, head_height, head_hash, lag_blocks, error_rate, latency_ms, checked_at, changed_at)
     VALUES ($1, $2, $3, $4, $5, 100, 'h100', 0, 0, 12.5, $6, $6)
     ON CONFLICT (blockchain, network, node) DO UPDATE SET eligible = EXCLUDED.eligible, reason = EXCLUDED.reason, checked_at = EXCLUDED.checked_at,
       changed_at = CASE WHEN n.eligible = EXCLUDED.eligible THEN n.changed_at ELSE EXCLUDED.changed_at END`,
    [LTC.blockchain, LTC.network, node, eligible, reason, checkedAt],
  );
}

const ALERTS = { lagSeconds: 300, holdSeconds: 60, groupSeconds: 300, intervalSeconds: 10, retrySeconds: [10, 30] };

/** A monitor as the delivery role runs it, on `database`, posting to `r`. */
function monitor(
  r: Receiver,
  options: { database?: Db; metrics?: Metrics; logger?: pino.Logger; alerts?: Partial<Config['alerts']>; chains?: Config['chains'] } = {},
) {
  const alerts = { ...ALERTS, webhookUrl: `${r.url}/alerts`, secret: SECRET, ...options.alerts };
  const deps: AlertMonitorDeps = {
    db: options.database ?? db,
    config: { alerts, chains: options.chains ?? CHAINS },
    logger: options.logger ?? pino({ level: 'silent' }),
    metrics: options.metrics,
  };
  return {
    /** One pass at `now`: detect, then send what is due. */
    async pass(now: Date) {
      const raised = await detectAlerts(deps, now);
      await sendDueAlerts({ ...deps, sender, alerts, timeoutMs: 2000 }, now);
      return raised;
    },
  };
}

/** Empties the alert tables between tests (the subjects are shared). */
async function resetAlerts(): Promise<void> {
  await db.query('test:reset-alerts', 'TRUNCATE alert_state, alert_tallies, alert_outbox, chain_cursors, chain_nodes');
}

describe('chain alerts', () => {
  it('stopped at once, lagging after holding for a minute, recovered after holding; one alert per change, signed', async () => {
    await resetAlerts();
    const r = await startReceiver({ ca });
    try {
      const { logger, lines } = captureLogs();
      const metrics = createMetrics();
      const m = monitor(r, { logger, metrics });
      const t0 = wholeSecond();
      const at = (s: number) => new Date(t0.getTime() + s * SECOND);
      // Healthy when first seen: nothing to say.
      await setChain(LTC, { height: 100, nodeHead: 100, blockTimestamp: at(-30), seenAt: at(0) });
      expect(await m.pass(at(0))).toEqual([]);

      // 400 s behind (> lagSeconds 300): lagging once it has held for holdSeconds (60), and only once.
      await setChain(LTC, { height: 100, nodeHead: 140, blockTimestamp: at(-390), seenAt: at(10) });
      expect(await m.pass(at(10))).toEqual([]);
      await setChain(LTC, { height: 100, nodeHead: 141, blockTimestamp: at(-390), seenAt: at(40) });
      expect(await m.pass(at(40))).toEqual([]);
      await setChain(LTC, { height: 101, nodeHead: 141, blockTimestamp: at(-330), seenAt: at(70) });
      expect((await m.pass(at(70))).map((a) => a.kind)).toEqual(['chain.lagging']);
      await setChain(LTC, { height: 102, nodeHead: 141, blockTimestamp: at(-320), seenAt: at(80) });
      expect(await m.pass(at(80))).toEqual([]);

      // Stopped by its follower: alerted at the next look, no hold.
      await setChain(LTC, {
        height: 102,
        nodeHead: 141,
        blockTimestamp: at(-320),
        seenAt: at(85),
        state: 'stopped',
        stopReason: 'reorganisation deeper than the window',
      });
      expect((await m.pass(at(90))).map((a) => a.kind)).toEqual(['chain.stopped']);
      expect(await m.pass(at(100))).toEqual([]);

      // Following and caught up again: recovered once that has held for a minute.
      await setChain(LTC, { height: 141, nodeHead: 141, blockTimestamp: at(195), seenAt: at(200) });
      expect(await m.pass(at(200))).toEqual([]);
      await setChain(LTC, { height: 141, nodeHead: 141, blockTimestamp: at(195), seenAt: at(259) });
      expect(await m.pass(at(259))).toEqual([]);
      await setChain(LTC, { height: 141, nodeHead: 141, blockTimestamp: at(195), seenAt: at(261) });
      expect((await m.pass(at(261))).map((a) => a.kind)).toEqual(['chain.recovered']);
      expect(await m.pass(at(300))).toEqual([]);

      await r.waitFor(3);
      const alerts = alertsAt(r);
      expect(alerts.map((a) => a.type)).toEqual(['chain.lagging', 'chain.stopped', 'chain.recovered']);
      expect(new Set(alerts.map((a) => a.id)).size).toBe(3);
      expect(alerts[0]?.data).toMatchObject({
        blockchain: 'litecoin',
        network: 'testnet',
        state: 'lagging',
        previousState: 'ok',
        processedHeight: 101,
        nodeHeight: 141,
        lagBlocks: 40,
        lagSeconds: 400,
        lagLimitSeconds: 300,
        since: at(10).toISOString(),
      });
      expect(alerts[1]?.data).toMatchObject({ state: 'stopped', previousState: 'lagging', reason: 'reorganisation deeper than the window' });
      expect(alerts[2]?.data).toMatchObject({ state: 'ok', previousState: 'stopped', lagBlocks: 0, lagSeconds: 0 });
      expect(alerts[2]?.timestamp).toBe(at(261).toISOString());

      // Each also a warn line and a count per kind.
      const warned = lines.filter((l) => l.level === 40 && typeof l.alert === 'string').map((l) => l.alert);
      expect(warned).toEqual(['chain.lagging', 'chain.stopped', 'chain.recovered']);
      for (const kind of ['chain.lagging', 'chain.stopped', 'chain.recovered']) expect(await counterValue(metrics, 'herald_alerts_total', { kind })).toBe(1);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(r.received).toHaveLength(3);
    } finally {
      await r.close();
    }
  });

  it('a chain nobody follows (no block, no node head for lagSeconds) is stopped; a chain flapping faster than the hold gives no alert', async () => {
    await resetAlerts();
    const r = await startReceiver({ ca });
    try {
      const m = monitor(r);
      const t0 = wholeSecond();
      const at = (s: number) => new Date(t0.getTime() + s * SECOND);
      await setChain(LTC, { height: 100, nodeHead: 100, blockTimestamp: at(-30), seenAt: at(0) });
      expect(await m.pass(at(0))).toEqual([]);
      expect(await m.pass(at(299))).toEqual([]);
      const silent = await m.pass(at(301));
      expect(silent.map((a) => a.kind)).toEqual(['chain.stopped']);
      expect(String(silent[0]?.data.reason)).toMatch(/no block applied and no node head seen for 301 s/);

      // Flapping between lagging and following every 30 s for an hour: never holds a minute, never alerted.
      await setChain(LTC, { height: 100, nodeHead: 100, blockTimestamp: at(300), seenAt: at(310) });
      for (let i = 0; i < 120; i++) {
        const s = 310 + 30 * i;
        const lagging = i % 2 === 1;
        await setChain(LTC, { height: 100, nodeHead: lagging ? 120 : 100, blockTimestamp: at(lagging ? s - 400 : s - 5), seenAt: at(s) });
        expect(await m.pass(at(s))).toEqual([]);
      }
      await until('the alerts sent', async () => (await db.query('test:pending', "SELECT 1 FROM alert_outbox WHERE status = 'pending'")).length === 0);
      expect(alertsAt(r).map((a) => a.type)).toEqual(['chain.stopped']);
    } finally {
      await r.close();
    }
  });

  it('watches the chains of its configuration, or, configured with none, every chain followed on the database', async () => {
    await resetAlerts();
    const r = await startReceiver({ ca });
    try {
      const configured = monitor(r);
      const bare = monitor(r, { chains: [] });
      const t0 = wholeSecond();
      const at = (s: number) => new Date(t0.getTime() + s * SECOND);
      const dogecoin = { blockchain: 'dogecoin', network: 'mainnet' };
      await setChain(dogecoin, { height: 5, nodeHead: 5, blockTimestamp: at(0), seenAt: at(0), state: 'stopped', stopReason: 'deep' });
      expect(await configured.pass(at(1))).toEqual([]);
      const raised = await bare.pass(at(2));
      expect(raised.map((a) => [a.kind, a.subject])).toEqual([['chain.stopped', 'chain/dogecoin/mainnet']]);
      await r.waitFor(1);
      expect(alertsAt(r).map((a) => a.data.blockchain)).toEqual(['dogecoin']);
    } finally {
      await r.close();
    }
  });
});

describe('node alerts', () => {
  it('ineligible and eligible again, each once it has held; a node first seen eligible says nothing', async () => {
    await resetAlerts();
    const r = await startReceiver({ ca });
    try {
      const m = monitor(r);
      const t0 = wholeSecond();
      const at = (s: number) => new Date(t0.getTime() + s * SECOND);
      await setChain(LTC, { height: 100, nodeHead: 100, blockTimestamp: at(-5), seenAt: at(0) });
      const node = 'http://litecoind-2.internal:19332/';
      await setNode(node, true, at(0));
      expect(await m.pass(at(0))).toEqual([]);
      await setNode(node, false, at(10), 'head 12 blocks behind the best eligible head (maxLagBlocks 3)');
      expect(await m.pass(at(10))).toEqual([]);
      expect(await m.pass(at(69))).toEqual([]);
      await setChain(LTC, { height: 100, nodeHead: 100, blockTimestamp: at(60), seenAt: at(70) });
      await setNode(node, false, at(70), 'head 12 blocks behind the best eligible head (maxLagBlocks 3)');
      expect((await m.pass(at(70))).map((a) => a.kind)).toEqual(['node.ineligible']);
      expect(await m.pass(at(80))).toEqual([]);
      await setNode(node, true, at(90));
      expect(await m.pass(at(90))).toEqual([]);
      await setChain(LTC, { height: 100, nodeHead: 100, blockTimestamp: at(85), seenAt: at(150) });
      await setNode(node, true, at(150));
      expect((await m.pass(at(150))).map((a) => a.kind)).toEqual(['node.eligible']);
      expect(await m.pass(at(160))).toEqual([]);

      await r.waitFor(2);
      const alerts = alertsAt(r);
      expect(alerts.map((a) => a.type)).toEqual(['node.ineligible', 'node.eligible']);
      expect(alerts[0]?.data).toMatchObject({
        blockchain: 'litecoin',
        network: 'testnet',
        node,
        eligible: false,
        reason: 'head 12 blocks behind the best eligible head (maxLagBlocks 3)',
        previousState: 'eligible',
        since: at(10).toISOString(),
      });
      expect(alerts[1]?.data).toMatchObject({ node, eligible: true, reason: null, previousState: 'ineligible' });
    } finally {
      await r.close();
    }
  });

  it('a node on another chain than its label (docs/reference/chains.md "Chain identity") is alerted at once, not after holdSeconds', async () => {
    await resetAlerts();
    const r = await startReceiver({ ca });
    try {
      const m = monitor(r);
      const t0 = wholeSecond();
      const at = (s: number) => new Date(t0.getTime() + s * SECOND);
      await setChain(LTC, { height: 100, nodeHead: 100, blockTimestamp: at(-5), seenAt: at(0) });
      const node = 'http://litecoind-3.internal:19332/';
      const reason = "wrong chain: getblockchaininfo.chain is 'regtest', not 'test' (litecoin testnet's)";
      await setNode(node, false, at(0), reason);
      expect((await m.pass(at(0))).map((a) => a.kind)).toEqual(['node.wrong-chain']);
      expect(await m.pass(at(10))).toEqual([]);
      await r.waitFor(1);
      expect(alertsAt(r)[0]).toMatchObject({ type: 'node.wrong-chain', data: { blockchain: 'litecoin', network: 'testnet', node, eligible: false, reason } });
    } finally {
      await r.close();
    }
  });
});

describe('two monitors on one database', () => {
  it('raise each change of state once, whichever looks first or both at once', async () => {
    await resetAlerts();
    const r = await startReceiver({ ca });
    // A pool of its own: the second monitor is another process's.
    const other = createDb(t.app.database.url, { poolSize: 4 });
    try {
      const metricsA = createMetrics();
      const metricsB = createMetrics();
      const a = monitor(r, { metrics: metricsA });
      const b = monitor(r, { database: other, metrics: metricsB });
      const t0 = wholeSecond();
      const at = (s: number) => new Date(t0.getTime() + s * SECOND);
      const both = async (s: number) => [...(await Promise.all([a.pass(at(s)), b.pass(at(s + 0.5))]))].flat();
      await setChain(LTC, { height: 100, nodeHead: 100, blockTimestamp: at(-5), seenAt: at(0) });
      await setNode('n1', true, at(0));
      expect(await both(0)).toEqual([]);
      await setChain(LTC, { height: 100, nodeHead: 100, blockTimestamp: at(-5), seenAt: at(5), state: 'stopped', stopReason: 'deep' });
      await setNode('n1', false, at(5));
      const raised = [...(await both(5)), ...(await both(30)), ...(await both(65)), ...(await both(70))];
      expect(raised.map((x) => x.kind).sort()).toEqual(['chain.stopped', 'node.ineligible']);
      // Many passes racing at the same instants: still one alert per change.
      await setChain(LTC, { height: 100, nodeHead: 100, blockTimestamp: at(99), seenAt: at(100) });
      await setNode('n1', true, at(100));
      const racing: string[] = [];
      for (const s of [100, 130, 160, 161, 161, 200]) racing.push(...(await both(s)).map((x) => x.kind));
      expect(racing.sort()).toEqual(['chain.recovered', 'node.eligible']);

      await r.waitFor(4);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(
        alertsAt(r)
          .map((x) => x.type)
          .sort(),
      ).toEqual(['chain.recovered', 'chain.stopped', 'node.eligible', 'node.ineligible']);
      const total = async (kind: string) =>
        (await counterValue(metricsA, 'herald_alerts_total', { kind })) + (await counterValue(metricsB, 'herald_alerts_total', { kind }));
      for (const kind of ['chain.stopped', 'node.ineligible', 'chain.recovered', 'node.eligible']) expect(await total(kind)).toBe(1);
    } finally {
      await other.close();
      await r.close();
    }
  });
});

describe('deactivations and exhausted callbacks', () => {
  /** `count` active subscriptions of `customer` with one callback URL (inserted directly: 10,000 through the API would take long). */
  async function subscriptions(customer: TestCustomer, callbackUrl: string, count: number): Promise<string[]> {
    const rows = await db.query<{ id: string }>(
      'test:subscriptions',
      `INSERT INTO subscriptions (id, customer_id, event_type, blockchain, network, transaction_id, target, callback_url, callback_host,
         allow_duplicates, duplicate_key, api_version)
       SELECT gen_random_uuid(), $1, 'TRANSACTION_MINED', 'ethereum', 'goerli', t, t, $2, $3, true, sha256(t::bytea), '2021-03-20'
       FROM (SELECT '0x' || encode(sha256(gen_random_uuid()::text::bytea), 'hex') AS t FROM generate_series(1, $4::int)) g
       RETURNING id`,
      [customer.id, callbackUrl, new URL(callbackUrl).hostname, count],
    );
    return rows.map((r) => r.id);
  }

  /** A callback of `subscriptionId`, then its last attempt recorded as the worker would: `result`. */
  async function endCallback(customer: TestCustomer, subscriptionId: string, callbackUrl: string, result: 'gone' | 'exhausted', now: Date): Promise<void> {
    const id = randomUUID();
    await db.transaction('test:enqueue', (tx) =>
      enqueueCallbacks(tx, [
        { id, customerId: customer.id, subscriptionId, eventType: 'TRANSACTION_MINED', idempotencyKey: randomUUID(), body: '{}', callbackUrl },
      ]),
    );
    const outcome: AttemptOutcome = {
      callbackId: id,
      destination: destinationOf(callbackUrl),
      probe: false,
      result,
      nextAttemptAt: null,
      startedAt: now,
      durationMs: 3,
      httpStatus: result === 'gone' ? 410 : 500,
      errorClass: result === 'gone' ? null : 'bad_status',
      errorMessage: null,
      responseBody: null,
    };
    await recordOutcomes(db, [outcome], now);
  }

  it('10,000 subscriptions of one URL deactivated at once: one alert with the count; more within the group window: one more after it', async () => {
    await resetAlerts();
    const r = await startReceiver({ ca });
    try {
      const m = monitor(r, { alerts: { groupSeconds: 300 } });
      const customer = await t.customer({ domains: ['hooks.example.com'] });
      const url = 'https://hooks.example.com/flood';
      const ids = await subscriptions(customer, url, 10_000);
      const t0 = wholeSecond();
      const at = (s: number) => new Date(t0.getTime() + s * SECOND);
      // The last retry of one callback failed: all 10,000 subscriptions with its event type and URL go.
      await endCallback(customer, ids[0] as string, url, 'exhausted', at(0));
      const [{ n } = { n: -1 }] = await db.query<{ n: number }>(
        'test:active',
        'SELECT count(*)::int AS n FROM subscriptions WHERE customer_id = $1 AND is_active',
        [customer.id],
      );
      expect(n).toBe(0);
      const first = await m.pass(at(1));
      expect(first.map((a) => [a.kind, a.data.subscriptions ?? a.data.callbacks]).sort()).toEqual([
        ['callbacks.exhausted', 1],
        ['subscription.deactivated', 10_000],
      ]);

      // 50 more subscriptions on other URLs of the same destination, each answering 410 over the next
      // minutes: grouped with the same customer, destination and reason, one alert per group window.
      const more = await subscriptions(customer, 'https://hooks.example.com/other', 50);
      const raised: string[] = [];
      for (const [i, id] of more.entries()) {
        await endCallback(customer, id, `https://hooks.example.com/other/${i}`, 'gone', at(2 + i * 10));
        raised.push(...(await m.pass(at(2 + i * 10))).map((a) => `${a.kind}/${a.data.reason}/${a.data.subscriptions}`));
      }
      // Passes at 2..492 s: the first 410 alerted at once (2 s), those of 12..302 s together at 302 s
      // (the group window after the first), the rest at the end of the next window.
      const tag = (a: { kind: string; data: Record<string, unknown> }) => `${a.kind}/${a.data.reason}/${a.data.subscriptions}`;
      expect(raised).toEqual(['subscription.deactivated/callback_url_gone/1', 'subscription.deactivated/callback_url_gone/30']);
      expect(await m.pass(at(601))).toEqual([]);
      expect((await m.pass(at(603))).map(tag)).toEqual(['subscription.deactivated/callback_url_gone/19']);
      expect(await m.pass(at(1200))).toEqual([]);

      await r.waitFor(5);
      const alerts = alertsAt(r);
      expect(alerts).toHaveLength(5);
      expect(alerts.find((a) => a.type === 'subscription.deactivated' && a.data.reason === 'maximum_retry_attempts_reached')?.data).toMatchObject({
        customerId: customer.id,
        customerName: customer.name,
        destination: 'https://hooks.example.com:443',
        subscriptions: 10_000,
        firstAt: at(0).toISOString(),
      });
      expect(alerts.find((a) => a.type === 'callbacks.exhausted')?.data).toMatchObject({
        customerId: customer.id,
        destination: 'https://hooks.example.com:443',
        callbacks: 1,
      });
    } finally {
      await r.close();
    }
  });
});

describe('sending', () => {
  it('an alert the webhook did not take is sent again, same webhook-id, until taken; past the last retry it is given up', async () => {
    await resetAlerts();
    const r = await startReceiver({ ca });
    try {
      const { logger, lines } = captureLogs();
      const metrics = createMetrics();
      const m = monitor(r, { metrics, logger, alerts: { retrySeconds: [0.2, 0.2, 0.2] } });
      r.script({ kind: 'status', status: 503 }, { kind: 'reset' }, { kind: 'status', status: 500 });
      const now = new Date();
      await setChain(LTC, { height: 100, nodeHead: 100, blockTimestamp: now, seenAt: now, state: 'stopped', stopReason: 'deep' });
      expect((await m.pass(now)).map((a) => a.kind)).toEqual(['chain.stopped']);
      // The passes a running monitor makes every intervalSeconds, here every 100 ms.
      await until(
        'the alert taken',
        async () => {
          await m.pass(new Date());
          return r.received.length >= 4;
        },
        10_000,
      );
      const alerts = alertsAt(r);
      expect(alerts.map((a) => a.type)).toEqual(['chain.stopped', 'chain.stopped', 'chain.stopped', 'chain.stopped']);
      expect(new Set(alerts.map((a) => a.id)).size).toBe(1);
      expect(new Set(r.received.map((q) => q.rawBody.toString())).size).toBe(1);
      const gaps = r.received.slice(1).map((q, i) => q.receivedAt - (r.received[i] as ReceivedRequest).receivedAt);
      expect(Math.min(...gaps)).toBeGreaterThanOrEqual(150);
      const [row] = await db.query<{ status: string; attempts: number }>('test:outbox', 'SELECT status, attempts FROM alert_outbox');
      expect(row).toEqual({ status: 'sent', attempts: 4 });
      expect(await counterValue(metrics, 'herald_alert_send_failures_total', { outcome: 'retry' })).toBe(3);

      // A webhook that never takes it: retries, then given up (error line), and no further attempt.
      await resetAlerts();
      r.received.length = 0;
      r.setDefault({ kind: 'status', status: 500 });
      const later = new Date();
      await setChain(LTC, { height: 100, nodeHead: 100, blockTimestamp: later, seenAt: later, state: 'stopped', stopReason: 'deep' });
      await m.pass(later);
      await until(
        'the alert given up',
        async () => {
          await m.pass(new Date());
          return (await db.query('test:failed', "SELECT 1 FROM alert_outbox WHERE status = 'failed'")).length === 1;
        },
        10_000,
      );
      await new Promise((resolve) => setTimeout(resolve, 500));
      await m.pass(new Date());
      expect(r.received).toHaveLength(4);
      expect(await counterValue(metrics, 'herald_alert_send_failures_total', { outcome: 'given_up' })).toBe(1);
      expect(lines.some((l) => l.level === 50 && /given up/.test(String(l.msg)))).toBe(true);
    } finally {
      await r.close();
    }
  });
});

describe('herald processes', () => {
  let alertReceiver: Receiver;
  let customerReceiver: Receiver;
  const apps: RunningApp[] = [];
  let first: TestApp;

  beforeAll(async () => {
    alertReceiver = await startReceiver({ ca });
    customerReceiver = await startReceiver({ ca });
    customerReceiver.setDefault({ kind: 'status', status: 500 });
    const base = loadConfig({}, {});
    first = await startTestApp({
      roles: ['api', 'delivery'],
      chains: CHAINS,
      retention: { ...base.retention, enabled: false },
      delivery: {
        ...base.delivery,
        allowNetworks: ['127.0.0.1/32', '::1/128'],
        caFile: writeCaFile(ca.caPem),
        timeoutMs: 1000,
        pollIntervalMs: 50,
        retryScheduleSeconds: [],
      },
      alerts: { ...ALERTS, webhookUrl: `${alertReceiver.url}/alerts`, secret: SECRET, holdSeconds: 0.5, intervalSeconds: 0.1, groupSeconds: 3600 },
    });
    // A second delivery process on the same database (its monitor races the first one's).
    apps.push(await startApp({ ...first.config, roles: ['delivery'] }));
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    await first?.close();
    await alertReceiver?.close();
    await customerReceiver?.close();
  });

  it('two delivery processes: one alert per change of state, and one per deactivation group, from the worker to the webhook', async () => {
    const firstDb = first.app.database.db;
    const now = new Date();
    await firstDb.query(
      'test:chain',
      `INSERT INTO chain_cursors (blockchain, network, height, hash, block_timestamp, node_head, node_head_seen_at)
       VALUES ('litecoin', 'testnet', 10, 'h10', $1, 10, clock_timestamp())`,
      [Math.floor(now.getTime() / 1000)],
    );
    // Seen healthy first by both monitors.
    await new Promise((resolve) => setTimeout(resolve, 500));
    await firstDb.query('test:stop', `UPDATE chain_cursors SET state = 'stopped', stop_reason = 'reorganisation deeper than the window'`);
    await alertReceiver.waitFor(1);

    // A customer's callback whose only attempt fails (no retries configured): its subscription deactivated.
    const customer = await first.customer({ domains: ['localhost'] });
    const res = await first.request('POST', '/blockchain-events/ethereum/goerli/subscriptions/transaction-mined', {
      key: customer.key,
      body: { data: { item: { transactionId: `0x${randomBytes(32).toString('hex')}`, callbackUrl: `${customerReceiver.url}/hook` } } },
    });
    expect(res.status, res.text).toBe(200);
    const subscriptionId = res.body.data.item.referenceId as string;
    await firstDb.transaction('test:enqueue', (tx) =>
      enqueueCallbacks(tx, [
        {
          id: randomUUID(),
          customerId: customer.id,
          subscriptionId,
          eventType: 'TRANSACTION_MINED',
          idempotencyKey: randomUUID(),
          body: '{"n":1}',
          callbackUrl: `${customerReceiver.url}/hook`,
        },
      ]),
    );
    await customerReceiver.waitFor(1);
    await alertReceiver.waitFor(3, 10_000);
    // Several passes of both monitors later, still those three.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const alerts = alertsAt(alertReceiver);
    expect(alerts.map((a) => a.type).sort()).toEqual(['callbacks.exhausted', 'chain.stopped', 'subscription.deactivated']);
    expect(alerts.find((a) => a.type === 'subscription.deactivated')?.data).toMatchObject({
      customerId: customer.id,
      reason: 'maximum_retry_attempts_reached',
      subscriptions: 1,
      destination: `https://localhost:${customerReceiver.port}`,
    });
    const metrics = await first.request('GET', '/metrics');
    expect(metrics.text).toMatch(/# TYPE herald_alerts_total counter/);
  });
});
