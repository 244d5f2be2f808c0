/**
 * Recovering the Deliveries page's filtered failures (POST /blockchain-events/callbacks/recover with the
 * delivery log's filters, docs/reference/api.md#recover-callbacks-by-filter) on a real database with a real
 * delivery worker and HTTPS receiver: the dry run counts what the job would take and what it leaves on
 * inactive subscriptions; the job queues exactly the filtered failures again, which are delivered; a
 * customer has at most MAX_UNFINISHED_RECOVERIES_PER_CUSTOMER such jobs unfinished (429 beyond); and the
 * runner gives customers turns, so a small job started after another customer's large one is done first.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRecoveryRunner } from '../src/delivery/recovery.ts';
import { MAX_UNFINISHED_RECOVERIES_PER_CUSTOMER } from '../src/services/recoveries.ts';
import { destinationOf } from '../src/store/callbacks.ts';
import { getRecovery } from '../src/store/recoveries.ts';
import { startTestApp, type TestApp, type TestCustomer } from './harness.ts';
import { receiverDelivery } from './support/followed-app.ts';
import { type Receiver, startReceiver } from './support/receiver.ts';
import { createTestCa, writeCaFile } from './support/tls.ts';
import { until } from './support/wait.ts';

let t: TestApp;
let receiver: Receiver;
const nowSeconds = () => Math.floor(Date.now() / 1000);

beforeAll(async () => {
  const ca = await createTestCa();
  receiver = await startReceiver({ ca });
  t = await startTestApp({
    delivery: receiverDelivery(writeCaFile(ca.caPem)),
  });
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

/** A subscription of the customer (as stored), with `failed` callbacks left as the last retry leaves them. */
async function withFailures(
  c: TestCustomer,
  options: { blockchain: string; network: string; active?: boolean; failed: number; path: string },
): Promise<{ id: string; keys: string[] }> {
  const db = t.app.database.db;
  const url = `${receiver.url}${options.path}`;
  const target = randomUUID();
  const [row] = await db.query<{ id: string }>(
    'test:filtered-subscription',
    `INSERT INTO subscriptions (id, customer_id, event_type, blockchain, network, transaction_id, target, callback_url, callback_host,
       allow_duplicates, duplicate_key, api_version, is_active)
     VALUES (gen_random_uuid(), $1, 'TRANSACTION_MINED', $2, $3, $4::text, $4::text, $5, 'localhost', true, sha256(convert_to($4::text, 'UTF8')), '2021-03-20', $6)
     RETURNING id`,
    [c.id, options.blockchain, options.network, target, url, options.active ?? true],
  );
  const id = row?.id as string;
  const keys = Array.from({ length: options.failed }, (_, i) => `${options.path.slice(1)}-${i}-${target.slice(0, 8)}`);
  await db.query(
    'test:filtered-callbacks',
    `INSERT INTO callbacks (id, customer_id, subscription_id, event_type, idempotency_key, body, callback_url, destination, status, attempts, finished_at, next_attempt_at)
     SELECT gen_random_uuid(), $2, $1, 'TRANSACTION_MINED', k, json_build_object('idempotencyKey', k)::text, $4, $5, 'failed', 1, now(), now()
     FROM unnest($3::text[]) k`,
    [id, c.id, keys, url, destinationOf(url)],
  );
  return { id, keys };
}

const received = (path: string) => receiver.received.filter((r) => r.path === path).map((r) => JSON.parse(r.rawBody.toString('utf8')).idempotencyKey as string);

describe('recovering the filtered failures', () => {
  it('counts with a dry run (inactive subscriptions apart), then queues exactly the filtered failures again', async () => {
    const c = await t.customer({ domains: ['localhost'] });
    const eth = await withFailures(c, { blockchain: 'ethereum', network: 'goerli', failed: 3, path: '/eth' });
    await withFailures(c, { blockchain: 'bitcoin', network: 'testnet', failed: 2, path: '/btc' });
    await withFailures(c, { blockchain: 'ethereum', network: 'goerli', active: false, failed: 4, path: '/paused' });
    const since = nowSeconds() - 600;
    const recover = (item: Record<string, unknown>) => t.request('POST', '/blockchain-events/callbacks/recover', { key: c.key, body: { data: { item } } });

    const dryEth = await recover({ since, blockchain: 'ethereum', dryRun: true });
    expect(dryEth.status, dryEth.text).toBe(200);
    expect(dryEth.body.data.item).toEqual({ found: 3, inactive: 4, inactiveSubscriptions: 1 });
    expect((await recover({ since, dryRun: true })).body.data.item).toEqual({ found: 5, inactive: 4, inactiveSubscriptions: 1 });
    expect((await recover({ since, network: 'testnet', dryRun: true })).body.data.item).toEqual({ found: 2, inactive: 0, inactiveSubscriptions: 0 });
    expect((await recover({ since, referenceId: eth.id, dryRun: true })).body.data.item.found).toBe(3);
    const both = await recover({ since, referenceId: eth.id, callbackUrl: `${receiver.url}/eth` });
    expect(both.status).toBe(409);
    expect(both.body.error.code).toBe('invalid_data');

    const started = await recover({ since, blockchain: 'ethereum', network: 'goerli' });
    expect(started.status, started.text).toBe(202);
    expect(started.body.data.item).toMatchObject({ state: 'queued', found: 3, blockchain: 'ethereum', network: 'goerli' });
    const id = started.body.data.item.recoveryId as string;
    await until('the job done', async () => (await getRecovery(t.app.database.db, c.id, id))?.state === 'done', 20_000);
    await until('the three delivered', async () => received('/eth').length === 3, 20_000);
    expect(received('/eth').sort()).toEqual([...eth.keys].sort());
    expect(received('/btc')).toEqual([]);
    expect(received('/paused')).toEqual([]);
    const progress = await t.request('GET', `/blockchain-events/recoveries/${id}`, { key: c.key });
    expect(progress.body.data.item).toMatchObject({ found: 3, queued: 3, creditsConsumed: 3 * t.config.costs.recoverPerCallback });
  });

  it('bounds the unfinished jobs of a customer (429 beyond), and gives customers turns: a small job after a large one is done first', async () => {
    // The app's runner stops: the jobs below stay unfinished until this test's own runner takes them.
    await t.app.recoveries?.stop();
    const db = t.app.database.db;
    const since = nowSeconds() - 600;
    const capped = await t.customer({ domains: ['localhost'] });
    await withFailures(capped, { blockchain: 'ethereum', network: 'goerli', failed: 1, path: '/capped' });
    const start = (c: TestCustomer) =>
      t.request('POST', '/blockchain-events/callbacks/recover', { key: c.key, body: { data: { item: { since, blockchain: 'ethereum' } } } });
    for (let i = 0; i < MAX_UNFINISHED_RECOVERIES_PER_CUSTOMER; i++) expect((await start(capped)).status).toBe(202);
    const refused = await start(capped);
    expect(refused.status, refused.text).toBe(429);
    expect(refused.body.error.code).toBe('request_limit_reached');
    // Another customer is not held by this one's cap.
    const large = await t.customer({ domains: ['localhost'] });
    const small = await t.customer({ domains: ['localhost'] });
    await withFailures(large, { blockchain: 'ethereum', network: 'goerli', failed: 40, path: '/large' });
    await withFailures(small, { blockchain: 'ethereum', network: 'goerli', failed: 2, path: '/small' });
    const largeJob = (await start(large)).body.data.item.recoveryId as string;
    const smallJob = (await start(small)).body.data.item.recoveryId as string;
    await db.query('test:capped-done', `UPDATE recoveries SET state = 'done' WHERE customer_id = $1`, [capped.id]);

    // Two callbacks a chunk, one chunk a turn: the large job has 20 chunks, each waiting for the one before to be sent.
    const runner = startRecoveryRunner({ db, logger: { info() {}, warn() {}, error() {} }, costPerCallback: 5n, pollMs: 50, chunk: 2, turnMs: 1 });
    try {
      await until('the small job done', async () => (await getRecovery(db, small.id, smallJob))?.state === 'done', 20_000);
      const largeNow = await getRecovery(db, large.id, largeJob);
      expect(largeNow?.state).toBe('running');
      expect(largeNow?.queued).toBeLessThan(40);
      await until('the large job done too', async () => (await getRecovery(db, large.id, largeJob))?.state === 'done', 60_000);
      await until('every callback delivered', async () => received('/large').length === 40 && received('/small').length === 2, 30_000);
    } finally {
      await runner.stop();
    }
  }, 120_000);
});
