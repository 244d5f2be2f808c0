/**
 * Bulk recovery jobs (docs/guides/recover-and-replay.md "Recovering callbacks"): a row per request, worked through in chunks by
 * the delivery role. A chunk is one transaction: lock the job, pick the next callbacks of its window
 * after the cursor, charge them, queue them again (same row: same body, idempotencyKey and sequence
 * number, a new retry series, as a resend), move the cursor. A crash loses or repeats no chunk; a
 * runner that dies leaves the job for the next (the job row is locked only while a chunk runs).
 */
import { CALLBACKS_CHANNEL } from './callbacks.ts';
import { creditBalance, debitCredits } from './customers.ts';
import type { Db, Queryable } from './db.ts';

export type RecoveryState = 'queued' | 'running' | 'done' | 'out_of_credits';

export interface RecoveryScope {
  /** One subscription's callbacks... */
  subscriptionId?: string;
  /** ...or every active subscription's of the customer with this callbackUrl (and event type). */
  callbackUrl?: string;
  eventType?: string;
  /** Only subscriptions on this blockchain (and network): the Deliveries page's filters (migration 093). */
  blockchain?: string;
  network?: string;
  since: Date;
  until: Date;
  includeCancelled: boolean;
}

export interface Recovery extends RecoveryScope {
  id: string;
  customerId: string;
  state: RecoveryState;
  found: number;
  queued: number;
  creditsConsumed: bigint;
  createdAt: Date;
  finishedAt: Date | null;
}

export interface RecoveryProgress extends Recovery {
  /** Of the callbacks this job queued (and no later job queued again): where they are now. */
  pending: number;
  delivered: number;
  failed: number;
}

interface RecoveryRow {
  id: string;
  customer_id: string;
  subscription_id: string | null;
  callback_url: string | null;
  event_type: string | null;
  blockchain: string | null;
  network: string | null;
  since: Date;
  until: Date;
  include_cancelled: boolean;
  state: RecoveryState;
  found: number;
  queued: number;
  credits_consumed: string;
  after_created_at: Date | null;
  after_id: string | null;
  created_at: Date;
  finished_at: Date | null;
}

function toRecovery(r: RecoveryRow): Recovery {
  return {
    id: r.id,
    customerId: r.customer_id,
    ...(r.subscription_id !== null && { subscriptionId: r.subscription_id }),
    ...(r.callback_url !== null && { callbackUrl: r.callback_url }),
    ...(r.event_type !== null && { eventType: r.event_type }),
    ...(r.blockchain !== null && { blockchain: r.blockchain }),
    ...(r.network !== null && { network: r.network }),
    since: r.since,
    until: r.until,
    includeCancelled: r.include_cancelled,
    state: r.state,
    found: r.found,
    queued: r.queued,
    creditsConsumed: BigInt(r.credits_consumed),
    createdAt: r.created_at,
    finishedAt: r.finished_at,
  };
}

/**
 * The callbacks a job queues again, as a condition on callbacks c joined to their subscription s, with
 * the job's scope as parameters $1..$7 (scopeParams): of the customer, in the window by creation time,
 * failed (or, asked for, cancelled other than by a reorganisation: a reorganised event is not
 * canonical; nor a pull-only subscription's, which has nowhere to go: migration 055), of a subscription that exists and is active (workers send only those: a callback queued
 * for an inactive one would be paid for and wait; activate takes recoverSince for that case).
 *
 * Written so that the index callbacks_recoverable (customer_id, created_at, id) of failed and cancelled
 * callbacks (migration 022) drives it: the customer and the window as plain parameters, the status as
 * the index's own predicate. Joined to the job's row instead, it was a scan of the whole outbox per chunk
 * (0.3-0.6 s with 1,000,000 other callbacks, 200 times for 100,000 recovered), CPU taken from the live
 * delivery it runs beside (`npm run bench -- recovery`).
 */
const CANDIDATES = `c.customer_id = $1::bigint AND c.status IN ('failed', 'cancelled')
  AND c.created_at >= $2::timestamptz AND c.created_at < $3::timestamptz
  AND s.id = c.subscription_id AND s.customer_id = $1::bigint AND s.is_active
  AND ($4::uuid IS NULL OR c.subscription_id = $4::uuid)
  AND ($5::text IS NULL OR s.callback_url = $5::text)
  AND ($6::text IS NULL OR c.event_type = $6::text)
  AND (c.status = 'failed' OR ($7::boolean AND c.outcome IS DISTINCT FROM 'reorganised' AND c.outcome IS DISTINCT FROM 'pull_only'))
  AND ($8::text IS NULL OR s.blockchain = $8::text) AND ($9::text IS NULL OR s.network = $9::text)`;

function scopeParams(customerId: string, scope: RecoveryScope): unknown[] {
  return [
    customerId,
    scope.since,
    scope.until,
    scope.subscriptionId ?? null,
    scope.callbackUrl ?? null,
    scope.eventType ?? null,
    scope.includeCancelled,
    scope.blockchain ?? null,
    scope.network ?? null,
  ];
}

/** Creates the job (state queued) with `found` counted now; the delivery role's runner takes it from there. */
export async function createRecovery(tx: Queryable, id: string, customerId: string, scope: RecoveryScope, filtered = false): Promise<Recovery> {
  const [row] = await tx.query<RecoveryRow>(
    'recoveries:create',
    `INSERT INTO recoveries (id, customer_id, subscription_id, callback_url, event_type, since, until, include_cancelled, blockchain, network, filtered, found)
     VALUES ($10, $1, $4, $5, $6, $2, $3, $7, $8, $9, $11, (SELECT count(*)::int FROM callbacks c, subscriptions s WHERE ${CANDIDATES}))
     RETURNING *`,
    [...scopeParams(customerId, scope), id, filtered],
  );
  return toRecovery(row as RecoveryRow);
}

/**
 * What a job of this scope would take now (`found`, as createRecovery counts it), and the failed callbacks
 * of the same filters it leaves because their subscription is inactive (`inactive`, of `inactiveSubscriptions`
 * subscriptions): the Deliveries page's confirmation (a dry run).
 */
export async function countRecoverable(
  q: Queryable,
  customerId: string,
  scope: RecoveryScope,
): Promise<{ found: number; inactive: number; inactiveSubscriptions: number }> {
  const anyState = CANDIDATES.replace('AND s.is_active', '');
  const [row] = await q.query<{ found: number; inactive: number; inactive_subscriptions: number }>(
    'recoveries:count',
    `SELECT count(*) FILTER (WHERE s.is_active)::int AS found,
       count(*) FILTER (WHERE NOT s.is_active)::int AS inactive,
       count(DISTINCT s.id) FILTER (WHERE NOT s.is_active)::int AS inactive_subscriptions
     FROM callbacks c, subscriptions s WHERE ${anyState}`,
    scopeParams(customerId, scope),
  );
  return { found: row?.found ?? 0, inactive: row?.inactive ?? 0, inactiveSubscriptions: row?.inactive_subscriptions ?? 0 };
}

/** The customer's jobs started by POST /blockchain-events/callbacks/recover (filtered, migration 093) not finished (queued or running). */
export async function countUnfinishedFilteredRecoveries(q: Queryable, customerId: string): Promise<number> {
  const [row] = await q.query<{ n: number }>(
    'recoveries:unfinished-of-customer',
    `SELECT count(*)::int AS n FROM recoveries WHERE customer_id = $1 AND filtered AND state IN ('queued', 'running')`,
    [customerId],
  );
  return row?.n ?? 0;
}

/** A job with where its callbacks are now; undefined when it is not the customer's. */
export async function getRecovery(q: Queryable, customerId: string, id: string): Promise<RecoveryProgress | undefined> {
  const [row] = await q.query<RecoveryRow & { pending: number; delivered: number; failed: number }>(
    'recoveries:get',
    `SELECT j.*,
       (SELECT count(*)::int FROM callbacks c WHERE c.recovery_id = j.id AND c.status = 'pending') AS pending,
       (SELECT count(*)::int FROM callbacks c WHERE c.recovery_id = j.id AND c.status = 'delivered') AS delivered,
       (SELECT count(*)::int FROM callbacks c WHERE c.recovery_id = j.id AND c.status = 'failed') AS failed
     FROM recoveries j WHERE j.customer_id = $1 AND j.id = $2`,
    [customerId, id],
  );
  return row ? { ...toRecovery(row), pending: row.pending, delivered: row.delivered, failed: row.failed } : undefined;
}

/** Jobs not finished, oldest first, with their customer. */
export async function unfinishedRecoveries(q: Queryable, limit: number): Promise<{ id: string; customerId: string }[]> {
  const rows = await q.query<{ id: string; customer_id: string }>(
    'recoveries:unfinished',
    `SELECT id, customer_id FROM recoveries WHERE state IN ('queued', 'running') ORDER BY created_at LIMIT $1`,
    [limit],
  );
  return rows.map((r) => ({ id: r.id, customerId: String(r.customer_id) }));
}

export type ChunkResult = 'busy' | 'finished' | 'more';

/**
 * Runs one chunk of job `id` in one transaction (see the file comment). `busy`: another runner holds
 * the job, or it is finished. A balance that covers only part of the chunk queues that part (charged)
 * and stops the job as out_of_credits; nothing is ever queued unpaid.
 */
export async function runRecoveryChunk(db: Db, id: string, options: ChunkOptions): Promise<ChunkResult> {
  return (await queueRecoveryChunk(db, id, options)).result;
}

export interface ChunkOptions {
  chunk: number;
  costPerCallback: bigint;
  now: Date;
  /** The chunk's callbacks fall due this far apart, in their order, the first at `now` (default 0: all at once). */
  spacingMs?: number;
}

/** runRecoveryChunk, also giving the ids it queued (in due order). */
export async function queueRecoveryChunk(db: Db, id: string, options: ChunkOptions): Promise<{ result: ChunkResult; queued: string[] }> {
  return await db.transaction('recoveries:chunk', async (tx) => {
    // The cursor's time as text: created_at has microseconds, a JS Date only milliseconds.
    const [job] = await tx.query<RecoveryRow & { after_text: string | null }>(
      'recoveries:lock',
      `SELECT *, after_created_at::text AS after_text FROM recoveries WHERE id = $1 AND state IN ('queued', 'running') FOR UPDATE SKIP LOCKED`,
      [id],
    );
    if (!job) return { result: 'busy', queued: [] };
    // The next `chunk` failed or cancelled callbacks of the customer's window after the cursor, straight
    // from the index callbacks_recoverable in its order: bounded work per chunk, whatever the planner
    // estimates. The job's scope is then applied to them alone (a chunk may queue fewer, even none).
    const scope = toRecovery(job);
    const scanned = await tx.query<{ id: string }>(
      'recoveries:scan',
      `SELECT c.id FROM callbacks c
       WHERE c.customer_id = $1::bigint AND c.status IN ('failed', 'cancelled') AND c.created_at >= $2 AND c.created_at < $3
         AND (c.created_at, c.id) > ($4::timestamptz, $5::uuid)
       ORDER BY c.created_at, c.id LIMIT $6`,
      [job.customer_id, scope.since, scope.until, job.after_text ?? '-infinity', job.after_id ?? '00000000-0000-0000-0000-000000000000', options.chunk],
    );
    if (scanned.length === 0) {
      await tx.query('recoveries:done', `UPDATE recoveries SET state = 'done', finished_at = $2, updated_at = $2 WHERE id = $1`, [id, options.now]);
      return { result: 'finished', queued: [] };
    }
    // Subscriptions are locked KEY SHARE (as a resend does): a deletion at the same time either commits
    // first (its callbacks are cancelled, not picked) or waits for this chunk and cancels what it queued.
    const picked = await tx.query<{ id: string }>(
      'recoveries:pick',
      `SELECT c.id FROM callbacks c, subscriptions s
       WHERE c.id = ANY ($10::uuid[]) AND ${CANDIDATES}
       ORDER BY c.created_at, c.id
       FOR UPDATE OF c FOR KEY SHARE OF s`,
      [...scopeParams(job.customer_id, scope), scanned.map((c) => c.id)],
    );
    const per = options.costPerCallback;
    const affordable = per === 0n ? picked.length : Number((await creditBalance(tx, job.customer_id)) / per);
    const take = picked.slice(0, Math.min(picked.length, affordable));
    const cost = per * BigInt(take.length);
    const paid =
      take.length === 0 || cost === 0n || (await debitCredits(tx, job.customer_id, cost, [{ endpoint: 'recoveries', requests: 0, credits: cost }])).ok;
    const stopped = !paid || take.length < picked.length;
    if (!paid || (stopped && take.length === 0)) {
      await tx.query('recoveries:out-of-credits', `UPDATE recoveries SET state = 'out_of_credits', finished_at = $2, updated_at = $2 WHERE id = $1`, [
        id,
        options.now,
      ]);
      return { result: 'finished', queued: [] };
    }
    if (take.length > 0) {
      await tx.query(
        'recoveries:requeue',
        `UPDATE callbacks c SET status = 'pending', next_attempt_at = $2::timestamptz + (u.n - 1) * $4::float8 * interval '1 millisecond',
           series_start = attempts, finished_at = NULL, outcome = NULL, recovery_id = $3
         FROM unnest($1::uuid[]) WITH ORDINALITY AS u(id, n)
         WHERE c.id = ANY ($1::uuid[]) AND c.id = u.id`,
        [take.map((c) => c.id), options.now, id, options.spacingMs ?? 0],
      );
    }
    // Out of credits: up to the last one queued (the rest stays failed); otherwise past every one scanned.
    const last = (stopped ? take.at(-1) : scanned.at(-1)) as { id: string };
    // A short chunk was the last of the window: the job is done now, not after one more empty chunk
    // (by which time its callbacks may all be delivered, shown as a job still running).
    const state = stopped ? 'out_of_credits' : scanned.length < options.chunk ? 'done' : 'running';
    await tx.query(
      'recoveries:advance',
      // The cursor is copied from the row in SQL: created_at has microseconds, a JS Date only milliseconds.
      `UPDATE recoveries SET queued = queued + $2, credits_consumed = credits_consumed + $3,
         after_created_at = (SELECT created_at FROM callbacks WHERE id = $4), after_id = $4,
         state = $5, finished_at = CASE WHEN $5 <> 'running' THEN $6::timestamptz END, updated_at = $6
       WHERE id = $1`,
      [id, take.length, String(cost), last.id, state, options.now],
    );
    // Workers are woken when this commits, not before: a rolled-back chunk wakes nobody. A paced chunk
    // (spread due times) wakes none: it is paced because the worker is saturated, claiming without a
    // pause, and a wake would only make it forget what its last claims proved (worker.ts) for nothing.
    if (!options.spacingMs) await tx.query('callbacks:notify', `SELECT pg_notify('${CALLBACKS_CHANNEL}', '')`);
    return { result: state === 'running' ? 'more' : 'finished', queued: take.map((c) => c.id) };
  });
}

/** How many of these callbacks are pending without an attempt in their current series (a recovery chunk not yet sent). */
export async function countUnattempted(q: Queryable, ids: string[]): Promise<number> {
  if (ids.length === 0) return 0;
  const [row] = await q.query<{ n: number }>(
    'recoveries:unattempted',
    `SELECT count(*)::int AS n FROM callbacks WHERE id = ANY ($1::uuid[]) AND status = 'pending' AND attempts = series_start`,
    [ids],
  );
  return row?.n ?? 0;
}
