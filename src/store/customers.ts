/**
 * Customers (tenants), their plans, API keys and credits. Credits live in CREDIT_BUCKETS rows per
 * customer (see the migration for why); the balance is their sum.
 */
import { createHash, randomBytes, randomInt } from 'node:crypto';
import type { Db, Queryable } from './db.ts';

export const CREDIT_BUCKETS = 16;

export interface Plan {
  mainnetAllowed: boolean;
  maxActiveSubscriptions: number | null;
  requestsPerSecond: number;
}

export interface Customer extends Plan {
  id: string;
  name: string;
  credits: bigint;
}

/** What an API key opens: its customer and that customer's plan. */
export interface KeyOwner extends Plan {
  keyId: string;
  customerId: string;
  customerName: string;
  allowedEndpoints: string[] | null;
}

export function hashApiKey(key: string): Buffer {
  return createHash('sha256').update(key).digest();
}

/** Spread an amount over the buckets; the first takes the remainder, so the parts sum to the amount. */
function splitOverBuckets(amount: bigint): bigint[] {
  const n = BigInt(CREDIT_BUCKETS);
  return Array.from({ length: CREDIT_BUCKETS }, (_, i) => amount / n + (i === 0 ? amount % n : 0n));
}

export async function createCustomer(db: Db, name: string, plan: Plan, credits: bigint): Promise<Customer> {
  return await db.transaction('customers:create', async (tx) => {
    const [row] = await tx.query<{ id: string }>(
      'customers:insert',
      `INSERT INTO customers (name, mainnet_allowed, max_active_subscriptions, requests_per_second)
       VALUES ($1, $2, $3, $4) RETURNING id`,
      [name, plan.mainnetAllowed, plan.maxActiveSubscriptions, plan.requestsPerSecond],
    );
    const id = (row as { id: string }).id;
    await tx.query(
      'credits:init',
      `INSERT INTO credit_buckets (customer_id, bucket, credits)
       SELECT $1, b - 1, c FROM unnest($2::bigint[]) WITH ORDINALITY AS t(c, b)`,
      [id, splitOverBuckets(credits).map(String)],
    );
    return { id, name, credits, ...plan };
  });
}

export async function findCustomerByName(q: Queryable, name: string): Promise<Customer | undefined> {
  const [row] = await q.query<{
    id: string;
    name: string;
    mainnet_allowed: boolean;
    max_active_subscriptions: number | null;
    requests_per_second: number;
    credits: string;
  }>(
    'customers:by-name',
    `SELECT c.*, (SELECT coalesce(sum(credits), 0) FROM credit_buckets b WHERE b.customer_id = c.id) AS credits
     FROM customers c WHERE c.name = $1`,
    [name],
  );
  if (!row) return undefined;
  return {
    id: row.id,
    name: row.name,
    mainnetAllowed: row.mainnet_allowed,
    maxActiveSubscriptions: row.max_active_subscriptions,
    requestsPerSecond: row.requests_per_second,
    credits: BigInt(row.credits),
  };
}

export async function countCustomers(q: Queryable): Promise<number> {
  const [row] = await q.query<{ n: number }>('customers:count', 'SELECT count(*)::int AS n FROM customers');
  return row?.n ?? 0;
}

export async function createApiKey(
  q: Queryable,
  customerId: string,
  options: { label?: string; allowedEndpoints?: string[] } = {},
): Promise<{ id: string; key: string }> {
  const key = `hk_${randomBytes(32).toString('base64url')}`;
  const [row] = await q.query<{ id: string }>(
    'keys:insert',
    `INSERT INTO api_keys (customer_id, key_hash, key_prefix, label, allowed_endpoints) VALUES ($1, $2, $3, $4, $5) RETURNING id`,
    [customerId, hashApiKey(key), key.slice(0, 10), options.label ?? null, options.allowedEndpoints ?? null],
  );
  return { id: (row as { id: string }).id, key };
}

/** Revokes by key id or by the key's visible prefix; returns how many keys were revoked. */
export async function revokeApiKey(q: Queryable, customerId: string, idOrPrefix: string): Promise<number> {
  const rows = await q.query(
    'keys:revoke',
    `UPDATE api_keys SET revoked_at = now()
     WHERE customer_id = $1 AND revoked_at IS NULL AND (id::text = $2 OR key_prefix = $2) RETURNING id`,
    [customerId, idOrPrefix],
  );
  return rows.length;
}

export async function listApiKeys(q: Queryable, customerId: string) {
  return await q.query<{ id: string; key_prefix: string; label: string | null; allowed_endpoints: string[] | null; created_at: Date; revoked_at: Date | null }>(
    'keys:list',
    'SELECT id, key_prefix, label, allowed_endpoints, created_at, revoked_at FROM api_keys WHERE customer_id = $1 ORDER BY id',
    [customerId],
  );
}

export async function findKeyOwner(q: Queryable, key: string): Promise<KeyOwner | undefined> {
  const [row] = await q.query<{
    key_id: string;
    customer_id: string;
    name: string;
    allowed_endpoints: string[] | null;
    mainnet_allowed: boolean;
    max_active_subscriptions: number | null;
    requests_per_second: number;
  }>(
    'keys:owner',
    `SELECT k.id AS key_id, k.customer_id, k.allowed_endpoints, c.name, c.mainnet_allowed, c.max_active_subscriptions, c.requests_per_second
     FROM api_keys k JOIN customers c ON c.id = k.customer_id
     WHERE k.key_hash = $1 AND k.revoked_at IS NULL`,
    [hashApiKey(key)],
  );
  if (!row) return undefined;
  return {
    keyId: row.key_id,
    customerId: row.customer_id,
    customerName: row.name,
    allowedEndpoints: row.allowed_endpoints,
    mainnetAllowed: row.mainnet_allowed,
    maxActiveSubscriptions: row.max_active_subscriptions,
    requestsPerSecond: row.requests_per_second,
  };
}

export async function updatePlan(q: Queryable, customerId: string, plan: Partial<Plan>): Promise<void> {
  await q.query(
    'customers:update-plan',
    `UPDATE customers SET
       mainnet_allowed = coalesce($2, mainnet_allowed),
       max_active_subscriptions = CASE WHEN $3::boolean THEN $4 ELSE max_active_subscriptions END,
       requests_per_second = coalesce($5, requests_per_second)
     WHERE id = $1`,
    [customerId, plan.mainnetAllowed ?? null, plan.maxActiveSubscriptions !== undefined, plan.maxActiveSubscriptions ?? null, plan.requestsPerSecond ?? null],
  );
}

export async function addCredits(q: Queryable, customerId: string, amount: bigint): Promise<bigint> {
  const [row] = await q.query<{ total: string }>(
    'credits:add',
    `WITH added AS (
       UPDATE credit_buckets b SET credits = b.credits + t.c
       FROM unnest($2::bigint[]) WITH ORDINALITY AS t(c, n)
       WHERE b.customer_id = $1 AND b.bucket = t.n - 1
       RETURNING b.credits)
     SELECT sum(credits) AS total FROM added`,
    [customerId, splitOverBuckets(amount).map(String)],
  );
  return BigInt(row?.total ?? 0);
}

export type DebitResult = { ok: true; available: bigint } | { ok: false; available: bigint };

/**
 * Takes `cost` credits from the customer, or nothing when the balance does not cover it.
 *
 * Fast path: the first bucket, counting from a random one, that covers the cost and that no other
 * transaction holds pays it alone (SKIP LOCKED: it never waits, so concurrent requests of one customer
 * rarely meet). Otherwise every bucket is locked in bucket order, the total is checked, and the rest is
 * spread evenly again so the fast path works next time. `atomically` runs its argument in a
 * transaction (the caller's own, when it has one).
 */
export async function debitCredits(
  q: Queryable,
  customerId: string,
  cost: bigint,
  atomically: <T>(work: (tx: Queryable) => Promise<T>) => Promise<T>,
): Promise<DebitResult> {
  if (cost === 0n) {
    const [row] = await q.query<{ total: string }>('credits:balance', 'SELECT coalesce(sum(credits), 0) AS total FROM credit_buckets WHERE customer_id = $1', [
      customerId,
    ]);
    return { ok: true, available: BigInt(row?.total ?? 0) };
  }
  const [fast] = await q.query<{ debited: boolean; total: string }>(
    'credits:debit',
    `WITH pick AS (
       SELECT bucket FROM credit_buckets WHERE customer_id = $1 AND credits >= $3
       ORDER BY (bucket + ${CREDIT_BUCKETS} - $2) % ${CREDIT_BUCKETS} LIMIT 1 FOR UPDATE SKIP LOCKED),
     d AS (
       UPDATE credit_buckets b SET credits = b.credits - $3 FROM pick
       WHERE b.customer_id = $1 AND b.bucket = pick.bucket RETURNING 1)
     SELECT EXISTS (SELECT 1 FROM d) AS debited,
            (SELECT coalesce(sum(credits), 0) FROM credit_buckets WHERE customer_id = $1) AS total`,
    [customerId, randomInt(CREDIT_BUCKETS), String(cost)],
  );
  // The sum is read from the statement's snapshot, before its own update.
  if (fast?.debited) return { ok: true, available: BigInt(fast.total) - cost };

  return await atomically(async (tx) => {
    const buckets = await tx.query<{ credits: string }>(
      'credits:lock-all',
      'SELECT credits FROM credit_buckets WHERE customer_id = $1 ORDER BY bucket FOR UPDATE',
      [customerId],
    );
    const total = buckets.reduce((sum, b) => sum + BigInt(b.credits), 0n);
    if (total < cost) return { ok: false, available: total };
    await tx.query(
      'credits:rebalance',
      `UPDATE credit_buckets b SET credits = t.c
       FROM unnest($2::bigint[]) WITH ORDINALITY AS t(c, n)
       WHERE b.customer_id = $1 AND b.bucket = t.n - 1`,
      [customerId, splitOverBuckets(total - cost).map(String)],
    );
    return { ok: true, available: total - cost };
  });
}
