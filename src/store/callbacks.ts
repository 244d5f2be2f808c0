/**
 * The callback outbox and its attempt log. Producers enqueue inside their own transaction; delivery
 * workers claim due callbacks (a lease of their destination: destination_leases, migration 094), send
 * outside any transaction, and record outcomes in batches.
 */

import { randomUUID } from 'node:crypto';
import { type CallbackEventType, type ChainKey, type EventType, HELD_EVENTS } from '../domain/chains.ts';
import type { NewCallback } from '../domain/events.ts';
import { unixSeconds } from '../domain/time.ts';
import { addToTallies, type TallyKind } from './alerts.ts';
import type { Db, Queryable } from './db.ts';
import { openSecret } from './secret-box.ts';

export const CALLBACKS_CHANNEL = 'herald_callbacks';

/** The event types a held chain holds (domain/chains.ts HELD_EVENTS) as an SQL array literal: a constant, no parameter on the hot path. */
export const HELD_TYPES_SQL = `ARRAY[${[...HELD_EVENTS].map((t) => `'${t}'`).join(', ')}]::text[]`;

/**
 * Whether the chain named by the SQL expressions `blockchain`, `network` is held (store/chain-holds.ts):
 * uncorrelated with the rows, so PostgreSQL evaluates it once per statement (an InitPlan).
 */
export function chainHeldSql(blockchain: string, network: string): string {
  return `EXISTS (SELECT 1 FROM chain_holds h WHERE h.blockchain = ${blockchain} AND h.network = ${network})`;
}

/** The due time a revived callback of event type `eventType` (an SQL expression) gets: 'infinity' (held) when its chain is held and it is a confirmed event. */
export function dueOrHeldSql(eventType: string, due: string, blockchain: string, network: string): string {
  return `CASE WHEN ${eventType} = ANY (${HELD_TYPES_SQL}) AND ${chainHeldSql(blockchain, network)} THEN 'infinity'::timestamptz ELSE ${due} END`;
}

/** scheme://host:port of a URL: callbacks to one destination share its concurrency cap. */
export function destinationOf(url: string): string {
  const u = new URL(url);
  return `${u.protocol}//${u.hostname}:${u.port || (u.protocol === 'https:' ? '443' : '80')}`;
}

/**
 * Adds callbacks to the outbox in the caller's transaction, due at `now`; one already there (same
 * subscription and idempotencyKey) is left alone. Workers are woken when the transaction commits.
 *
 * Each new callback takes the next number of its subscription's sequence (x-callback-sequence), in the
 * order given: callers pass a block's callbacks in block order. Numbers go only to the rows actually
 * inserted (a callback already there, or given twice, takes none), so a subscription's numbers stay
 * consecutive. The counter row of a subscription is written only under its chain's lock (the block
 * transaction, the already-mined check, the rewind), so no two transactions wait on the same row.
 *
 * The insert first (ON CONFLICT alone knows which rows are new, without a look-up of its own), then
 * one statement bumps the counters and numbers the new rows by primary key (and wakes the workers, unless
 * `notify` is false: a caller that wakes them in a statement of its own). A single statement that first left out the
 * keys already queued was tried: the planner turned that check into a hash anti-join over the whole
 * outbox (seen with EXPLAIN on a small table), a cost that grows with the table. The price of the
 * numbering, measured once, is in docs/concepts/callbacks-and-retries.md ("Callback order").
 */
export async function enqueueCallbacks(
  tx: Queryable,
  callbacks: NewCallback<CallbackEventType>[],
  now: Date = new Date(),
  options: { notify?: boolean; chain?: ChainKey } = {},
): Promise<number> {
  if (callbacks.length === 0) return 0;
  const notify = options.notify ?? true;
  const { inserted, numbering } = await insertCallbacks(tx, callbacks, now, options.chain);
  if (inserted > 0) {
    await tx.query(
      notify ? 'callbacks:number-notify' : 'callbacks:number',
      `WITH ${numberingCtes('$1', '$2', '$3', '$4', '$5', '$6')}
       SELECT ${notify ? `pg_notify('${CALLBACKS_CHANNEL}', '')` : '1'}`,
      numberingParameters(numbering),
    );
    return inserted;
  }
  if (notify) await notifyCallbacks(tx);
  return 0;
}

/** What numbering the callbacks just inserted needs: each new row's rank among its subscription's new rows, in the order given. */
export interface CallbackNumbering {
  /** New rows per subscription. */
  counts: Map<string, number>;
  fresh: { id: string; subscriptionId: string; rank: number }[];
}

/**
 * enqueueCallbacks' first half, for a caller that numbers the rows in a statement of its own (the block
 * transaction's write, store/block-apply.ts, with numberingCtes): the insert, and the numbering it calls for.
 */
export async function insertCallbacks(
  tx: Queryable,
  callbacks: NewCallback<CallbackEventType>[],
  now: Date,
  chain?: ChainKey,
): Promise<{ inserted: number; numbering: CallbackNumbering }> {
  const counts = new Map<string, number>();
  if (callbacks.length === 0) return { inserted: 0, numbering: { counts, fresh: [] } };
  // With the chain named (every producer of confirmed callbacks, under the chain's lock): a held chain's
  // confirmed callbacks go in held, due at 'infinity' and out of the event stream until the release. The
  // chain's hold is an InitPlan (one index probe per statement, EXPLAIN ANALYZE: loops=1), tested first so
  // that a chain not held evaluates nothing per row; the statement's server time was within the run's noise
  // of the plain insert's (20 and 200 rows, medians of 150 to 300 alternating runs, 2026-12-02).
  const held = chain ? `${chainHeldSql('$10', '$11')} AND u.url IS NOT NULL AND u.event_type = ANY (${HELD_TYPES_SQL})` : 'false';
  const rows = await tx.query<{ id: string }>(
    chain ? 'callbacks:enqueue-holding' : 'callbacks:enqueue',
    // A pull-only subscription's callback (no URL) is written already finished, cancelled with outcome
    // pull_only: the event stream reads it, delivery, recovery and replay never see it (migration 055).
    // It is never held: the breaker holds deliveries (docs/concepts/confirmations-and-reorganisations.md#the-deep-reorganisation-breaker).
    `INSERT INTO callbacks (id, customer_id, subscription_id, event_type, idempotency_key, body, callback_url, destination, next_attempt_at,
       status, outcome, finished_at${chain ? ', stream_xid' : ''})
     SELECT u.*, ${chain ? `CASE WHEN ${held} THEN 'infinity'::timestamptz ELSE $9::timestamptz END` : '$9::timestamptz'},
       CASE WHEN u.url IS NULL THEN 'cancelled' ELSE 'pending' END, CASE WHEN u.url IS NULL THEN 'pull_only' END,
       CASE WHEN u.url IS NULL THEN $9::timestamptz END${chain ? `, CASE WHEN ${held} THEN NULL ELSE pg_current_xact_id() END` : ''}
     FROM unnest($1::uuid[], $2::bigint[], $3::uuid[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
       AS u (id, customer_id, subscription_id, event_type, idempotency_key, body, url, destination)
     ON CONFLICT (subscription_id, idempotency_key) DO NOTHING
     RETURNING id`,
    [
      callbacks.map((c) => c.id),
      callbacks.map((c) => c.customerId),
      callbacks.map((c) => c.subscriptionId),
      callbacks.map((c) => c.eventType),
      callbacks.map((c) => c.idempotencyKey),
      callbacks.map((c) => c.body),
      callbacks.map((c) => c.callbackUrl),
      callbacks.map((c) => (c.callbackUrl === null ? null : destinationOf(c.callbackUrl))),
      now,
      ...(chain ? [chain.blockchain, chain.network] : []),
    ],
  );
  // In the order given (RETURNING promises none): each new row's rank among its subscription's new rows.
  const inserted = new Set(rows.map((r) => r.id));
  const fresh = callbacks
    .filter((c) => inserted.has(c.id))
    .map((c) => {
      const rank = (counts.get(c.subscriptionId) ?? 0) + 1;
      counts.set(c.subscriptionId, rank);
      return { id: c.id, subscriptionId: c.subscriptionId, rank };
    });
  return { inserted: rows.length, numbering: { counts, fresh } };
}

/**
 * The CTEs that bump the counters and number the new rows, given the parameter references ($n) of
 * numberingParameters' six arrays: a subscription's new numbers are last - count + 1 .. last, by rank.
 * The UPDATE names the rows by id = ANY: joined to the unnest alone, the prepared statement's generic
 * plan scanned the whole outbox, 10 to 25 times slower for blocks of many callbacks (docs/benchmarks.md, "Retired measurements").
 * The rows must have been inserted by an earlier statement (a CTE does not see its siblings' rows).
 */
export function numberingCtes(subscriptions: string, counts: string, ids: string, idSubscriptions: string, ranks: string, idCounts: string): string {
  return `bumped AS (
         INSERT INTO callback_sequences AS s (subscription_id, last) SELECT * FROM unnest(${subscriptions}::uuid[], ${counts}::bigint[])
         ON CONFLICT (subscription_id) DO UPDATE SET last = s.last + excluded.last
         RETURNING s.subscription_id, s.last),
       numbered AS (
         UPDATE callbacks c SET sequence = b.last - k.count + k.rank
         FROM unnest(${ids}::uuid[], ${idSubscriptions}::uuid[], ${ranks}::bigint[], ${idCounts}::bigint[]) AS k (id, subscription_id, rank, count)
           JOIN bumped b ON b.subscription_id = k.subscription_id
         WHERE c.id = ANY (${ids}::uuid[]) AND c.id = k.id)`;
}

export function numberingParameters(n: CallbackNumbering): unknown[] {
  return [
    [...n.counts.keys()],
    [...n.counts.values()],
    n.fresh.map((c) => c.id),
    n.fresh.map((c) => c.subscriptionId),
    n.fresh.map((c) => c.rank),
    n.fresh.map((c) => n.counts.get(c.subscriptionId) as number),
  ];
}

/** Wakes the delivery workers when the transaction commits. */
export async function notifyCallbacks(tx: Queryable): Promise<void> {
  await tx.query('callbacks:notify', `SELECT pg_notify('${CALLBACKS_CHANNEL}', '')`);
}

/**
 * Unreachable outcomes in a row (no answer between them) that park a destination (migration 035): one
 * reset connection or timeout is the callback's own retry, not a reason to hold back every other callback
 * of a busy receiver; a receiver that is down fills its concurrency with failures within one timeout.
 */
export const PARK_AFTER_FAILURES = 3;

/** A claimed callback: what was enqueued, plus what sending it needs. */
export interface ClaimedCallback extends NewCallback {
  /** Never null here: a pull-only subscription's callbacks are never pending (migration 055's check). */
  callbackUrl: string;
  destination: string;
  /** Attempts before this one. */
  attempts: number;
  /** Attempts of the current series before this one (the retry schedule counts these). */
  seriesAttempts: number;
  secret: string | null;
  /** The secret a rotation replaced, while its overlap lasts (null after it, or without a rotation). */
  previousSecret: string | null;
  /** Its number in the subscription's sequence (x-callback-sequence); null for callbacks older than the numbering. */
  sequence: number | null;
  /** The callback URL's host is (still) a verified domain of the customer. */
  domainVerified: boolean;
  /** The customer's own allow-list of non-public networks (customers.allow_networks), read at the claim. */
  allowNetworks: string[];
  /** When it was due (before the claim moved next_attempt_at on by the lease). */
  dueAt: Date;
  /** Queued again by a bulk recovery job: the worker's live load (what recoveries give way to) leaves it out. */
  recovered: boolean;
  /** Claimed as the probe of a parked destination: its outcome parks the destination again or lets it go. */
  probe: boolean;
  /** Its destination took its whole share of the claim: more of it may be due. */
  shareFilled: boolean;
}

/** What a claim took; madeDormant: callbacks of inactive subscriptions it reached and held out of the index instead (more may be due). */
export interface Claim {
  callbacks: ClaimedCallback[];
  madeDormant: number;
  /** How many destinations the claim could take callbacks of (due, not skipped, parked or leased to another worker). */
  openDestinations: number;
}

interface ClaimRow {
  id: string;
  customer_id: string;
  subscription_id: string;
  event_type: EventType;
  idempotency_key: string;
  body: string;
  callback_url: string;
  destination: string;
  attempts: number;
  series_start: number;
  secret: string | null;
  previous_secret: string | null;
  sequence: string | null;
  domain_verified: boolean;
  allow_networks: string[];
  due_at: Date;
  recovered: boolean;
  probe: boolean;
  share_filled: boolean;
}

/**
 * Claims up to `limit` due callbacks of active subscriptions, skipping destinations another worker holds,
 * destinations in `skipDestinations` (those already at their concurrency cap here), parked destinations
 * (see destination_parking in migration 035) and the callbacks in `inFlight`. The claim is a lease of each
 * destination it takes callbacks of, to `holder`, until now + leaseMs (migration 094): the callbacks are not
 * written, so they stay due as they were; no other worker claims them until the lease ends (a worker that
 * died: they are sent again then, with the same idempotency key), and the holder leaves out those it has on
 * their way until their outcomes are recorded.
 *
 * It goes destination by destination (docs/concepts/delivery.md): a skip scan lists the destinations with pending callbacks and their earliest due time,
 * then each open destination due now gets an equal share of `limit` (at least `minShare`, at most its
 * capacity: `capacities`, else `maxPerDestination`), oldest due first. A skipped or parked destination costs one index probe, however many callbacks wait for it; a
 * claim never walks past another destination's backlog. A parked destination whose time has come gets
 * one callback, its probe (the one that parked it when it is still due, else its oldest due), and is
 * held for the lease meanwhile, so that concurrent claims do not probe it again.
 *
 * Callbacks of inactive subscriptions are not in the index it reads (dormant, migration 084): a pause holds
 * them out, and a callback the claim reaches whose subscription is inactive (deactivated by the worker's
 * recording, or queued for it since) is held out by the claim instead of being sent, once
 * (`madeDormant` counts them). An activation makes them claimable again (store/subscriptions.ts setActive).
 */
export async function claimDueCallbacks(db: Queryable, options: ClaimOptions): Promise<ClaimedCallback[]> {
  return (await claimDue(db, options)).callbacks;
}

export interface ClaimOptions {
  now: Date;
  limit: number;
  leaseMs: number;
  skipDestinations: string[];
  minShare?: number;
  /** At most this many of one destination (default: no cap but the share); `capacities` for the listed ones. */
  maxPerDestination?: number;
  capacities?: Map<string, number>;
  /**
   * The worker claiming (a random id per worker process): the destinations it takes callbacks of are leased
   * to it. Default: a new id, as a worker of its own would be.
   */
  holder?: string;
  /** Callbacks this holder has on their way (claimed, their outcome not recorded yet): not claimed again. */
  inFlight?: readonly string[];
}

/**
 * A recursive CTE `dests(destination, first_due)`: the destinations with pending callbacks, each with its
 * oldest due time, by a skip scan of the claims' index (one index probe per destination). Shared by the
 * claim and the queue metrics (store/queue-stats.ts), so both list destinations the same way.
 */
export const PENDING_DESTINATIONS = `dests AS (
       (SELECT c.destination, c.next_attempt_at AS first_due FROM callbacks c WHERE c.status = 'pending' AND NOT c.dormant
        ORDER BY c.destination, c.next_attempt_at LIMIT 1)
       UNION ALL
       SELECT n.destination, n.first_due FROM dests d CROSS JOIN LATERAL (
         SELECT c.destination, c.next_attempt_at AS first_due FROM callbacks c
         WHERE c.status = 'pending' AND NOT c.dormant AND c.destination > d.destination
         ORDER BY c.destination, c.next_attempt_at LIMIT 1) n)`;

/** claimDueCallbacks, with how many callbacks of inactive subscriptions the claim held out (the worker claims again at once then). */
export async function claimDue(db: Queryable, options: ClaimOptions): Promise<Claim> {
  const all = await db.query<ClaimRow & { made_dormant: number; open_destinations: number }>(
    'callbacks:claim',
    `WITH RECURSIVE ${PENDING_DESTINATIONS},
     open AS (
       SELECT d.destination, coalesce(p.failures >= $6, false) AS probing, p.probe_callback_id, count(*) OVER () AS n,
         coalesce(cap.n, $9) AS cap
       FROM dests d LEFT JOIN destination_parking p ON p.destination = d.destination
         LEFT JOIN unnest($7::text[], $8::int[]) AS cap(destination, n) ON cap.destination = d.destination
         LEFT JOIN destination_leases l ON l.destination = d.destination
       WHERE d.first_due <= $1 AND d.destination <> ALL ($4::text[]) AND (p.failures IS NULL OR p.failures < $6 OR p.parked_until <= $1)
         AND (l.holder IS NULL OR l.holder = $10 OR l.leased_until <= $1)),
     -- A parked destination's probe: the callback that parked it, while still pending and due.
     probe AS (
       SELECT c.id, c.next_attempt_at AS due_at, o.destination, c.subscription_id FROM open o JOIN callbacks c ON c.id = o.probe_callback_id
       WHERE o.probing AND c.status = 'pending' AND NOT c.dormant AND c.next_attempt_at <= $1 AND c.id <> ALL ($11::uuid[])
         AND EXISTS (SELECT 1 FROM subscriptions s WHERE s.id = c.subscription_id AND s.is_active)),
     picked AS (
       SELECT p.id, p.due_at, p.destination, p.subscription_id, true AS probing, false AS share_filled FROM probe p
       UNION ALL
       SELECT x.id, x.due_at, o.destination, x.subscription_id, o.probing,
         NOT o.probing AND count(*) OVER (PARTITION BY o.destination) >= least(o.cap, greatest($5, ceil($2::float8 / o.n))) AS share_filled
       FROM open o CROSS JOIN LATERAL (
         SELECT c.id, c.next_attempt_at AS due_at, c.subscription_id FROM callbacks c
         WHERE c.status = 'pending' AND NOT c.dormant AND c.destination = o.destination AND c.next_attempt_at <= $1
           -- A hashed anti-join (built once per claim): the scan walks past this worker's callbacks in flight,
           -- the oldest due, and '<> ALL' would compare each with every one of them.
           AND c.id NOT IN (SELECT unnest($11::uuid[]))
         ORDER BY c.next_attempt_at
         LIMIT CASE WHEN o.probing THEN 1 ELSE least(o.cap, greatest($5, ceil($2::float8 / o.n)))::int END) x
       -- A parked destination whose probe this holder has on its way gets nothing more: its outcome decides
       -- (the hold of the parking below may end first: a lease shorter than the receiver's timeout).
       WHERE NOT o.probing OR (o.destination NOT IN (SELECT destination FROM probe) AND coalesce(o.probe_callback_id <> ALL ($11::uuid[]), true))),
     due AS (SELECT * FROM picked ORDER BY due_at LIMIT $2),
     -- Callbacks of inactive subscriptions (migration 084): never sent, and made dormant, out of this index,
     -- so that no claim reaches them again until an activation. Only under a share lock on a subscription
     -- still inactive: an activation waits for this claim (then clears what it made dormant), or this claim
     -- for it (then it finds the subscription active and leaves the rows as they are).
     asleep AS (SELECT s.id FROM subscriptions s WHERE s.id IN (SELECT subscription_id FROM due) AND NOT s.is_active),
     still_asleep AS (SELECT s.id FROM subscriptions s WHERE s.id IN (SELECT id FROM asleep) AND NOT s.is_active FOR SHARE OF s SKIP LOCKED),
     slept AS (
       UPDATE callbacks c SET dormant = true FROM due WHERE c.id = due.id AND due.subscription_id IN (SELECT id FROM still_asleep) RETURNING c.id),
     sendable AS (SELECT * FROM due WHERE due.subscription_id NOT IN (SELECT id FROM asleep)),
     -- The lease: of each destination the claim takes callbacks of, unless another worker holds it (a
     -- concurrent claim of another worker waits for this one's row, then finds it held and takes nothing of it).
     -- Rows in destination order, as the heartbeat and the release lock them (renewLeases): two statements
     -- locking the same leases in different orders deadlock (a second's stall and one of them aborted).
     leased AS (
       INSERT INTO destination_leases AS l (destination, holder, leased_until)
       SELECT DISTINCT destination, $10::uuid, $1::timestamptz + $3 * interval '1 millisecond' FROM sendable ORDER BY destination
       ON CONFLICT (destination) DO UPDATE SET holder = EXCLUDED.holder, leased_until = EXCLUDED.leased_until
       WHERE l.holder = EXCLUDED.holder OR l.leased_until <= $1
       RETURNING l.destination),
     held AS (
       UPDATE destination_parking p SET parked_until = $1::timestamptz + $3 * interval '1 millisecond', probe_callback_id = due.id
       FROM sendable due WHERE due.probing AND p.destination = due.destination AND due.destination IN (SELECT destination FROM leased)),
     -- What a callback takes from its subscription, looked up once per subscription, not once per callback
     -- (a claim's callbacks share a few subscriptions).
     subs AS (
       SELECT s.id, s.callback_secret_key AS secret,
         CASE WHEN s.previous_secret_until > $1 THEN s.previous_callback_secret_key END AS previous_secret,
         EXISTS (SELECT 1 FROM callback_domains d WHERE d.customer_id = s.customer_id AND d.domain = s.callback_host AND d.verified_at IS NOT NULL) AS domain_verified,
         (SELECT cu.allow_networks::text[] FROM customers cu WHERE cu.id = s.customer_id) AS allow_networks
       FROM subscriptions s WHERE s.id IN (SELECT subscription_id FROM sendable)),
     claimed AS (
     SELECT c.id, c.customer_id, c.subscription_id, c.event_type, c.idempotency_key, c.body, c.callback_url, c.destination,
       c.attempts, c.series_start, s.secret, c.sequence, s.previous_secret, s.domain_verified, s.allow_networks,
       due.due_at, c.recovery_id IS NOT NULL AS recovered, due.probing AS probe, due.share_filled
     FROM sendable due JOIN callbacks c ON c.id = due.id JOIN subs s ON s.id = c.subscription_id
     WHERE due.destination IN (SELECT destination FROM leased))
     -- One row with id NULL when nothing was claimed: the count of callbacks made dormant comes back either way.
     -- The claim commits without waiting for its WAL to reach the disk (synchronous_commit off for this
     -- statement's transaction alone): all it writes are leases, a probe's hold and dormant marks, and all a
     -- database crash in the next fraction of a second can lose of them is a lease, i.e. a callback sent
     -- again with its idempotencyKey, which delivery allows anyway (docs/concepts/delivery.md). A claim that
     -- waits for the flush waits for the disk (sampled in the outage benchmark: WalSync among its waits
     -- while a million callbacks were being inserted), and every callback due meanwhile waits for the claim.
     SELECT k.*, n.made_dormant, n.open_destinations, n.commit_mode
     FROM (SELECT (SELECT count(*)::int FROM slept) AS made_dormant, (SELECT count(*)::int FROM open) AS open_destinations,
             set_config('synchronous_commit', 'off', true) AS commit_mode) n
     LEFT JOIN claimed k ON true`,
    [
      options.now,
      options.limit,
      options.leaseMs,
      options.skipDestinations,
      options.minShare ?? 1,
      PARK_AFTER_FAILURES,
      [...(options.capacities?.keys() ?? [])],
      [...(options.capacities?.values() ?? [])],
      options.maxPerDestination ?? options.limit,
      options.holder ?? randomUUID(),
      options.inFlight ?? [],
    ],
  );
  const rows = all.filter((r) => r.id !== null);
  const claimed = rows.map((r) => ({
    id: r.id,
    customerId: r.customer_id,
    subscriptionId: r.subscription_id,
    eventType: r.event_type,
    idempotencyKey: r.idempotency_key,
    body: r.body,
    callbackUrl: r.callback_url,
    destination: r.destination,
    attempts: r.attempts,
    seriesAttempts: r.attempts - r.series_start,
    // Decrypted here, in the worker that claimed the row (a few microseconds each: store/secret-box.ts).
    secret: openSecret(r.secret, r.subscription_id),
    previousSecret: openSecret(r.previous_secret, r.subscription_id),
    sequence: r.sequence === null ? null : Number(r.sequence),
    domainVerified: r.domain_verified,
    allowNetworks: r.allow_networks ?? [],
    dueAt: r.due_at,
    recovered: r.recovered,
    probe: r.probe,
    shareFilled: r.share_filled,
  }));
  return { callbacks: claimed, madeDormant: all[0]?.made_dormant ?? 0, openDestinations: all[0]?.open_destinations ?? 0 };
}

/**
 * The delivery worker's heartbeat (docs/concepts/delivery.md): renews `holder`'s leases of `destinations`
 * until now + leaseMs; with `prune`, also deletes the leases (anyone's) that ended more than an hour ago,
 * which are as good as absent (a claim takes an ended lease as it takes a missing one).
 */
export async function renewLeases(db: Queryable, holder: string, destinations: readonly string[], now: Date, leaseMs: number, prune: boolean): Promise<void> {
  // Each statement locks its rows in destination order, as a claim does (claimDue's leased): in another
  // order, a renewal and a claim of the same worker (the same leases) deadlock.
  if (destinations.length > 0) {
    await db.query(
      'callbacks:renew-leases',
      `WITH mine AS (
         SELECT destination FROM destination_leases WHERE holder = $1 AND destination = ANY ($2::text[]) ORDER BY destination FOR UPDATE)
       UPDATE destination_leases l SET leased_until = $3::timestamptz + $4 * interval '1 millisecond'
       FROM mine WHERE l.destination = mine.destination AND l.holder = $1`,
      [holder, destinations, now, leaseMs],
    );
  }
  if (prune) {
    await db.query(
      'callbacks:prune-leases',
      `DELETE FROM destination_leases l USING (
         SELECT destination FROM destination_leases WHERE leased_until < $1::timestamptz - interval '1 hour' ORDER BY destination FOR UPDATE) old
       WHERE l.destination = old.destination AND l.leased_until < $1::timestamptz - interval '1 hour'`,
      [now],
    );
  }
}

/** Lets `holder`'s leases go (a worker that stopped with every outcome recorded), in destination order as renewLeases. */
export async function releaseLeases(db: Queryable, holder: string): Promise<void> {
  await db.query(
    'callbacks:release-leases',
    `DELETE FROM destination_leases l USING (SELECT destination FROM destination_leases WHERE holder = $1 ORDER BY destination FOR UPDATE) mine
     WHERE l.destination = mine.destination AND l.holder = $1`,
    [holder],
  );
}

export type ErrorClass = 'timeout' | 'connection_refused' | 'connection_reset' | 'tls' | 'dns' | 'refused_destination' | 'bad_status';

/** What one attempt to reach a receiver did, as the attempt log keeps it. */
export interface AttemptRecord {
  startedAt: Date;
  durationMs: number;
  httpStatus: number | null;
  errorClass: ErrorClass | null;
  errorMessage: string | null;
  responseBody: string | null;
}

/** What one attempt did, and what becomes of the callback. */
export interface AttemptOutcome extends AttemptRecord {
  callbackId: string;
  /** The callback's destination, and whether it was claimed as the probe of a parked one (see claimDueCallbacks). */
  destination: string;
  probe: boolean;
  /** delivered; retry at nextAttemptAt; gone (410: stop, deactivate); exhausted (no retry left). */
  result: 'delivered' | 'retry' | 'gone' | 'exhausted';
  nextAttemptAt: Date | null;
}

/**
 * Records a batch of outcomes in one transaction: the attempts, the callbacks' new state, and the
 * deactivations (410: the callback's subscription, `callback_url_gone`; retries exhausted: every active
 * subscription of the customer with the same event type and callbackUrl,
 * `maximum_retry_attempts_reached`), counted for the operator alerts (store/alerts.ts) with the
 * exhausted callbacks. A callback cancelled meanwhile (its subscription was deleted) keeps its state;
 * the attempt is still logged.
 */
export async function recordOutcomes(db: Db, outcomes: AttemptOutcome[], now: Date): Promise<void> {
  if (outcomes.length === 0) return;
  const status = (o: AttemptOutcome) => (o.result === 'delivered' ? 'delivered' : o.result === 'retry' ? 'pending' : 'failed');
  const ending = (o: AttemptOutcome) => (o.result === 'gone' ? 'callback_url_gone' : o.result === 'exhausted' ? 'maximum_retry_attempts_reached' : null);
  const ended = outcomes.filter((o) => o.result === 'gone' || o.result === 'exhausted');
  const write = async (tx: Queryable) => {
    await tx.query(
      'callbacks:record-outcomes',
      `WITH o AS (
         SELECT * FROM unnest($1::uuid[], $2::text[], $3::timestamptz[], $4::text[], $5::timestamptz[], $6::int[], $7::int[], $8::text[], $9::text[], $10::text[],
             $12::text[], $13::boolean[])
           AS o(id, status, next_at, outcome, started_at, duration_ms, http_status, error_class, error_message, response_body, destination, probe)),
       updated AS (
         UPDATE callbacks c SET
           attempts = c.attempts + 1,
           status = CASE WHEN c.status = 'pending' THEN o.status ELSE c.status END,
           -- A callback held while it was in flight (store/chain-holds.ts tripBreaker) stays held.
           next_attempt_at = CASE WHEN c.status = 'pending' AND o.status = 'pending' AND c.next_attempt_at <> 'infinity' THEN o.next_at ELSE c.next_attempt_at END,
           finished_at = CASE WHEN c.status = 'pending' AND o.status <> 'pending' THEN $11::timestamptz ELSE c.finished_at END,
           outcome = CASE WHEN c.status = 'pending' THEN o.outcome ELSE c.outcome END
         FROM o WHERE c.id = o.id
         RETURNING c.id, c.attempts),
       -- The operator's attempts-per-minute chart (store/history.ts): counted by this statement, so each
       -- attempt exactly once. Rows in a fixed order, so concurrent workers lock them in the same order.
       counted AS (
         INSERT INTO delivery_minutes AS m (minute, outcome, attempts)
         SELECT date_trunc('minute', o.started_at), CASE o.status WHEN 'delivered' THEN 'delivered' WHEN 'pending' THEN 'retried' ELSE 'failed' END, count(*)
         FROM o JOIN updated u ON u.id = o.id
         GROUP BY 1, 2 ORDER BY 1, 2
         ON CONFLICT (minute, outcome) DO UPDATE SET attempts = m.attempts + EXCLUDED.attempts),
       -- Parking (migration 035): a destination that answered is let go; one that could not be reached
       -- PARK_AFTER_FAILURES times in a row is parked until the next retry of the callback that found it
       -- so last (the probe, when the batch has its outcome), unless it is parked already and this was not
       -- its probe (a callback sent before it was).
       reach AS (
         SELECT o.id, o.destination, o.probe, o.next_at, o.error_message,
           CASE WHEN o.error_class IN ('timeout', 'connection_refused', 'connection_reset', 'tls', 'dns')
             THEN 'unreachable' WHEN o.http_status IS NOT NULL THEN 'answered' END AS verdict
         FROM o),
       unparked AS (
         DELETE FROM destination_parking p WHERE p.destination IN (SELECT destination FROM reach WHERE verdict = 'answered')),
       parked AS (
         INSERT INTO destination_parking AS p (destination, parked_until, probe_callback_id, parked_at, failures, last_error)
         SELECT DISTINCT ON (r.destination) r.destination, coalesce(r.next_at, $11::timestamptz), r.id, $11::timestamptz, r.n, r.error_message
         FROM (SELECT reach.*, count(*) OVER (PARTITION BY reach.destination) AS n FROM reach WHERE reach.verdict = 'unreachable') r
         WHERE r.destination NOT IN (SELECT destination FROM reach WHERE verdict = 'answered')
         ORDER BY r.destination, r.probe DESC, r.next_at
         ON CONFLICT (destination) DO UPDATE SET parked_until = EXCLUDED.parked_until, probe_callback_id = EXCLUDED.probe_callback_id,
           failures = p.failures + EXCLUDED.failures, last_error = EXCLUDED.last_error
         WHERE p.failures < $14 OR p.probe_callback_id = EXCLUDED.probe_callback_id OR p.parked_until <= $11::timestamptz)
       INSERT INTO callback_attempts (callback_id, attempt, started_at, duration_ms, http_status, error_class, error_message, response_body)
       SELECT o.id, u.attempts, o.started_at, o.duration_ms, o.http_status, o.error_class, o.error_message, o.response_body
       FROM o JOIN updated u ON u.id = o.id`,
      [
        outcomes.map((o) => o.callbackId),
        outcomes.map(status),
        outcomes.map((o) => o.nextAttemptAt),
        outcomes.map(ending),
        outcomes.map((o) => o.startedAt),
        outcomes.map((o) => Math.round(o.durationMs)),
        outcomes.map((o) => o.httpStatus),
        outcomes.map((o) => o.errorClass),
        outcomes.map((o) => o.errorMessage),
        outcomes.map((o) => o.responseBody),
        now,
        outcomes.map((o) => o.destination),
        outcomes.map((o) => o.probe),
        PARK_AFTER_FAILURES,
      ],
    );
    if (ended.length > 0) {
      // Also counts, for the operator alerts, the subscriptions deactivated and the callbacks whose
      // retries ran out, per customer and destination: counted in this transaction, they are neither
      // lost nor counted twice, and a flood (thousands deactivated at once) is a few counters, not rows.
      const counted = await tx.query<{ kind: TallyKind; customer_id: string; destination: string; reason: string | null; count: number }>(
        'callbacks:deactivate',
        `WITH ended AS (
           SELECT c.customer_id, c.subscription_id, c.event_type, c.callback_url, c.destination, o.reason
           FROM unnest($1::uuid[], $2::text[]) AS o(id, reason) JOIN callbacks c ON c.id = o.id),
         deactivated AS (
           UPDATE subscriptions s SET is_active = false,
             deactivation_reasons = s.deactivation_reasons || jsonb_build_array(jsonb_build_object('reason', e.reason, 'timestamp', $3::bigint))
           FROM ended e
           WHERE s.is_active AND (
             (e.reason = 'callback_url_gone' AND s.id = e.subscription_id) OR
             (e.reason = 'maximum_retry_attempts_reached' AND s.customer_id = e.customer_id AND s.event_type = e.event_type AND s.callback_url = e.callback_url))
           RETURNING s.customer_id, e.destination, e.reason)
         SELECT 'subscription.deactivated' AS kind, customer_id, destination, reason, count(*)::int AS count
         FROM deactivated GROUP BY customer_id, destination, reason
         UNION ALL
         SELECT 'callbacks.exhausted', customer_id, destination, NULL, count(*)::int
         FROM ended WHERE reason = 'maximum_retry_attempts_reached' GROUP BY customer_id, destination`,
        [ended.map((o) => o.callbackId), ended.map(ending), unixSeconds(now)],
      );
      await addToTallies(
        tx,
        counted.map((r) => ({ kind: r.kind, customerId: String(r.customer_id), destination: r.destination, reason: r.reason, count: r.count })),
        now,
      );
    }
  };
  // The usual batch is one statement, atomic on its own: no BEGIN and COMMIT round trips for it.
  if (ended.length === 0) await write(db);
  else await db.transaction('callbacks:record', write);
}

/**
 * Lets a parked destination go because it answered outside the worker (a test callback got an HTTP
 * answer: docs/concepts/delivery.md, "Parking a destination that cannot be reached"), and wakes the
 * workers: its due callbacks are claimed at once rather than at its probe's next retry. False when it
 * was not parked.
 */
export async function releaseParkedDestination(db: Db, destination: string): Promise<boolean> {
  return db.transaction('callbacks:release-parking', async (tx) => {
    const rows = await tx.query('callbacks:release-parking', 'DELETE FROM destination_parking WHERE destination = $1 RETURNING destination', [destination]);
    if (rows.length > 0) await notifyCallbacks(tx);
    return rows.length > 0;
  });
}

/** Cancels a subscription's callbacks not yet delivered (its deletion, in the same transaction). */
export async function cancelPendingCallbacks(tx: Queryable, customerId: string, subscriptionId: string, now: Date = new Date()): Promise<number> {
  const rows = await tx.query(
    'callbacks:cancel',
    `UPDATE callbacks SET status = 'cancelled', outcome = 'subscription_deleted', finished_at = $3
     WHERE customer_id = $1 AND subscription_id = $2 AND status = 'pending' RETURNING id`,
    [customerId, subscriptionId, now],
  );
  return rows.length;
}

export type RequeueState = 'queued' | 'not-found' | 'subscription-deleted' | 'pending' | 'cancelled' | { pullOnly: string };

/**
 * Puts a delivered or failed callback back in the queue, due now, same body and idempotencyKey; a new
 * retry series (never a pull-only subscription's: { pullOnly: its subscription }). Call it inside a transaction (the caller charges in the same one, so a refused charge
 * leaves nothing queued).
 *
 * A callback whose subscription is gone is left alone: workers only claim callbacks of existing
 * subscriptions, so it would stay pending for ever. The subscription row is locked (KEY SHARE) before
 * the callback is touched: a deletion running at the same time either commits first (then this finds
 * no subscription) or waits for this transaction and then cancels the callback it queued.
 */
export async function requeueCallback(tx: Queryable, customerId: string, callbackId: string, now: Date): Promise<RequeueState> {
  const [found] = await tx.query<{ subscription_id: string; pull_only: boolean }>(
    'callbacks:requeue-find',
    'SELECT subscription_id, callback_url IS NULL AS pull_only FROM callbacks WHERE customer_id = $1 AND id = $2',
    [customerId, callbackId],
  );
  if (!found) return 'not-found';
  // A pull-only subscription's callback has nowhere to go (migration 055): never queued.
  if (found.pull_only) return { pullOnly: found.subscription_id };
  const subscribed = await tx.query('callbacks:requeue-lock-subscription', 'SELECT 1 FROM subscriptions WHERE customer_id = $1 AND id = $2 FOR KEY SHARE', [
    customerId,
    found.subscription_id,
  ]);
  if (subscribed.length === 0) return 'subscription-deleted';
  const [row] = await tx.query<{ previous: string }>(
    'callbacks:requeue',
    `WITH previous AS (SELECT status FROM callbacks WHERE customer_id = $1 AND id = $2 FOR UPDATE)
     UPDATE callbacks c SET status = CASE WHEN p.status IN ('delivered', 'failed') THEN 'pending' ELSE c.status END,
       next_attempt_at = CASE WHEN p.status IN ('delivered', 'failed') THEN $3 ELSE c.next_attempt_at END,
       series_start = CASE WHEN p.status IN ('delivered', 'failed') THEN c.attempts ELSE c.series_start END,
       finished_at = CASE WHEN p.status IN ('delivered', 'failed') THEN NULL ELSE c.finished_at END,
       outcome = CASE WHEN p.status IN ('delivered', 'failed') THEN NULL ELSE c.outcome END
     FROM previous p WHERE c.customer_id = $1 AND c.id = $2
     RETURNING p.status AS previous`,
    [customerId, callbackId, now],
  );
  if (!row) return 'not-found';
  if (row.previous === 'pending' || row.previous === 'cancelled') return row.previous;
  // Delivered when the transaction commits, not before: a rolled-back requeue wakes nobody.
  await tx.query('callbacks:notify', `SELECT pg_notify('${CALLBACKS_CHANNEL}', '')`);
  return 'queued';
}

export interface CallbackLogEntry {
  id: string;
  idempotencyKey: string;
  eventType: EventType;
  status: string;
  outcome: string | null;
  /** x-callback-sequence; null for callbacks older than the numbering. */
  sequence: number | null;
  createdAt: Date;
  /** null: held by the deep-reorganisation breaker (due at 'infinity', store/chain-holds.ts) until the chain is released. */
  nextAttemptAt: Date | null;
  attempts: { attempt: number; startedAt: Date; durationMs: number; httpStatus: number | null; errorClass: string | null; errorMessage: string | null }[];
}

/**
 * A subscription's callbacks, oldest first, each with its attempts; subscriptionFound false (and no
 * items) when the subscription is not the customer's.
 */
export async function listCallbacks(
  q: Queryable,
  customerId: string,
  subscriptionId: string,
  page: { limit: number; offset: number },
): Promise<{ total: number; items: CallbackLogEntry[]; subscriptionFound: boolean }> {
  const [rows, counts] = await Promise.all([
    q.query<{
      id: string;
      idempotency_key: string;
      event_type: EventType;
      status: string;
      outcome: string | null;
      sequence: string | null;
      created_at: Date;
      next_attempt_at: Date | number;
      attempts: {
        attempt: number;
        started_at: string;
        duration_ms: number;
        http_status: number | null;
        error_class: string | null;
        error_message: string | null;
      }[];
    }>(
      'callbacks:log',
      `SELECT c.id, c.idempotency_key, c.event_type, c.status, c.outcome, c.sequence, c.created_at, c.next_attempt_at,
         coalesce((SELECT json_agg(a ORDER BY a.attempt) FROM (
           SELECT attempt, started_at, duration_ms, http_status, error_class, error_message FROM callback_attempts WHERE callback_id = c.id) a), '[]') AS attempts
       FROM callbacks c WHERE c.customer_id = $1 AND c.subscription_id = $2
       ORDER BY c.created_at, c.id LIMIT $3 OFFSET $4`,
      [customerId, subscriptionId, page.limit, page.offset],
    ),
    // The counter kept by triggers (migration 018), not a count of the subscription's callbacks.
    q.query<{ n: number }>(
      'callbacks:log-count',
      `SELECT coalesce((SELECT callbacks FROM callback_counts WHERE subscription_id = $2), 0)::int AS n
       FROM subscriptions WHERE id = $2 AND customer_id = $1`,
      [customerId, subscriptionId],
    ),
  ]);
  return {
    total: counts[0]?.n ?? 0,
    subscriptionFound: counts.length > 0,
    items: rows.map((r) => ({
      id: r.id,
      idempotencyKey: r.idempotency_key,
      eventType: r.event_type,
      status: r.status,
      outcome: r.outcome,
      sequence: r.sequence === null ? null : Number(r.sequence),
      createdAt: r.created_at,
      nextAttemptAt: dueDate(r.next_attempt_at),
      attempts: r.attempts.map((a) => ({
        attempt: a.attempt,
        startedAt: new Date(a.started_at),
        durationMs: a.duration_ms,
        httpStatus: a.http_status,
        errorClass: a.error_class,
        errorMessage: a.error_message,
      })),
    })),
  };
}

/** Filters of the customer's delivery log across subscriptions (GET /blockchain-events/callbacks). */
export interface DeliveryLogFilter {
  /** retrying: pending and tried at least once in its current series; pending: every pending one. */
  status?: 'delivered' | 'failed' | 'retrying' | 'pending' | 'cancelled';
  eventType?: EventType;
  blockchain?: string;
  network?: string;
  subscriptionId?: string;
  since: Date;
  until: Date;
}

/**
 * The customer's callbacks of every current subscription created in [since, until), newest first, each
 * with its subscription's chain and its attempts. Read per subscription through callbacks_log
 * (subscription_id, created_at): the cost grows with the subscriptions and the window's callbacks.
 */
export async function listDeliveries(
  q: Queryable,
  customerId: string,
  filter: DeliveryLogFilter,
  page: { limit: number; offset: number },
): Promise<{ total: number; items: (CallbackLogEntry & { subscriptionId: string; blockchain: string; network: string })[] }> {
  const where = `s.customer_id = $1 AND c.created_at >= $2 AND c.created_at < $3
    AND ($4::text IS NULL OR s.blockchain = $4) AND ($5::text IS NULL OR s.network = $5) AND ($6::text IS NULL OR c.event_type = $6)
    AND ($7::uuid IS NULL OR s.id = $7::uuid)
    AND ($8::text IS NULL OR (CASE $8::text WHEN 'retrying' THEN c.status = 'pending' AND c.attempts > c.series_start ELSE c.status = $8::text END))`;
  const params = [
    customerId,
    filter.since,
    filter.until,
    filter.blockchain ?? null,
    filter.network ?? null,
    filter.eventType ?? null,
    filter.subscriptionId ?? null,
    filter.status ?? null,
  ];
  const from = 'FROM subscriptions s JOIN callbacks c ON c.subscription_id = s.id';
  const [rows, counts] = await Promise.all([
    q.query<{
      id: string;
      subscription_id: string;
      blockchain: string;
      network: string;
      idempotency_key: string;
      event_type: EventType;
      status: string;
      outcome: string | null;
      sequence: string | null;
      created_at: Date;
      next_attempt_at: Date | number;
      attempts: {
        attempt: number;
        started_at: string;
        duration_ms: number;
        http_status: number | null;
        error_class: string | null;
        error_message: string | null;
      }[];
    }>(
      'callbacks:deliveries',
      `SELECT c.id, c.subscription_id, s.blockchain, s.network, c.idempotency_key, c.event_type, c.status, c.outcome, c.sequence, c.created_at, c.next_attempt_at,
         coalesce((SELECT json_agg(a ORDER BY a.attempt) FROM (
           SELECT attempt, started_at, duration_ms, http_status, error_class, error_message FROM callback_attempts WHERE callback_id = c.id) a), '[]') AS attempts
       ${from} WHERE ${where}
       ORDER BY c.created_at DESC, c.id DESC LIMIT $9 OFFSET $10`,
      [...params, page.limit, page.offset],
    ),
    q.query<{ n: number }>('callbacks:deliveries-count', `SELECT count(*)::int AS n ${from} WHERE ${where}`, params),
  ]);
  return {
    total: counts[0]?.n ?? 0,
    items: rows.map((r) => ({
      id: r.id,
      subscriptionId: r.subscription_id,
      blockchain: r.blockchain,
      network: r.network,
      idempotencyKey: r.idempotency_key,
      eventType: r.event_type,
      status: r.status,
      outcome: r.outcome,
      sequence: r.sequence === null ? null : Number(r.sequence),
      createdAt: r.created_at,
      nextAttemptAt: dueDate(r.next_attempt_at),
      attempts: r.attempts.map((a) => ({
        attempt: a.attempt,
        startedAt: new Date(a.started_at),
        durationMs: a.duration_ms,
        httpStatus: a.http_status,
        errorClass: a.error_class,
        errorMessage: a.error_message,
      })),
    })),
  };
}

/** A callback's due time as read: a held one's 'infinity' (which pg reads as the number Infinity) is null. */
function dueDate(value: Date | number): Date | null {
  return value instanceof Date && Number.isFinite(value.getTime()) ? value : null;
}

/** One callback of the log with its subscription, the exact body sent (or to be sent), and every attempt with its response excerpt. */
export interface CallbackDetail extends CallbackLogEntry {
  subscriptionId: string;
  /** The JSON text POSTed, byte for byte. */
  body: string;
  attempts: (CallbackLogEntry['attempts'][number] & { responseExcerpt: string | null })[];
}

/** Undefined when the customer has no such callback. */
export async function getCallback(q: Queryable, customerId: string, callbackId: string): Promise<CallbackDetail | undefined> {
  const [row] = await q.query<{
    id: string;
    subscription_id: string;
    idempotency_key: string;
    event_type: EventType;
    status: string;
    outcome: string | null;
    sequence: string | null;
    created_at: Date;
    next_attempt_at: Date | number;
    body: string;
    attempts: {
      attempt: number;
      started_at: string;
      duration_ms: number;
      http_status: number | null;
      error_class: string | null;
      error_message: string | null;
      response_excerpt: string | null;
    }[];
  }>(
    'callbacks:get',
    `SELECT c.id, c.subscription_id, c.idempotency_key, c.event_type, c.status, c.outcome, c.sequence, c.created_at, c.next_attempt_at, c.body,
       coalesce((SELECT json_agg(a ORDER BY a.attempt) FROM (
         SELECT attempt, started_at, duration_ms, http_status, error_class, error_message, left(response_body, 4096) AS response_excerpt
         FROM callback_attempts WHERE callback_id = c.id) a), '[]') AS attempts
     FROM callbacks c WHERE c.customer_id = $1 AND c.id = $2`,
    [customerId, callbackId],
  );
  if (!row) return undefined;
  return {
    id: row.id,
    subscriptionId: row.subscription_id,
    idempotencyKey: row.idempotency_key,
    eventType: row.event_type,
    status: row.status,
    outcome: row.outcome,
    sequence: row.sequence === null ? null : Number(row.sequence),
    createdAt: row.created_at,
    nextAttemptAt: dueDate(row.next_attempt_at),
    body: row.body,
    attempts: row.attempts.map((a) => ({
      attempt: a.attempt,
      startedAt: new Date(a.started_at),
      durationMs: a.duration_ms,
      httpStatus: a.http_status,
      errorClass: a.error_class,
      errorMessage: a.error_message,
      responseExcerpt: a.response_excerpt,
    })),
  };
}
