/**
 * Single creates grouped per customer (src/services/grouped-creates.ts): the creates of one customer
 * that arrive while a transaction of it is in flight go together in the next one, and each still gets
 * the answer it would get alone, in arrival order: a create that runs out of credits, a twin or a
 * create over the cap fails alone and costs nothing; the others of its group are created and charged.
 *
 * The class is driven directly on the test database, so the groups are known: the first create of an
 * idle customer starts a transaction at once, alone; the creates made while it is in flight form the
 * next group. Over HTTP, concurrent creates of one customer are checked end to end as well.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../src/domain/errors.ts';
import type { Caller } from '../src/services/context.ts';
import { GroupedCreates } from '../src/services/grouped-creates.ts';
import { newSubscriptionOf } from '../src/services/subscriptions.ts';
import { findCustomerByName, findKeyOwner } from '../src/store/customers.ts';
import { SAMPLE, startTestApp, type TestApp, type TestCustomer } from './harness.ts';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const ENDPOINT = 'transaction-mined';
const tx = (n: number) => `0x${n.toString(16).padStart(64, '0')}`;

async function callerOf(c: TestCustomer): Promise<Caller> {
  const owner = await findKeyOwner(t.app.database.db, c.key);
  if (!owner) throw new Error('the test key has no owner');
  return { owner, endpoint: ENDPOINT, apiVersion: '2021-03-20', requestId: 'test' };
}

/** A create request of `caller` for transaction `n` (its own identity unless two share an n). */
function request(caller: Caller, n: number, options: { cost?: bigint; allowDuplicates?: boolean } = {}) {
  const { candidate } = newSubscriptionOf(t, caller, 'TRANSACTION_MINED', 'ethereum', 'goerli', {
    transactionId: tx(n),
    callbackUrl: SAMPLE.callbackUrl,
    allowDuplicates: options.allowDuplicates,
  });
  return { cap: caller.owner.maxActiveSubscriptions, cost: options.cost ?? 1000n, endpoint: ENDPOINT, candidate };
}

/** Settles every create, so one refusal does not hide the others' answers. */
const settle = <T>(promises: Promise<T>[]) => Promise.allSettled(promises);

async function balance(c: TestCustomer): Promise<bigint | undefined> {
  return (await findCustomerByName(t.app.database.db, c.name))?.credits;
}

async function rows(c: TestCustomer): Promise<number> {
  const result = await t.app.database.db.query<{ n: number }>('test:count', 'SELECT count(*)::int AS n FROM subscriptions WHERE customer_id = $1', [c.id]);
  return result[0]?.n ?? 0;
}

function errorCode(result: PromiseSettledResult<unknown>): string | undefined {
  return result.status === 'rejected' && result.reason instanceof ApiError ? result.reason.code : undefined;
}

describe('grouped creates', () => {
  it('a group answers each create in arrival order: the ones the credits cover are created and charged, the others 402 with nothing inserted', async () => {
    const c = await t.customer({ credits: 4500n });
    const caller = await callerOf(c);
    const creates = new GroupedCreates(t.app.database.db);
    const first = creates.create(c.id, request(caller, 1)); // alone: its transaction starts now
    const group = [2, 3, 4, 5, 6].map((n) => creates.create(c.id, request(caller, n))); // the next group
    const [alone, ...rest] = await settle([first, ...group]);
    expect(alone?.status).toBe('fulfilled');
    expect(rest.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled', 'rejected', 'rejected']);
    const available = rest.flatMap((r) => (r.status === 'fulfilled' && r.value ? [r.value.charge.available] : []));
    expect(available).toEqual([2500n, 1500n, 500n]);
    expect(rest.slice(3).map(errorCode)).toEqual(['insufficient_credits', 'insufficient_credits']);
    expect((rest[3] as PromiseRejectedResult).reason.message).toContain('costs 1000 credits but the customer has 500');
    expect(await balance(c)).toBe(500n);
    expect(await rows(c)).toBe(4);
  });

  it('one create running out of credits mid-group does not fail a cheaper one after it', async () => {
    const c = await t.customer({ credits: 2500n });
    const caller = await callerOf(c);
    const creates = new GroupedCreates(t.app.database.db);
    const first = creates.create(c.id, request(caller, 10));
    const group = [creates.create(c.id, request(caller, 11, { cost: 2000n })), creates.create(c.id, request(caller, 12, { cost: 500n }))];
    const [alone, expensive, cheap] = await settle([first, ...group]);
    expect(alone?.status).toBe('fulfilled');
    expect(errorCode(expensive as PromiseSettledResult<unknown>)).toBe('insufficient_credits');
    expect(cheap?.status === 'fulfilled' && cheap.value?.charge).toMatchObject({ consumed: 500n, available: 1000n });
    expect(await balance(c)).toBe(1000n);
    const made = await t.app.database.db.query<{ transaction_id: string }>(
      'test:made',
      'SELECT transaction_id FROM subscriptions WHERE customer_id = $1 ORDER BY created_at',
      [c.id],
    );
    expect(made.map((r) => r.transaction_id)).toEqual([tx(10), tx(12)]);
  });

  it('duplicates inside one group: the first is created, a twin without allowDuplicates is refused and not charged, one with it is created', async () => {
    const c = await t.customer({ credits: 100_000n });
    const caller = await callerOf(c);
    const creates = new GroupedCreates(t.app.database.db);
    const first = creates.create(c.id, request(caller, 20));
    const group = [
      creates.create(c.id, request(caller, 21)),
      creates.create(c.id, request(caller, 21)), // twin of the one just before it, in the same group
      creates.create(c.id, request(caller, 21, { allowDuplicates: true })),
      creates.create(c.id, request(caller, 20)), // twin of the first group's row, now committed
      creates.create(c.id, request(caller, 22)),
    ];
    const results = await settle([first, ...group]);
    expect(results.every((r) => r.status === 'fulfilled')).toBe(true);
    const created = results.map((r) => (r.status === 'fulfilled' ? r.value !== undefined : 'failed'));
    expect(created).toEqual([true, true, false, true, false, true]);
    expect(await balance(c)).toBe(100_000n - 4000n);
    expect(await rows(c)).toBe(4);
  });

  it("a capped customer's group stops at the cap; the refused creates cost nothing", async () => {
    const c = await t.customer({ credits: 100_000n, plan: { maxActiveSubscriptions: 3 } });
    const caller = await callerOf(c);
    const creates = new GroupedCreates(t.app.database.db);
    const first = creates.create(c.id, request(caller, 30));
    const group = [31, 32, 33, 34].map((n) => creates.create(c.id, request(caller, n)));
    const results = await settle([first, ...group]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled', 'rejected', 'rejected']);
    expect(results.slice(3).map(errorCode)).toEqual(['blockchain_events_callbacks_limit_reached', 'blockchain_events_callbacks_limit_reached']);
    expect(await balance(c)).toBe(97_000n);
    expect(await rows(c)).toBe(3);
  });

  it('announces every created row of a group to the ingest processes (NOTIFY herald_subscriptions)', async () => {
    const c = await t.customer();
    const caller = await callerOf(c);
    const listener = new pg.Client({ connectionString: t.config.databaseUrl });
    await listener.connect();
    try {
      const announced: string[] = [];
      listener.on('notification', (n) => announced.push(n.payload ?? ''));
      await listener.query('LISTEN herald_subscriptions');
      const creates = new GroupedCreates(t.app.database.db);
      const made = await Promise.all([40, 41, 42, 43].map((n) => creates.create(c.id, request(caller, n))));
      const ids = made.map((m) => m?.subscription.id);
      await expect.poll(() => ids.every((id) => announced.some((p) => p.includes(`"${id}"`))), { timeout: 5000 }).toBe(true);
    } finally {
      await listener.end();
    }
  });

  it('two writers (as two processes) creating for one capped customer at once stop exactly at the cap: the count is taken under the cap lock in the write', async () => {
    const c = await t.customer({ credits: 1_000_000n, plan: { maxActiveSubscriptions: 25 } });
    const caller = await callerOf(c);
    const writers = [new GroupedCreates(t.app.database.db), new GroupedCreates(t.app.database.db)];
    const results = await settle(Array.from({ length: 60 }, (_, i) => (writers[i % 2] as GroupedCreates).create(c.id, request(caller, 500 + i))));
    const refused = results.filter((r) => r.status === 'rejected');
    expect(results.filter((r) => r.status === 'fulfilled' && r.value !== undefined)).toHaveLength(25);
    expect(refused.map(errorCode)).toEqual(Array(35).fill('blockchain_events_callbacks_limit_reached'));
    expect(await rows(c)).toBe(25);
    expect(await balance(c)).toBe(1_000_000n - 25n * 1000n);
  });

  it('a group whose read goes stale at every write (another writer commits a twin just before it) still answers every create, never with an error', async () => {
    const c = await t.customer({ credits: 100_000n });
    const caller = await callerOf(c);
    const creates = new GroupedCreates(t.app.database.db);
    const requests = Array.from({ length: 9 }, (_, i) => request(caller, 600 + i));
    // Another writer makes twins of requests 1 to 6, each uncommitted (invisible to the group's read)
    // until the group's insert waits for it, then committed: the insert fails, the group is decided
    // again and meets the next twin. Two connections, so the next twin is in place before the commit.
    const writers = [new pg.Client({ connectionString: t.config.databaseUrl }), new pg.Client({ connectionString: t.config.databaseUrl })];
    await Promise.all(writers.map((w) => w.connect()));
    const twins = requests.slice(1, 7);
    try {
      const beginTwin = async (w: pg.Client, r: (typeof requests)[number]): Promise<number> => {
        await w.query('BEGIN');
        await w.query(
          `INSERT INTO subscriptions (id, customer_id, event_type, blockchain, network, transaction_id, target, callback_url, callback_host,
             allow_duplicates, duplicate_key, api_version)
           VALUES (gen_random_uuid(), $1, 'TRANSACTION_MINED', 'ethereum', 'goerli', $2, $2, $3, $4, false, $5, '2021-03-20')`,
          [c.id, r.candidate.transactionId, r.candidate.callbackUrl, r.candidate.callbackHost, r.candidate.duplicateKey],
        );
        return (await w.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid as number;
      };
      const waitedOn = async (pid: number) =>
        await expect
          .poll(
            async () =>
              (
                await t.app.database.db.query<{ n: number }>(
                  'test:blocked',
                  'SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY (pg_blocking_pids(pid))',
                  [pid],
                )
              )[0]?.n,
            { timeout: 10_000, interval: 10 },
          )
          .toBeGreaterThan(0);
      let holder = writers[0] as pg.Client;
      let pid = await beginTwin(holder, twins[0] as (typeof twins)[number]);
      const answers = settle(requests.map((r) => creates.create(c.id, r))); // request 0 alone, then the group of 1 to 8
      for (let k = 1; k <= twins.length; k++) {
        await waitedOn(pid);
        const next = writers[k % 2] as pg.Client;
        const nextPid = k < twins.length ? await beginTwin(next, twins[k] as (typeof twins)[number]) : 0;
        await holder.query('COMMIT');
        holder = next;
        pid = nextPid;
      }
      const results = await answers;
      expect(results.map((r) => r.status)).toEqual(Array(9).fill('fulfilled'));
      expect(results.map((r) => (r.status === 'fulfilled' ? r.value !== undefined : 'failed'))).toEqual([
        true,
        false,
        false,
        false,
        false,
        false,
        false,
        true,
        true,
      ]);
      expect(await balance(c)).toBe(100_000n - 3000n);
      expect(await rows(c)).toBe(9); // 3 created, 6 twins of the other writer
    } finally {
      await Promise.all(writers.map((w) => w.end()));
    }
  });

  it('over HTTP, 60 concurrent creates of one customer with credits for 40: exactly 40 created, each charged once, balances all distinct', async () => {
    const c = await t.customer({ credits: 40_000n });
    const mined = '/blockchain-events/ethereum/goerli/subscriptions/transaction-mined';
    const results = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        t.request('POST', mined, { key: c.key, body: { data: { item: { transactionId: tx(100 + (i % 55)), callbackUrl: SAMPLE.callbackUrl } } } }),
      ),
    );
    const ok = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status !== 200);
    expect(refused.every((r) => ['insufficient_credits', 'already_exists'].includes(r.body.error.code))).toBe(true);
    expect(ok).toHaveLength(40);
    // Each created one says what it left: 40 distinct balances from 39,000 down to 0.
    const available = ok.map((r) => Number(r.headers.get('x-credits-available'))).sort((a, b) => b - a);
    expect(available).toEqual(Array.from({ length: 40 }, (_, i) => 39_000 - i * 1000));
    expect(await balance(c)).toBe(0n);
    expect(await rows(c)).toBe(40);
  });
});
