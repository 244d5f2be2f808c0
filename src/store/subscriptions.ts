/**
 * Subscription rows. Every function takes the customer id: a customer never reads, changes or even
 * learns of another customer's subscriptions.
 */

import type { BackfillProgress } from '../domain/block-jobs.ts';
import type { Blockchain, EventType, Network } from '../domain/chains.ts';
import { type ConfirmationPolicy, policyText } from '../domain/confirmations.ts';
import type { DeactivationReason, DeliveryHealth, NewSubscription, ShownSubscription, SubscribedWalletKey, Subscription } from '../domain/subscriptions.ts';
import { notifyCallbacks } from './callbacks.ts';
import { debitSql, type UsageEntry, usageParams } from './customers.ts';
import type { Db, Queryable } from './db.ts';
import { isCurrent, openSecret, sealSecret } from './secret-box.ts';

interface SubscriptionRow {
  id: string;
  customer_id: string;
  event_type: EventType;
  blockchain: Blockchain;
  network: Network;
  transaction_id: string | null;
  address: string | null;
  target: string | null;
  receive_callback_on: number | null;
  confirmation_policy: ConfirmationPolicy | null;
  amount_higher_than: string | null;
  block_height: string | null;
  contract_address: string | null;
  callback_url: string;
  callback_host: string;
  callback_secret_key: string | null;
  previous_callback_secret_key: string | null;
  previous_secret_until: Date | null;
  allow_duplicates: boolean;
  duplicate_key: Buffer;
  is_active: boolean;
  deactivation_reasons: DeactivationReason[];
  api_version: string;
  created_at: Date;
  wallet_key: SubscribedWalletKey | null;
}

/** The columns BACKFILL_JOIN adds: the subscription's unfinished backfill, all null when it has none. */
interface BackfillColumns {
  backfill_from: string | null;
  backfill_to: string | null;
  backfill_processed: string | null;
  backfill_state: BackfillProgress['state'] | null;
}

/**
 * Joins a subscription (as s) to its newest unfinished backfill (block_jobs_subscription), in the
 * statement that reads it (no round trip of its own).
 */
const BACKFILL_JOIN = `LEFT JOIN LATERAL (
    SELECT j.from_height AS backfill_from, j.to_height AS backfill_to, j.processed_height AS backfill_processed, j.state AS backfill_state
    FROM block_jobs j WHERE j.subscription_id = s.id AND j.kind = 'backfill' AND j.state <> 'done' ORDER BY j.created_at DESC LIMIT 1) b ON true`;

/** The unfinished backfill BACKFILL_JOIN found; undefined when there is none. */
function backfillOf(row: BackfillColumns): BackfillProgress | undefined {
  if (row.backfill_state === null) return undefined;
  return {
    fromBlockHeight: Number(row.backfill_from),
    toBlockHeight: Number(row.backfill_to),
    processedHeight: Number(row.backfill_processed),
    state: row.backfill_state,
  };
}

function withBackfill(row: SubscriptionRow & BackfillColumns): Subscription {
  const backfill = backfillOf(row);
  return backfill ? { ...toSubscription(row), backfill } : toSubscription(row);
}

function toSubscription(row: SubscriptionRow): Subscription {
  return {
    id: row.id,
    customerId: row.customer_id,
    eventType: row.event_type,
    blockchain: row.blockchain,
    network: row.network,
    transactionId: row.transaction_id,
    address: row.address,
    target: row.target,
    receiveCallbackOn: row.receive_callback_on,
    confirmationPolicy: row.confirmation_policy,
    amountHigherThan: row.amount_higher_than === null ? null : BigInt(row.amount_higher_than),
    blockHeight: row.block_height === null ? null : Number(row.block_height),
    contractAddress: row.contract_address,
    callbackUrl: row.callback_url,
    callbackHost: row.callback_host,
    callbackSecretKey: openSecret(row.callback_secret_key, row.id),
    previousCallbackSecretKey: openSecret(row.previous_callback_secret_key, row.id),
    previousSecretUntil: row.previous_secret_until,
    allowDuplicates: row.allow_duplicates,
    duplicateKey: row.duplicate_key,
    isActive: row.is_active,
    deactivationReasons: row.deactivation_reasons,
    apiVersion: row.api_version,
    createdAt: row.created_at,
    walletKey: row.wallet_key,
  };
}

/** Advisory lock key spaces (first int4 of the two-int4 form). */
const LOCK_SPACE_DUPLICATES = 1;
const LOCK_SPACE_ACTIVE_CAP = 2;

/**
 * Serialises, until the transaction ends, every create or activate of one duplicate identity of one
 * customer, so that two identical concurrent requests cannot both pass the duplicate check.
 */
export async function lockDuplicateIdentity(tx: Queryable, customerId: string, duplicateKey: Buffer): Promise<void> {
  await tx.query('subscriptions:lock-duplicate', 'SELECT pg_advisory_xact_lock($1, $2)', [
    LOCK_SPACE_DUPLICATES,
    duplicateKey.readInt32BE(0) ^ Number(customerId),
  ]);
}

/** Serialises creates and activates of one customer whose plan caps active subscriptions. */
export async function lockActiveCap(tx: Queryable, customerId: string): Promise<void> {
  await tx.query('subscriptions:lock-cap', 'SELECT pg_advisory_xact_lock($1, $2)', [LOCK_SPACE_ACTIVE_CAP, Number(customerId)]);
}

/** The customer's active subscriptions, from the counters the triggers keep (migration 018): a few rows, whatever the customer's size. */
export async function countActive(q: Queryable, customerId: string): Promise<number> {
  const [row] = await q.query<{ n: number }>(
    'subscriptions:count-active',
    'SELECT coalesce(sum(active), 0)::int AS n FROM subscription_counts WHERE customer_id = $1',
    [customerId],
  );
  return row?.n ?? 0;
}

/**
 * The active subscriptions of a customer with one duplicate identity, as a union of the two partial
 * indexes that hold them (migration 030): subscriptions_no_twins (without allowDuplicates: at most one
 * row) and subscriptions_duplicates (with it). Written out per index: a plain `is_active` condition
 * implies neither index's predicate, and the planner would read the customer's rows through
 * subscriptions_listing instead. `customer` and `key` are SQL expressions; `extra` more conditions.
 */
function activeTwins(columns: string, customer: string, key: string, extra = ''): string {
  const where = `customer_id = ${customer} AND duplicate_key = ${key} AND is_active${extra}`;
  return `SELECT ${columns} FROM subscriptions WHERE ${where} AND NOT allow_duplicates
    UNION ALL SELECT ${columns} FROM subscriptions WHERE ${where} AND allow_duplicates`;
}

export async function findActiveDuplicate(q: Queryable, customerId: string, duplicateKey: Buffer, exceptId?: string): Promise<string | undefined> {
  const [row] = await q.query<{ id: string }>(
    'subscriptions:find-duplicate',
    `SELECT id FROM (${activeTwins('id', '$1', '$2', ' AND id IS DISTINCT FROM $3::uuid')}) t LIMIT 1`,
    [customerId, duplicateKey, exceptId ?? null],
  );
  return row?.id;
}

/**
 * Inserts the subscription unless an active twin forbids it; undefined when one does. Without
 * allowDuplicates, any active twin forbids it; the partial unique index subscriptions_no_twins makes
 * two concurrent identical creates impossible (the loser gets no row). One statement, no lock held.
 */
export async function insertUnlessTwin(q: Queryable, customerId: string, s: NewSubscription): Promise<Subscription | undefined> {
  const [row] = await q.query<SubscriptionRow>(
    'subscriptions:insert',
    `INSERT INTO subscriptions (id, customer_id, event_type, blockchain, network, transaction_id, address, target,
       receive_callback_on, amount_higher_than, callback_url, callback_host, callback_secret_key, allow_duplicates,
       duplicate_key, api_version, block_height, contract_address, confirmation_policy, wallet_key)
     SELECT $1::uuid, $2::bigint, $3::text, $4::text, $5::text, $6::text, $7::text, $8::text, $9::integer, $10::numeric,
            $11::text, $12::text, $13::text, $14::boolean, $15::bytea, $16::text, $17::bigint, $18::text, $19::jsonb, $20::jsonb
     WHERE $14::boolean OR NOT EXISTS (${activeTwins('1', '$2::bigint', '$15::bytea')})
     ON CONFLICT (customer_id, duplicate_key) WHERE is_active AND NOT allow_duplicates DO NOTHING
     RETURNING *`,
    [
      s.id,
      customerId,
      s.eventType,
      s.blockchain,
      s.network,
      s.transactionId,
      s.address,
      s.target,
      s.receiveCallbackOn,
      s.amountHigherThan === null ? null : String(s.amountHigherThan),
      s.callbackUrl,
      s.callbackHost,
      sealSecret(s.callbackSecretKey, s.id),
      s.allowDuplicates,
      s.duplicateKey,
      s.apiVersion,
      s.blockHeight,
      s.contractAddress ?? null,
      policyJson(s.confirmationPolicy),
      s.walletKey ? JSON.stringify(s.walletKey) : null,
    ],
  );
  return row ? toSubscription(row) : undefined;
}

/**
 * What a chunk of a bulk create reads before deciding, in one statement: the customer's credit
 * balance, its active subscriptions (countActive's counters: read under the cap lock where the plan
 * caps them), and the active subscription of each of these duplicate identities (the oldest when
 * allowDuplicates made several), by the identity in hex. Probes the two twin indexes (activeTwins)
 * per identity (LATERAL, as beforeCreates: `duplicate_key = ANY (...)` let a customer that grew since
 * the last ANALYZE be read row by row through subscriptions_listing).
 */
export async function beforeBulkChunk(
  q: Queryable,
  customerId: string,
  keys: Buffer[],
): Promise<{ credits: bigint; active: number; twins: Map<string, string> }> {
  const [row] = await q.query<{ credits: string | null; active: number; keys: string[] | null; ids: string[] | null }>(
    'subscriptions:before-bulk-chunk',
    `SELECT (SELECT credits FROM customers WHERE id = $1) AS credits,
       (SELECT coalesce(sum(active), 0)::int FROM subscription_counts WHERE customer_id = $1) AS active,
       t.keys, t.ids
     FROM (SELECT array_agg(k) AS keys, array_agg(x.id::text) AS ids
             FROM (SELECT DISTINCT k FROM unnest($2::text[]) AS k) u CROSS JOIN LATERAL (
               SELECT id FROM (${activeTwins('id, created_at', '$1', "decode(k, 'hex')")}) a ORDER BY created_at, id LIMIT 1) x) t`,
    [customerId, keys.map((k) => k.toString('hex'))],
    // Planned each time: the generic plan of a statement prepared while the customer had few rows read every
    // row of the customer per identity (a 10,000-item bulk create took 19 s instead of 0.5 s in
    // test/bulk-subscriptions.test.ts; the same statement with its values planned probes the twin indexes, 0.5 ms a chunk).
    { planEachTime: true },
  );
  const twinKeys = row?.keys ?? [];
  const twinIds = row?.ids ?? [];
  return {
    credits: BigInt(row?.credits ?? 0),
    active: row?.active ?? 0,
    twins: new Map(twinKeys.map((k, i) => [k, twinIds[i] as string])),
  };
}

/**
 * What a group of creates reads before deciding, in one statement: the customer's credit balance, its
 * active subscriptions (countActive's counters; a capped group's write counts again under the cap
 * lock, insertManyPaid), and
 * which of these duplicate identities have an active subscription (in hex; probes activeTwins' two indexes).
 * One index probe per identity (the LATERAL ... LIMIT 1 keeps that plan): as `duplicate_key = ANY (...)`,
 * a customer with more rows than the planner's statistics knew of (one that grew since the last
 * ANALYZE) had all its rows read through subscriptions_listing instead, 20 ms for 9,000 rows against
 * 0.17 ms (EXPLAIN ANALYZE, 2026-11-25).
 */
export async function beforeCreates(q: Queryable, customerId: string, keys: Buffer[]): Promise<{ credits: bigint; active: number; twins: string[] }> {
  const [row] = await q.query<{ credits: string | null; active: number; twins: string[] }>(
    'subscriptions:before-creates',
    `SELECT (SELECT credits FROM customers WHERE id = $1) AS credits,
       (SELECT coalesce(sum(active), 0)::int FROM subscription_counts WHERE customer_id = $1) AS active,
       ARRAY(SELECT DISTINCT k FROM unnest($2::text[]) AS k WHERE EXISTS (${activeTwins('1', '$1', "decode(k, 'hex')")})) AS twins`,
    [customerId, keys.map((k) => k.toString('hex'))],
  );
  return { credits: BigInt(row?.credits ?? 0), active: row?.active ?? 0, twins: row?.twins ?? [] };
}

/**
 * Inserts many subscriptions in one statement (a chunk of a bulk create), in their order (created_at
 * follows it). A row without allowDuplicates that an active twin forbids (subscriptions_no_twins,
 * e.g. a concurrent create) is left out, or with `twins: 'fail'` fails the statement (a unique
 * violation): cheaper per row (no speculative insertion) where twins were looked for beforehand and a
 * race can simply be tried again. Returns the created ones: id -> createdAt.
 */
export async function insertMany(
  q: Queryable,
  customerId: string,
  list: NewSubscription[],
  options: { twins: 'skip' | 'fail' } = { twins: 'skip' },
): Promise<Map<string, Date>> {
  if (list.length === 0) return new Map();
  const rows = await q.query<{ id: string; created_at: Date }>(
    options.twins === 'skip' ? 'subscriptions:insert-many' : 'subscriptions:insert-many-checked',
    `${insertManySql(options.twins === 'skip' ? 'ON CONFLICT (customer_id, duplicate_key) WHERE is_active AND NOT allow_duplicates DO NOTHING' : '')}
     RETURNING id, created_at`,
    insertManyParams(customerId, list),
  );
  return new Map(rows.map((r) => [r.id, r.created_at]));
}

/**
 * Inserts the subscriptions and takes `debit.cost` credits for them in one statement, both or
 * neither: undefined (nothing inserted, nothing taken) when the balance does not cover the cost, or
 * when `cap` is given and the customer has more than `cap.activeAtMost` active subscriptions. A row
 * without allowDuplicates that an active twin forbids fails the statement (a unique violation), as
 * insertMany with `twins: 'fail'`. One statement, one round trip: it commits on its own outside a
 * transaction, and holds the customer's row (the debit) and, with `cap`, its cap lock (migration 026:
 * the count is read after the lock is granted) only while it runs.
 */
export async function insertManyPaid(
  q: Queryable,
  customerId: string,
  list: NewSubscription[],
  debit: { cost: bigint; usage: readonly UsageEntry[] },
  cap?: { activeAtMost: number },
): Promise<{ created: Map<string, Date>; available: bigint; day: string | undefined } | undefined> {
  // With a cap, the debit's condition also counts under the cap lock: an InitPlan, run once, after the
  // customer's row is found and before it is written.
  const capCondition = cap ? ' AND herald_active_under_cap_lock($1) <= $24' : '';
  // The created rows come back as one JSON object, id -> created_at in Unix milliseconds: parsed
  // natively, where two arrays of a thousand elements each (a bulk chunk) took the pg driver's
  // per-character array and date parsers.
  const [row] = await q.query<{ credits: string | null; day: string | null; created: Record<string, number> | null }>(
    cap ? 'subscriptions:insert-paid-capped' : 'subscriptions:insert-paid',
    `WITH ${debitSql(1, 20, 21, capCondition)},
     ins AS (${insertManySql('', 'WHERE EXISTS (SELECT 1 FROM d)')} RETURNING id, created_at)
     SELECT (SELECT credits FROM d) AS credits, (SELECT min(day)::text FROM u) AS day,
       (SELECT json_object_agg(id, floor(extract(epoch FROM created_at) * 1000)::bigint) FROM ins) AS created`,
    [...insertManyParams(customerId, list), String(debit.cost), ...usageParams(debit.usage), ...(cap ? [cap.activeAtMost] : [])],
  );
  if (!row || row.credits === null) return undefined;
  const created = new Map<string, Date>();
  for (const [id, ms] of Object.entries(row.created ?? {})) created.set(id, new Date(ms));
  return { created, available: BigInt(row.credits), day: row.day ?? undefined };
}

/** The multi-row insert of insertMany and insertManyPaid (parameters $1 to $19: insertManyParams). */
function insertManySql(onConflict: string, where = ''): string {
  return `INSERT INTO subscriptions (id, customer_id, event_type, blockchain, network, transaction_id, address, target,
       receive_callback_on, amount_higher_than, callback_url, callback_host, callback_secret_key, allow_duplicates,
       duplicate_key, api_version, block_height, contract_address, confirmation_policy)
     SELECT u.id, $1::bigint, u.event_type, u.blockchain, u.network, u.transaction_id, u.address, u.target, u.receive_callback_on,
            u.amount_higher_than, u.callback_url, u.callback_host, u.callback_secret_key, u.allow_duplicates, decode(u.duplicate_key, 'hex'),
            u.api_version, u.block_height, u.contract_address, u.confirmation_policy::jsonb
     FROM unnest($2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::integer[], $10::numeric[],
                 $11::text[], $12::text[], $13::text[], $14::boolean[], $15::text[], $16::text[], $17::bigint[], $18::text[], $19::text[])
       AS u(id, event_type, blockchain, network, transaction_id, address, target, receive_callback_on, amount_higher_than,
            callback_url, callback_host, callback_secret_key, allow_duplicates, duplicate_key, api_version, block_height, contract_address,
            confirmation_policy)
     ${where}
     ${onConflict}`;
}

function insertManyParams(customerId: string, list: NewSubscription[]): unknown[] {
  const column = <T>(f: (s: NewSubscription) => T) => list.map(f);
  return [
    customerId,
    column((s) => s.id),
    column((s) => s.eventType),
    column((s) => s.blockchain),
    column((s) => s.network),
    column((s) => s.transactionId),
    column((s) => s.address),
    column((s) => s.target),
    column((s) => s.receiveCallbackOn),
    column((s) => (s.amountHigherThan === null ? null : String(s.amountHigherThan))),
    column((s) => s.callbackUrl),
    column((s) => s.callbackHost),
    column((s) => sealSecret(s.callbackSecretKey, s.id)),
    column((s) => s.allowDuplicates),
    column((s) => s.duplicateKey.toString('hex')),
    column((s) => s.apiVersion),
    column((s) => s.blockHeight),
    column((s) => s.contractAddress ?? null),
    column((s) => policyJson(s.confirmationPolicy)),
  ];
}

/** The row a create inserted, without reading it back. */
export function createdSubscription(customerId: string, s: NewSubscription, createdAt: Date): Subscription {
  // Field by field: spreading the candidate took V8's slow path (tens of microseconds per row under load).
  return {
    id: s.id,
    customerId,
    eventType: s.eventType,
    blockchain: s.blockchain,
    network: s.network,
    transactionId: s.transactionId,
    address: s.address,
    target: s.target,
    receiveCallbackOn: s.receiveCallbackOn,
    confirmationPolicy: s.confirmationPolicy ?? null,
    amountHigherThan: s.amountHigherThan,
    blockHeight: s.blockHeight,
    contractAddress: s.contractAddress ?? null,
    callbackUrl: s.callbackUrl,
    callbackHost: s.callbackHost,
    callbackSecretKey: s.callbackSecretKey,
    allowDuplicates: s.allowDuplicates,
    duplicateKey: s.duplicateKey,
    isActive: true,
    deactivationReasons: [],
    apiVersion: s.apiVersion,
    createdAt,
  };
}

export async function getSubscription(q: Queryable, customerId: string, id: string, options: { forUpdate?: boolean } = {}): Promise<Subscription | undefined> {
  const [row] = await q.query<SubscriptionRow>(
    options.forUpdate ? 'subscriptions:get-for-update' : 'subscriptions:get',
    `SELECT * FROM subscriptions WHERE customer_id = $1 AND id = $2${options.forUpdate ? ' FOR UPDATE' : ''}`,
    [customerId, id],
  );
  return row ? toSubscription(row) : undefined;
}

/** The subscription as the API shows it: with its unfinished backfill (when it has one), in one statement. */
export async function getSubscriptionShown(q: Queryable, customerId: string, id: string): Promise<Subscription | undefined> {
  const [row] = await q.query<SubscriptionRow & BackfillColumns>(
    'subscriptions:get-shown',
    `SELECT s.*, b.* FROM subscriptions s ${BACKFILL_JOIN} WHERE s.customer_id = $1 AND s.id = $2`,
    [customerId, id],
  );
  return row ? withBackfill(row) : undefined;
}

type ShownRow = Pick<
  SubscriptionRow,
  | 'id'
  | 'event_type'
  | 'blockchain'
  | 'network'
  | 'transaction_id'
  | 'address'
  | 'receive_callback_on'
  | 'confirmation_policy'
  | 'amount_higher_than'
  | 'block_height'
  | 'contract_address'
  | 'callback_url'
  | 'callback_secret_key'
  | 'is_active'
  | 'wallet_key'
> &
  BackfillColumns & { deactivation_reasons: DeactivationReason[] | null; created_ms: string };

/**
 * The columns of ShownRow: the page reads only what the answer shows (no duplicate key, host, previous
 * secret...; the deactivation reasons of inactive ones only), and created_at as Unix milliseconds (a
 * number to parse, not a timestamp string): a 50-item page took 0.69 ms of the server's CPU with every
 * column, 0.46 ms with these (pg's parsing, the items and their JSON, bench/api.ts's list pages).
 */
const SHOWN_COLUMNS = `s.id, s.event_type, s.blockchain, s.network, s.transaction_id, s.address, s.receive_callback_on, s.confirmation_policy, s.amount_higher_than,
  s.block_height, s.contract_address, s.callback_url, s.callback_secret_key, s.is_active, s.wallet_key,
  CASE WHEN s.is_active THEN NULL ELSE s.deactivation_reasons END AS deactivation_reasons,
  floor(extract(epoch FROM s.created_at) * 1000)::int8 AS created_ms`;

function toShown(row: ShownRow): ShownSubscription {
  return {
    id: row.id,
    eventType: row.event_type,
    blockchain: row.blockchain,
    network: row.network,
    transactionId: row.transaction_id,
    address: row.address,
    receiveCallbackOn: row.receive_callback_on,
    confirmationPolicy: row.confirmation_policy,
    amountHigherThan: row.amount_higher_than === null ? null : BigInt(row.amount_higher_than),
    blockHeight: row.block_height === null ? null : Number(row.block_height),
    contractAddress: row.contract_address,
    callbackUrl: row.callback_url,
    callbackSecretKey: openSecret(row.callback_secret_key, row.id),
    isActive: row.is_active,
    deactivationReasons: row.deactivation_reasons ?? [],
    createdAt: new Date(Number(row.created_ms)),
    walletKey: row.wallet_key,
    backfill: backfillOf(row),
  };
}

export async function listSubscriptions(
  q: Queryable,
  customerId: string,
  blockchain: Blockchain,
  network: Network,
  page: { limit: number; offset: number },
): Promise<{ total: number; items: ShownSubscription[] }> {
  const counted = 'SELECT coalesce(sum(total), 0)::int FROM subscription_counts WHERE customer_id = $1 AND blockchain = $2 AND network = $3';
  const params = [customerId, blockchain, network];
  const rows = await q.query<ShownRow & { listing_total: number }>(
    'subscriptions:list',
    // The page is chosen on subscriptions_listing alone (an index-only scan: the offset skips index
    // entries, not rows), then only its rows are read, each with its unfinished backfill. The total
    // comes from the counters kept by triggers (migration 018), not a count of the rows, in the same
    // statement: one round trip and one pool connection per page.
    `WITH page AS (SELECT id, created_at FROM subscriptions WHERE customer_id = $1 AND blockchain = $2 AND network = $3
                   ORDER BY created_at, id LIMIT $4 OFFSET $5)
     SELECT ${SHOWN_COLUMNS}, b.*, (${counted}) AS listing_total FROM page p JOIN subscriptions s ON s.id = p.id ${BACKFILL_JOIN}
     ORDER BY p.created_at, p.id`,
    [...params, page.limit, page.offset],
  );
  if (rows.length > 0) return { total: rows[0]?.listing_total ?? 0, items: rows.map(toShown) };
  // A page past the end has no row to carry the total.
  const [count] = await q.query<{ n: number }>('subscriptions:list-count', `SELECT (${counted}) AS n`, params);
  return { total: count?.n ?? 0, items: [] };
}

/** Filters of the cross-chain listing (GET /blockchain-events/subscriptions). */
export interface SubscriptionFilter {
  blockchain?: Blockchain;
  network?: Network;
  eventType?: EventType;
  isActive?: boolean;
  /** An exact reference id, address or contract address (as given), or transaction id. */
  q?: string;
  /** The normalised forms of q as an address or transaction id of any chain, compared with the targets. */
  targets?: string[];
}

/**
 * A customer's subscriptions on every chain, oldest first, filtered, each with its delivery health
 * (counted over the callbacks the log still keeps, per subscription of the page through callbacks_log).
 */
export async function searchSubscriptions(
  q: Queryable,
  customerId: string,
  filter: SubscriptionFilter,
  page: { limit: number; offset: number },
): Promise<{ total: number; items: (Subscription & { health: DeliveryHealth })[] }> {
  const where = `customer_id = $1 AND ($2::text IS NULL OR blockchain = $2) AND ($3::text IS NULL OR network = $3)
    AND ($4::text IS NULL OR event_type = $4) AND ($5::boolean IS NULL OR is_active = $5)
    AND ($6::text IS NULL OR id::text = lower($6) OR address = $6 OR transaction_id = $6 OR contract_address = $6 OR target = ANY ($7::text[]))`;
  const targets = filter.targets ?? (filter.q === undefined ? [] : [filter.q]);
  const params = [customerId, filter.blockchain ?? null, filter.network ?? null, filter.eventType ?? null, filter.isActive ?? null, filter.q ?? null, targets];
  const [rows, counts] = await Promise.all([
    q.query<
      SubscriptionRow & { delivered: number; failed: number; pending: number; retrying: number; last_delivered_at: Date | null; last_failed_at: Date | null }
    >(
      'subscriptions:search',
      `SELECT s.*, h.delivered, h.failed, h.pending, h.retrying, h.last_delivered_at, h.last_failed_at
       FROM (SELECT * FROM subscriptions WHERE ${where} ORDER BY created_at, id LIMIT $8 OFFSET $9) s
       CROSS JOIN LATERAL (
         SELECT count(*) FILTER (WHERE status = 'delivered')::int AS delivered, count(*) FILTER (WHERE status = 'failed')::int AS failed,
                count(*) FILTER (WHERE status = 'pending')::int AS pending,
                count(*) FILTER (WHERE status = 'pending' AND attempts > series_start)::int AS retrying,
                max(finished_at) FILTER (WHERE status = 'delivered') AS last_delivered_at,
                max(finished_at) FILTER (WHERE status = 'failed') AS last_failed_at
         FROM callbacks c WHERE c.subscription_id = s.id) h
       ORDER BY s.created_at, s.id`,
      [...params, page.limit, page.offset],
    ),
    q.query<{ n: number }>('subscriptions:search-count', `SELECT count(*)::int AS n FROM subscriptions WHERE ${where}`, params),
  ]);
  return {
    total: counts[0]?.n ?? 0,
    items: rows.map((r) => ({
      ...toSubscription(r),
      health: {
        delivered: r.delivered,
        failed: r.failed,
        pending: r.pending,
        retrying: r.retrying,
        lastDeliveredAt: r.last_delivered_at,
        lastFailedAt: r.last_failed_at,
      },
    })),
  };
}

export async function deleteSubscription(
  q: Queryable,
  customerId: string,
  blockchain: Blockchain,
  network: Network,
  id: string,
): Promise<Subscription | undefined> {
  const [row] = await q.query<SubscriptionRow>(
    'subscriptions:delete',
    'DELETE FROM subscriptions WHERE customer_id = $1 AND blockchain = $2 AND network = $3 AND id = $4 RETURNING *',
    [customerId, blockchain, network, id],
  );
  return row ? toSubscription(row) : undefined;
}

/**
 * Activates a subscription, in the caller's transaction (READ COMMITTED), and makes its dormant callbacks
 * (migration 084) claimable again with their own due times, waking the workers when it commits. Two
 * statements, in this order: the first waits for any claim that holds the subscription while making its
 * callbacks dormant, so the second, with a snapshot taken after it, sees and clears what that claim did.
 */
export async function setActive(q: Queryable, customerId: string, id: string): Promise<Subscription> {
  const [row] = await q.query<SubscriptionRow>(
    'subscriptions:activate',
    `UPDATE subscriptions SET is_active = true, deactivation_reasons = '[]' WHERE customer_id = $1 AND id = $2 RETURNING *`,
    [customerId, id],
  );
  await wakeDormantCallbacks(q, id);
  return toSubscription(row as SubscriptionRow);
}

/**
 * Clears the dormant mark of every callback of an active subscription (docs/concepts/delivery.md, "An inactive
 * subscription's callbacks"), whatever its status (a finished one revived later is then claimable), and
 * wakes the workers when the transaction commits if any was pending. Returns how many pending ones woke.
 */
export async function wakeDormantCallbacks(q: Queryable, subscriptionId: string): Promise<number> {
  const [woken] = await q.query<{ pending: number }>(
    'subscriptions:wake-callbacks',
    `WITH woken AS (UPDATE callbacks SET dormant = false WHERE subscription_id = $1 AND dormant RETURNING status)
     SELECT count(*) FILTER (WHERE status = 'pending')::int AS pending FROM woken`,
    [subscriptionId],
  );
  const pending = woken?.pending ?? 0;
  if (pending > 0) await notifyCallbacks(q);
  return pending;
}

/**
 * Holds a subscription's pending callbacks out of the claim's index (dormant, migration 084) while it is
 * inactive, in the caller's transaction after the subscription was made inactive: no claim walks them.
 * Returns how many.
 */
export async function holdDormantCallbacks(q: Queryable, subscriptionId: string): Promise<number> {
  const rows = await q.query(
    'subscriptions:hold-callbacks',
    `UPDATE callbacks SET dormant = true WHERE subscription_id = $1 AND status = 'pending' AND NOT dormant RETURNING 1`,
    [subscriptionId],
  );
  return rows.length;
}

/**
 * Points a subscription at another callback URL: the subscription (its duplicate identity too), its
 * pending events, and its callbacks not yet delivered (sent to the new URL from their next attempt).
 * Undefined when the subscription is not the customer's.
 */
export async function changeCallbackUrl(
  q: Queryable,
  customerId: string,
  id: string,
  change: { url: string; host: string; destination: string; duplicateKey: Buffer },
): Promise<Subscription | undefined> {
  const [row] = await q.query<SubscriptionRow>(
    'subscriptions:change-url',
    'UPDATE subscriptions SET callback_url = $3, callback_host = $4, duplicate_key = $5 WHERE customer_id = $1 AND id = $2 RETURNING *',
    [customerId, id, change.url, change.host, change.duplicateKey],
  );
  if (!row) return undefined;
  await q.query('subscriptions:change-url-events', 'UPDATE pending_events SET callback_url = $2 WHERE subscription_id = $1', [id, change.url]);
  await q.query(
    'subscriptions:change-url-callbacks',
    "UPDATE callbacks SET callback_url = $2, destination = $3 WHERE subscription_id = $1 AND status = 'pending'",
    [id, change.url, change.destination],
  );
  return toSubscription(row);
}

/**
 * The customer's pause, in the caller's transaction: inactive, with `reason` appended to its deactivation
 * reasons; its pending callbacks wait, held out of the claim's index (holdDormantCallbacks), until it is
 * activated again. Undefined when the subscription is not the customer's or is inactive already.
 */
export async function pause(q: Queryable, customerId: string, id: string, reason: string, at: number): Promise<Subscription | undefined> {
  const [row] = await q.query<SubscriptionRow>(
    'subscriptions:pause',
    `UPDATE subscriptions SET is_active = false,
       deactivation_reasons = deactivation_reasons || jsonb_build_array(jsonb_build_object('reason', $3::text, 'timestamp', $4::bigint))
     WHERE customer_id = $1 AND id = $2 AND is_active RETURNING *`,
    [customerId, id, reason, at],
  );
  if (!row) return undefined;
  await holdDormantCallbacks(q, id);
  return toSubscription(row);
}

/**
 * Replaces the callback secret; the one replaced keeps signing until `previousUntil` (a rotation during
 * another's overlap ends that overlap: only the secret just replaced is kept). Undefined when the
 * subscription does not exist (for this customer).
 */
export async function rotateSecret(q: Queryable, customerId: string, id: string, secret: string, previousUntil: Date): Promise<Subscription | undefined> {
  const [row] = await q.query<SubscriptionRow>(
    'subscriptions:rotate-secret',
    `UPDATE subscriptions SET previous_callback_secret_key = callback_secret_key, previous_secret_until = $4, callback_secret_key = $3
     WHERE customer_id = $1 AND id = $2 RETURNING *`,
    [customerId, id, sealSecret(secret, id), previousUntil],
  );
  return row ? toSubscription(row) : undefined;
}

/**
 * One batch of `herald secrets rotate-key`: the subscriptions after `after` (by id; null: from the first)
 * that have a secret, up to `limit`, locked while their secrets not yet encrypted with the current key
 * are encrypted with it (a rotation of one of them waits for the batch, and is not overwritten).
 * Returns the last id read (the next batch's `after`; undefined: none left) and how many rows changed.
 */
export async function reencryptSecrets(db: Db, after: string | null, limit: number): Promise<{ last: string | undefined; read: number; changed: number }> {
  return await db.transaction('subscriptions:reencrypt', async (tx) => {
    const rows = await tx.query<{ id: string; callback_secret_key: string | null; previous_callback_secret_key: string | null }>(
      'subscriptions:reencrypt-read',
      `SELECT id, callback_secret_key, previous_callback_secret_key FROM subscriptions
       WHERE ($1::uuid IS NULL OR id > $1::uuid) AND (callback_secret_key IS NOT NULL OR previous_callback_secret_key IS NOT NULL)
       ORDER BY id LIMIT $2 FOR UPDATE`,
      [after, limit],
    );
    const stale = rows.filter((r) => !isCurrent(r.callback_secret_key) || !isCurrent(r.previous_callback_secret_key));
    const again = (stored: string | null, id: string) => (isCurrent(stored) ? stored : sealSecret(openSecret(stored, id), id));
    if (stale.length > 0) {
      await tx.query(
        'subscriptions:reencrypt-write',
        `UPDATE subscriptions s SET callback_secret_key = u.secret, previous_callback_secret_key = u.previous
         FROM unnest($1::uuid[], $2::text[], $3::text[]) AS u(id, secret, previous) WHERE s.id = u.id`,
        [stale.map((r) => r.id), stale.map((r) => again(r.callback_secret_key, r.id)), stale.map((r) => again(r.previous_callback_secret_key, r.id))],
      );
    }
    return { last: rows.at(-1)?.id, read: rows.length, changed: stale.length };
  });
}

/**
 * Announces a change of the subscription to the ingest processes (as the table's trigger does for
 * creates, deletes and activations): a new replay job wakes the chain's job runner at once.
 */
export async function announceSubscription(tx: Queryable, s: { id: string; blockchain: string; network: string }): Promise<void> {
  await tx.query(
    'subscriptions:announce',
    `SELECT pg_notify('herald_subscriptions', json_build_object('id', $1::uuid, 'blockchain', $2::text, 'network', $3::text, 'op', 'UPDATE')::text)`,
    [s.id, s.blockchain, s.network],
  );
}

/**
 * The chains with active subscriptions (of `customerId`, or of every customer) and how many, from the
 * per-chain counts (migration 018): a few rows whatever the number of subscriptions.
 */
export async function activeSubscriptionChains(q: Queryable, customerId?: string): Promise<{ blockchain: string; network: string; active: number }[]> {
  const rows = await q.query<{ blockchain: string; network: string; active: number }>(
    customerId === undefined ? 'subscriptions:active-chains' : 'subscriptions:active-chains-of-customer',
    `SELECT blockchain, network, sum(active)::int AS active FROM subscription_counts
     ${customerId === undefined ? '' : 'WHERE customer_id = $1'}
     GROUP BY blockchain, network HAVING sum(active) > 0 ORDER BY blockchain, network`,
    customerId === undefined ? [] : [customerId],
  );
  return rows;
}

/** The policy column's value: its JSON text (docs/concepts/confirmations-and-reorganisations.md), or null. */
function policyJson(policy: ConfirmationPolicy | null | undefined): string | null {
  return policy ? policyText(policy) : null;
}
