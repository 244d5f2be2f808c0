/** Customers (tenants), their plans, API keys and credits. */
import { createHash, randomBytes } from 'node:crypto';
import type { Db, Queryable } from './db.ts';

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

/** A plan as the customers table keeps it. */
interface PlanRow {
  mainnet_allowed: boolean;
  max_active_subscriptions: number | null;
  requests_per_second: number;
}

/** A customer's row (credits as PostgreSQL's numeric text). */
interface CustomerRow extends PlanRow {
  id: string;
  name: string;
  credits: string;
}

function planOf(row: PlanRow): Plan {
  return { mainnetAllowed: row.mainnet_allowed, maxActiveSubscriptions: row.max_active_subscriptions, requestsPerSecond: row.requests_per_second };
}

export function hashApiKey(key: string): Buffer {
  return createHash('sha256').update(key).digest();
}

export async function createCustomer(db: Db, name: string, plan: Plan, credits: bigint): Promise<Customer> {
  const [row] = await db.query<{ id: string }>(
    'customers:insert',
    `INSERT INTO customers (name, mainnet_allowed, max_active_subscriptions, requests_per_second, credits)
     VALUES ($1, $2, $3, $4, $5) RETURNING id`,
    [name, plan.mainnetAllowed, plan.maxActiveSubscriptions, plan.requestsPerSecond, String(credits)],
  );
  return { id: (row as { id: string }).id, name, credits, ...plan };
}

export async function findCustomerByName(q: Queryable, name: string): Promise<Customer | undefined> {
  const [row] = await q.query<CustomerRow>('customers:by-name', 'SELECT * FROM customers WHERE name = $1', [name]);
  if (!row) return undefined;
  return { id: row.id, name: row.name, ...planOf(row), credits: BigInt(row.credits) };
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

/** Revokes one key by id (again: keeps the first time); the time it was revoked, undefined when the customer has no such key. */
export async function revokeApiKeyById(q: Queryable, customerId: string, keyId: string): Promise<Date | undefined> {
  const [row] = await q.query<{ revoked_at: Date }>(
    'keys:revoke-by-id',
    'UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE customer_id = $1 AND id = $2 RETURNING revoked_at',
    [customerId, keyId],
  );
  return row?.revoked_at;
}

/** Customers by name, each with its plan, credits, active subscriptions and active (unrevoked) keys. */
export async function listCustomers(q: Queryable, page: { limit: number; offset: number }) {
  const [rows, counts] = await Promise.all([
    q.query<CustomerRow & { active_subscriptions: number; keys: number }>(
      'customers:list',
      `SELECT c.id, c.name, c.mainnet_allowed, c.max_active_subscriptions, c.requests_per_second, c.credits,
         (SELECT count(*)::int FROM subscriptions s WHERE s.customer_id = c.id AND s.is_active) AS active_subscriptions,
         (SELECT count(*)::int FROM api_keys k WHERE k.customer_id = c.id AND k.revoked_at IS NULL) AS keys
       FROM customers c ORDER BY c.name LIMIT $1 OFFSET $2`,
      [page.limit, page.offset],
    ),
    q.query<{ n: number }>('customers:count', 'SELECT count(*)::int AS n FROM customers'),
  ]);
  return {
    total: counts[0]?.n ?? 0,
    items: rows.map((r) => ({
      id: r.id,
      name: r.name,
      plan: planOf(r),
      credits: BigInt(r.credits),
      activeSubscriptions: r.active_subscriptions,
      keys: r.keys,
    })),
  };
}

export async function findKeyOwner(q: Queryable, key: string): Promise<KeyOwner | undefined> {
  const [row] = await q.query<PlanRow & { key_id: string; customer_id: string; name: string; allowed_endpoints: string[] | null }>(
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
    ...planOf(row),
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

/**
 * Sets the networks this customer's callbacks may reach although not public (added to the operator's
 * delivery.allowNetworks); [] removes them. Returns them as stored: PostgreSQL's spelling, prefix included.
 * The caller checks each entry first (PostgreSQL refuses a malformed one, but with a terse message).
 */
export async function setAllowNetworks(q: Queryable, customerId: string, networks: readonly string[]): Promise<string[]> {
  const [row] = await q.query<{ allow_networks: string[] }>(
    'customers:set-allow-networks',
    'UPDATE customers SET allow_networks = $2::inet[] WHERE id = $1 RETURNING allow_networks::text[] AS allow_networks',
    [customerId, networks],
  );
  return row?.allow_networks ?? [];
}

/** The customer's own allow-list (see setAllowNetworks); [] for none, or for an unknown customer. */
export async function allowNetworksOf(q: Queryable, customerId: string): Promise<string[]> {
  const [row] = await q.query<{ allow_networks: string[] }>(
    'customers:allow-networks',
    'SELECT allow_networks::text[] AS allow_networks FROM customers WHERE id = $1',
    [customerId],
  );
  return row?.allow_networks ?? [];
}

export async function addCredits(q: Queryable, customerId: string, amount: bigint): Promise<bigint> {
  const [row] = await q.query<{ credits: string }>('credits:add', 'UPDATE customers SET credits = credits + $2 WHERE id = $1 RETURNING credits', [
    customerId,
    String(amount),
  ]);
  return BigInt(row?.credits ?? 0);
}

export async function creditBalance(q: Queryable, customerId: string, options: { forUpdate?: boolean } = {}): Promise<bigint> {
  const [row] = options.forUpdate
    ? await q.query<{ credits: string }>('credits:balance-for-update', 'SELECT credits FROM customers WHERE id = $1 FOR UPDATE', [customerId])
    : await q.query<{ credits: string }>('credits:balance', 'SELECT credits FROM customers WHERE id = $1', [customerId]);
  return BigInt(row?.credits ?? 0);
}

export interface DebitResult {
  ok: boolean;
  available: bigint;
  /** The UTC day (YYYY-MM-DD) the usage was recorded under. */
  day?: string;
}

/** What a debit is for: recorded in credit_usage per endpoint and UTC day, by the debit's own statement. */
export interface UsageEntry {
  endpoint: string;
  /** Requests to count: 1 per API call; 0 for work charged later on behalf of one (a recovery's chunks). */
  requests: number;
  credits: bigint;
}

/**
 * Takes `cost` credits, or nothing when the balance does not cover it; never below zero. In the same
 * statement, adds `usage` (whose credits sum to `cost`) to the customer's credit_usage rows of today
 * (UTC): a charge and its usage are committed together or not at all. The customer's row lock, taken
 * by the debit, already serialises that customer's debits, so the usage rows add no contention.
 */
export async function debitCredits(
  q: Queryable,
  customerId: string,
  cost: bigint,
  usage: readonly UsageEntry[],
  options: { waitForFlush?: boolean } = {},
): Promise<DebitResult> {
  // Without waitForFlush (the charge of a read, run on its own: autocommit), the statement's commit does
  // not wait for its WAL to reach the disk (synchronous_commit off for that transaction alone): see
  // CreditCharger.charge for why that is safe for a read and never for a call with a side effect.
  const flush = options.waitForFlush ?? true;
  const [row] = await q.query<{ credits: string; debited: boolean; day: string | null }>(
    flush ? 'credits:debit' : 'credits:debit-no-flush',
    `WITH ${debitSql(1, 2, 3)}
     SELECT coalesce((SELECT credits FROM d), (SELECT credits FROM customers WHERE id = $1), 0) AS credits, EXISTS (SELECT 1 FROM d) AS debited,
       (SELECT min(day)::text FROM u) AS day${flush ? '' : ", set_config('synchronous_commit', 'off', true) AS commit_mode"}`,
    [customerId, String(cost), ...usageParams(usage)],
  );
  return { ok: row?.debited ?? false, available: BigInt(row?.credits ?? 0), ...(row?.day && { day: row.day }) };
}

/**
 * The debit as two common table expressions, for a statement that debits beside its own writes:
 * d (the customer's new balance; no row when the balance does not cover the cost) and u (the usage
 * rows' day). Parameters: $customer the customer id, $cost the cost, $usage and the two after it
 * usageParams(usage); `condition` (SQL starting with AND) is added to the debit's WHERE.
 */
export function debitSql(customer: number, cost: number, usage: number, condition = ''): string {
  return `d AS (UPDATE customers SET credits = credits - $${cost} WHERE id = $${customer} AND credits >= $${cost}${condition} RETURNING credits),
     u AS (
       INSERT INTO credit_usage AS u (customer_id, day, endpoint, requests, credits)
       SELECT $${customer}, (now() AT TIME ZONE 'UTC')::date, e.endpoint, sum(e.requests), sum(e.credits)
       FROM unnest($${usage}::text[], $${usage + 1}::bigint[], $${usage + 2}::bigint[]) AS e(endpoint, requests, credits)
       WHERE EXISTS (SELECT 1 FROM d)
       GROUP BY e.endpoint ORDER BY e.endpoint
       ON CONFLICT (customer_id, day, endpoint) DO UPDATE SET requests = u.requests + EXCLUDED.requests, credits = u.credits + EXCLUDED.credits
       RETURNING day)`;
}

/** The three array parameters of debitSql's usage. */
export function usageParams(usage: readonly UsageEntry[]): [string[], number[], string[]] {
  return [usage.map((e) => e.endpoint), usage.map((e) => e.requests), usage.map((e) => String(e.credits))];
}

/**
 * Gives back a debit whose call then failed: the credits, and the request and credits it added to the
 * usage of `day` (the day it was recorded under, so a refund just after midnight UTC corrects the right row).
 */
export async function refundCredits(q: Queryable, customerId: string, amount: bigint, usage: { endpoint: string; day: string | undefined }): Promise<bigint> {
  const [row] = await q.query<{ credits: string }>(
    'credits:refund',
    `WITH r AS (
       UPDATE credit_usage SET requests = greatest(requests - 1, 0), credits = greatest(credits - $2, 0)
       WHERE customer_id = $1 AND day = coalesce($4::date, (now() AT TIME ZONE 'UTC')::date) AND endpoint = $3)
     UPDATE customers SET credits = credits + $2 WHERE id = $1 RETURNING credits`,
    [customerId, String(amount), usage.endpoint, usage.day ?? null],
  );
  return BigInt(row?.credits ?? 0);
}

/** The usage rows of the last `days` UTC days (today included), newest day first. */
export async function creditUsage(q: Queryable, customerId: string, days: number) {
  return await q.query<{ day: string; endpoint: string; requests: string; credits: string }>(
    'credits:usage',
    `SELECT day::text AS day, endpoint, requests, credits FROM credit_usage
     WHERE customer_id = $1 AND day > (now() AT TIME ZONE 'UTC')::date - $2::int
     ORDER BY day DESC, endpoint`,
    [customerId, days],
  );
}
