/**
 * What the operator-alert monitor (src/delivery/alert-monitor.ts) keeps in the database: the state last
 * alerted per subject (a chain, a node), the tallies of counted events (deactivations, exhausted
 * callbacks), and the outbox of alerts to send. Several delivery processes run the monitor on one
 * database: every decision to alert is a claim only one of them can win, and the alert is written to the
 * outbox in the claim's transaction.
 */
import type { Db, Queryable } from './db.ts';

/** An alert to send: `id` is its webhook-id, `body` the exact JSON sent with every attempt. */
export interface NewAlert {
  id: string;
  kind: string;
  subject: string;
  body: string;
}

export interface SubjectState {
  /** Last alerted (or silently recorded) state; 'unknown' before a subject first seen unhealthy is alerted. */
  state: string;
  observed: string;
  observedSince: Date;
}

/**
 * Records what a monitor saw of `subject` now and returns its row. A subject seen for the first time
 * starts in the state seen when that state is healthy (nothing to say about a chain that is fine),
 * otherwise in 'unknown', so the unhealthy state is alerted once it has held.
 */
export async function observeSubject(q: Queryable, subject: string, observed: string, healthy: boolean, now: Date): Promise<SubjectState> {
  const [row] = await q.query<{ state: string; observed: string; observed_since: Date }>(
    'alerts:observe',
    `INSERT INTO alert_state AS a (subject, state, observed, observed_since, changed_at)
     VALUES ($1, CASE WHEN $3 THEN $2 ELSE 'unknown' END, $2, $4, $4)
     ON CONFLICT (subject) DO UPDATE SET observed = EXCLUDED.observed,
       observed_since = CASE WHEN a.observed = EXCLUDED.observed THEN a.observed_since ELSE EXCLUDED.observed_since END
     RETURNING state, observed, observed_since`,
    [subject, observed, healthy, now],
  );
  if (!row) throw new Error(`alert state of ${subject} not returned`);
  return { state: row.state, observed: row.observed, observedSince: row.observed_since };
}

/**
 * Moves `subject` from `from` to `to` if it is still in `from` and still observed in `to`, and writes
 * `alert` (if any) to the outbox in the same transaction. True for exactly one of several monitors
 * claiming the same transition: the others' UPDATE finds the state already changed and matches nothing.
 */
export async function claimTransition(db: Db, claim: { subject: string; from: string; to: string; now: Date; alert?: NewAlert }): Promise<boolean> {
  return await db.transaction('alerts:claim-transition', async (tx) => {
    const rows = await tx.query(
      'alerts:transition',
      `UPDATE alert_state SET state = $3, changed_at = $4 WHERE subject = $1 AND state = $2 AND observed = $3 RETURNING 1`,
      [claim.subject, claim.from, claim.to, claim.now],
    );
    if (rows.length === 0) return false;
    if (claim.alert) await insertAlerts(tx, [claim.alert], claim.now);
    return true;
  });
}

export type TallyKind = 'subscription.deactivated' | 'callbacks.exhausted';

export interface TallyIncrement {
  kind: TallyKind;
  customerId: string;
  destination: string;
  /** The deactivation reason; null for exhausted callbacks. */
  reason: string | null;
  count: number;
}

/**
 * Adds counted events in the caller's transaction (the one that deactivated the subscriptions or
 * recorded the last failed attempt), so a count is never lost nor counted twice. Rows are upserted in
 * subject order: two transactions counting the same subjects lock them in the same order.
 */
export async function addToTallies(tx: Queryable, increments: TallyIncrement[], now: Date): Promise<void> {
  if (increments.length === 0) return;
  const subjectOf = (i: TallyIncrement) => `${i.kind}/${i.customerId}/${i.destination}${i.reason === null ? '' : `/${i.reason}`}`;
  const merged = new Map<string, TallyIncrement>();
  for (const i of increments) {
    const key = subjectOf(i);
    const seen = merged.get(key);
    merged.set(key, seen ? { ...seen, count: seen.count + i.count } : i);
  }
  const sorted = [...merged.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  await tx.query(
    'alerts:tally',
    `INSERT INTO alert_tallies AS t (subject, kind, customer_id, destination, reason, count, first_at, last_at)
     SELECT u.subject, u.kind, u.customer_id, u.destination, u.reason, u.count, $7, $7
     FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::bigint[]) WITH ORDINALITY
       AS u(subject, kind, customer_id, destination, reason, count, n)
     ORDER BY u.n
     ON CONFLICT (subject) DO UPDATE SET count = t.count + EXCLUDED.count, last_at = EXCLUDED.last_at,
       first_at = CASE WHEN t.count = 0 THEN EXCLUDED.first_at ELSE t.first_at END`,
    [
      sorted.map(([s]) => s),
      sorted.map(([, i]) => i.kind),
      sorted.map(([, i]) => i.customerId),
      sorted.map(([, i]) => i.destination),
      sorted.map(([, i]) => i.reason),
      sorted.map(([, i]) => i.count),
      now,
    ],
  );
}

export interface DueTally {
  subject: string;
  kind: TallyKind;
  customerId: string;
  customerName: string | null;
  destination: string;
  reason: string | null;
  count: number;
  firstAt: Date;
  lastAt: Date;
}

/**
 * Takes the tallies with something counted whose last alert is at least `groupSeconds` old (rows a
 * counting transaction holds are left for the next pass), sets them back to zero and writes the alerts
 * `makeAlert` builds for them, all in one transaction. Returns what it took.
 */
export async function takeDueTallies(
  db: Db,
  options: { now: Date; groupSeconds: number; limit: number; makeAlert?: (tally: DueTally) => NewAlert },
): Promise<DueTally[]> {
  return await db.transaction('alerts:take-tallies', async (tx) => {
    const rows = await tx.query<{
      subject: string;
      kind: TallyKind;
      customer_id: string;
      customer_name: string | null;
      destination: string;
      reason: string | null;
      count: string;
      first_at: Date;
      last_at: Date;
    }>(
      'alerts:due-tallies',
      `SELECT t.subject, t.kind, t.customer_id, (SELECT c.name FROM customers c WHERE c.id = t.customer_id) AS customer_name,
         t.destination, t.reason, t.count, t.first_at, t.last_at
       FROM alert_tallies t
       WHERE t.count > 0 AND (t.alerted_at IS NULL OR t.alerted_at <= $1::timestamptz - $2 * interval '1 second')
       ORDER BY t.first_at LIMIT $3 FOR UPDATE OF t SKIP LOCKED`,
      [options.now, options.groupSeconds, options.limit],
    );
    if (rows.length === 0) return [];
    const tallies: DueTally[] = rows.map((r) => ({
      subject: r.subject,
      kind: r.kind,
      customerId: String(r.customer_id),
      customerName: r.customer_name,
      destination: r.destination,
      reason: r.reason,
      count: Number(r.count),
      firstAt: r.first_at,
      lastAt: r.last_at,
    }));
    await tx.query('alerts:reset-tallies', 'UPDATE alert_tallies SET count = 0, alerted_at = $2 WHERE subject = ANY ($1::text[])', [
      tallies.map((t) => t.subject),
      options.now,
    ]);
    if (options.makeAlert) await insertAlerts(tx, tallies.map(options.makeAlert), options.now);
    return tallies;
  });
}

/** Writes alerts to the outbox, due at once. */
export async function insertAlerts(tx: Queryable, alerts: NewAlert[], now: Date): Promise<void> {
  if (alerts.length === 0) return;
  await tx.query(
    'alerts:insert',
    `INSERT INTO alert_outbox (id, kind, subject, body, next_attempt_at, created_at)
     SELECT *, $5::timestamptz, $5::timestamptz FROM unnest($1::text[], $2::text[], $3::text[], $4::text[])
     ON CONFLICT (id) DO NOTHING`,
    [alerts.map((a) => a.id), alerts.map((a) => a.kind), alerts.map((a) => a.subject), alerts.map((a) => a.body), now],
  );
}

export interface ClaimedAlert {
  id: string;
  kind: string;
  subject: string;
  body: string;
  /** Attempts before this one. */
  attempts: number;
}

/**
 * Claims up to `limit` due alerts, oldest first, skipping those another sender holds; the claim is a
 * lease (due again at now + leaseMs unless an outcome is recorded first).
 */
export async function claimDueAlerts(db: Db, options: { now: Date; limit: number; leaseMs: number }): Promise<ClaimedAlert[]> {
  return await db.query<ClaimedAlert>(
    'alerts:claim',
    `WITH due AS (
       SELECT id FROM alert_outbox WHERE status = 'pending' AND next_attempt_at <= $1
       ORDER BY next_attempt_at, created_at LIMIT $2 FOR UPDATE SKIP LOCKED)
     UPDATE alert_outbox o SET next_attempt_at = $1::timestamptz + $3 * interval '1 millisecond'
     FROM due WHERE o.id = due.id
     RETURNING o.id, o.kind, o.subject, o.body, o.attempts`,
    [options.now, options.limit, options.leaseMs],
  );
}

/** Records one attempt: sent, due again at `nextAttemptAt`, or failed for good (no retry left). */
export async function recordAlertAttempt(
  q: Queryable,
  attempt: { id: string; result: 'sent' | 'retry' | 'failed'; nextAttemptAt: Date | null; error: string | null; now: Date },
): Promise<void> {
  await q.query(
    'alerts:record-attempt',
    `UPDATE alert_outbox SET attempts = attempts + 1, last_error = $3,
       status = CASE $2::text WHEN 'retry' THEN 'pending' ELSE $2::text END,
       next_attempt_at = coalesce($4, next_attempt_at),
       finished_at = CASE WHEN $2::text = 'retry' THEN NULL ELSE $5::timestamptz END
     WHERE id = $1 AND status = 'pending'`,
    [attempt.id, attempt.result, attempt.error, attempt.nextAttemptAt, attempt.now],
  );
}

/** Deletes sent and failed alerts finished before `before` (the outbox does not grow for ever). */
export async function pruneAlertOutbox(q: Queryable, before: Date): Promise<number> {
  const rows = await q.query('alerts:prune', `DELETE FROM alert_outbox WHERE status <> 'pending' AND finished_at < $1 RETURNING 1`, [before]);
  return rows.length;
}
