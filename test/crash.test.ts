/**
 * Crash safety of delivery (docs/reference/events/README.md#idempotency): a delivery worker killed with SIGKILL in
 * the middle of a batch loses nothing. ~3,000 callbacks are queued; a worker runs as a child process
 * (`herald serve --roles delivery`), is killed once the receiver has seen some hundreds of requests, and
 * a second worker, started after it, delivers the rest, the dead worker's claims included (its lease is
 * short here). Every idempotencyKey must reach the receiver at least once, and every duplicate must
 * carry the same key and the very same body bytes.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { callbackBody } from '../src/domain/callbacks.ts';
import type { NewCallback } from '../src/domain/events.ts';
import { enqueueCallbacks } from '../src/store/callbacks.ts';
import { SAMPLE, startTestApp, type TestApp } from './harness.ts';
import { type HeraldProcess, killAllHeralds, spawnHerald } from './support/herald-process.ts';
import { type Receiver, startReceiver } from './support/receiver.ts';
import { writeCaFile } from './support/tls.ts';

const SUBSCRIPTIONS = 3;
const PER_SUBSCRIPTION = 1000;
const TOTAL = SUBSCRIPTIONS * PER_SUBSCRIPTION;
/** The first worker is killed once the receiver has seen this many requests. */
const KILL_AFTER = 600;

let t: TestApp;
let receiver: Receiver;
let dir: string;

/** `herald serve --roles delivery` on the test's database, as a child process. */
function startWorker(configFile: string, caFile: string): HeraldProcess {
  return spawnHerald(['--roles', 'delivery', '--config', configFile], {
    DATABASE_URL: t.config.databaseUrl,
    HERALD_CONFIG: '',
    HERALD_ROLES: '',
    HERALD_DELIVERY_ALLOW_NETWORKS: '127.0.0.1/32,::1/128',
    HERALD_DELIVERY_CA_FILE: caFile,
    HERALD_LOG_LEVEL: 'warn',
  });
}

async function deliveredCount(): Promise<number> {
  const [row] = await t.app.database.db.query<{ n: number }>('test:crash-delivered', "SELECT count(*)::int AS n FROM callbacks WHERE status = 'delivered'", []);
  return row?.n ?? 0;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'herald-crash-'));
  receiver = await startReceiver();
  // Headers at once, the body 10 ms later: each POST takes ~10 ms, so the 16 requests the worker keeps
  // in flight per destination deliver ~1,000 callbacks/s and the kill lands in the middle of the work.
  receiver.setDefault({ kind: 'slow-body', status: 200, chunkDelayMs: 10, chunks: 1 });
  // Migrated database, customers and subscriptions; this process runs no worker (api role only).
  t = await startTestApp({ roles: ['api'] });
});

afterAll(async () => {
  killAllHeralds();
  await t?.close();
  await receiver?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

it('a worker killed mid-batch loses no callback; duplicates repeat the same key and body', { timeout: 60_000 }, async () => {
  const customer = await t.customer({ domains: ['localhost'] });
  const callbacks: NewCallback[] = [];
  for (let s = 0; s < SUBSCRIPTIONS; s++) {
    const created = await t.request('POST', '/blockchain-events/ethereum/goerli/subscriptions/transaction-mined', {
      key: customer.key,
      body: {
        data: { item: { transactionId: `0x${randomBytes(32).toString('hex')}`, callbackUrl: `${receiver.url}/crash/${s}`, callbackSecretKey: `secret-${s}` } },
      },
    });
    expect(created.status, created.text).toBe(200);
    const sub = created.body.data.item;
    for (let i = 0; i < PER_SUBSCRIPTION; i++) {
      const key = randomBytes(32).toString('hex');
      callbacks.push({
        id: randomUUID(),
        customerId: customer.id,
        subscriptionId: sub.referenceId,
        eventType: 'TRANSACTION_MINED',
        idempotencyKey: key,
        body: callbackBody({ id: sub.referenceId, eventType: 'TRANSACTION_MINED', apiVersion: '2021-03-20' }, key, {
          blockchain: 'ethereum',
          network: 'goerli',
          transactionId: SAMPLE.evmTx,
          minedInBlock: { height: 1000 + i, hash: `0x${randomBytes(32).toString('hex')}`, timestamp: 1_700_000_000 + i },
        }),
        callbackUrl: sub.callbackUrl,
      });
    }
  }
  await t.app.database.db.transaction('test:crash-enqueue', (tx) => enqueueCallbacks(tx, callbacks));
  const bodies = new Map(callbacks.map((c) => [c.idempotencyKey, c.body]));

  const configFile = join(dir, 'herald.config.json');
  // A short lease, so the second worker finds the dead one's claims due again within seconds.
  writeFileSync(configFile, JSON.stringify({ delivery: { leaseSeconds: 2, pollIntervalMs: 100 } }));
  const caFile = writeCaFile(receiver.caPem);

  const first = startWorker(configFile, caFile);
  await Promise.race([
    receiver.waitFor(KILL_AFTER, 30_000),
    first.exited.then((code) => {
      throw new Error(`the first worker exited (${code}) before delivering ${KILL_AFTER}:\n${first.output()}`);
    }),
  ]);
  first.child.kill('SIGKILL');
  expect(await first.exited).toBe('SIGKILL');
  const seenAtKill = receiver.received.length;
  const deliveredAtKill = await deliveredCount();
  // The kill landed mid-run: callbacks were left to deliver, some of them claimed by the dead worker.
  expect(seenAtKill).toBeLessThan(TOTAL);
  expect(deliveredAtKill).toBeLessThan(TOTAL);

  const second = startWorker(configFile, caFile);
  const deadline = Date.now() + 30_000;
  let delivered = deliveredAtKill;
  while (delivered < TOTAL) {
    if (Date.now() > deadline) throw new Error(`only ${delivered} of ${TOTAL} callbacks delivered after the restart:\n${second.output()}`);
    if (second.child.exitCode !== null) throw new Error(`the second worker exited (${second.child.exitCode}):\n${second.output()}`);
    await new Promise((r) => setTimeout(r, 100));
    delivered = await deliveredCount();
  }
  second.child.kill('SIGTERM');
  await second.exited;

  const [states] = await t.app.database.db.query<{ pending: number; failed: number }>(
    'test:crash-states',
    "SELECT count(*) FILTER (WHERE status = 'pending')::int AS pending, count(*) FILTER (WHERE status = 'failed')::int AS failed FROM callbacks",
    [],
  );
  expect(states).toEqual({ pending: 0, failed: 0 });

  // Every key at least once, nothing unknown, and every copy of one key with the same body bytes.
  const seen = new Map<string, Buffer[]>();
  for (const request of receiver.received) {
    const id = request.headers['webhook-id'];
    expect(typeof id, 'every POST carries webhook-id').toBe('string');
    const copies = seen.get(id as string) ?? [];
    copies.push(request.rawBody);
    seen.set(id as string, copies);
  }
  const missing = [...bodies.keys()].filter((key) => !seen.has(key));
  expect(missing).toEqual([]);
  const unknown = [...seen.keys()].filter((key) => !bodies.has(key));
  expect(unknown).toEqual([]);
  let duplicates = 0;
  for (const [key, copies] of seen) {
    duplicates += copies.length - 1;
    const expected = Buffer.from(bodies.get(key) as string);
    for (const copy of copies) expect(copy.equals(expected), `body of ${key}`).toBe(true);
    // The key in the body is the header's key.
    expect(JSON.parse((copies[0] as Buffer).toString('utf8')).idempotencyKey).toBe(key);
  }
  expect(seen.size).toBe(TOTAL);
  expect(receiver.received.length).toBe(TOTAL + duplicates);
  console.log(
    `crash test: ${TOTAL} callbacks; first worker killed after ${seenAtKill} requests received (${deliveredAtKill} recorded delivered); ` +
      `${receiver.received.length} requests in all, ${duplicates} duplicate(s), 0 missing`,
  );
});
