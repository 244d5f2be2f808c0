/**
 * The callbacks that ended failed (or cancelled) across every customer, newest first: the operator
 * console's Failed callbacks (GET /operator/callbacks, docs/reference/api.md#failed-callbacks-across-customers).
 * Read through callbacks_finished (status, finished_at), so the cost grows with the window's finished
 * callbacks of that status, not with the outbox.
 */
import type { Queryable } from './db.ts';

export interface FinishedCallbackFilter {
  status: 'failed' | 'cancelled';
  /** Only this customer's (its id). */
  customerId?: string;
  since: Date;
  until: Date;
}

export interface FinishedCallback {
  id: string;
  customerName: string;
  subscriptionId: string;
  /** Null when the subscription was deleted since. */
  blockchain: string | null;
  network: string | null;
  eventType: string;
  status: string;
  outcome: string | null;
  destination: string;
  attempts: number;
  createdAt: Date;
  finishedAt: Date;
  lastAttempt: { startedAt: Date; httpStatus: number | null; errorClass: string | null; errorMessage: string | null } | null;
}

export async function listFinishedCallbacks(
  q: Queryable,
  filter: FinishedCallbackFilter,
  page: { limit: number; offset: number },
): Promise<{ total: number; items: FinishedCallback[] }> {
  const where = `c.status = $1 AND c.finished_at >= $2 AND c.finished_at < $3 AND ($4::bigint IS NULL OR c.customer_id = $4::bigint)`;
  const params = [filter.status, filter.since, filter.until, filter.customerId ?? null];
  const [rows, counts] = await Promise.all([
    q.query<{
      id: string;
      customer_name: string;
      subscription_id: string;
      blockchain: string | null;
      network: string | null;
      event_type: string;
      status: string;
      outcome: string | null;
      destination: string;
      attempts: number;
      created_at: Date;
      finished_at: Date;
      last_started_at: Date | null;
      last_http_status: number | null;
      last_error_class: string | null;
      last_error_message: string | null;
    }>(
      'operator-callbacks:list',
      `SELECT c.id, cu.name AS customer_name, c.subscription_id, s.blockchain, s.network, c.event_type, c.status, c.outcome,
         c.destination, c.attempts, c.created_at, c.finished_at,
         a.started_at AS last_started_at, a.http_status AS last_http_status, a.error_class AS last_error_class, a.error_message AS last_error_message
       FROM callbacks c
       JOIN customers cu ON cu.id = c.customer_id
       LEFT JOIN subscriptions s ON s.id = c.subscription_id
       LEFT JOIN LATERAL (SELECT started_at, http_status, error_class, error_message FROM callback_attempts
                          WHERE callback_id = c.id ORDER BY attempt DESC LIMIT 1) a ON true
       WHERE ${where}
       ORDER BY c.finished_at DESC, c.id DESC LIMIT $5 OFFSET $6`,
      [...params, page.limit, page.offset],
    ),
    q.query<{ n: number }>('operator-callbacks:count', `SELECT count(*)::int AS n FROM callbacks c WHERE ${where}`, params),
  ]);
  return {
    total: counts[0]?.n ?? 0,
    items: rows.map((r) => ({
      id: r.id,
      customerName: r.customer_name,
      subscriptionId: r.subscription_id,
      blockchain: r.blockchain,
      network: r.network,
      eventType: r.event_type,
      status: r.status,
      outcome: r.outcome,
      destination: r.destination,
      attempts: r.attempts,
      createdAt: r.created_at,
      finishedAt: r.finished_at,
      lastAttempt:
        r.last_started_at === null
          ? null
          : { startedAt: r.last_started_at, httpStatus: r.last_http_status, errorClass: r.last_error_class, errorMessage: r.last_error_message },
    })),
  };
}
