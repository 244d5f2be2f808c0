/**
 * The customer's overview (GET /account/overview, the console's landing page): callbacks of the last
 * 24 h by status, the subscriptions whose callbacks are failing, unverified domains and the first-run
 * checklist. Read through the callbacks_log index (subscription_id, created_at): per subscription, only
 * the window's callbacks are read.
 */
import type { Queryable } from './db.ts';

export interface OverviewCounts {
  delivered: number;
  failed: number;
  pending: number;
  retrying: number;
}

export interface FailingSubscription {
  id: string;
  eventType: string;
  blockchain: string;
  network: string;
  isActive: boolean;
  failed: number;
  lastFailedAt: Date | null;
}

export interface CustomerOverview {
  counts: OverviewCounts;
  failing: { total: number; items: FailingSubscription[] };
  unverifiedDomains: string[];
  verifiedDomains: number;
  subscriptions: number;
  testCallbackDeliveredAt: Date | null;
}

/**
 * Failing: deactivated by herald (inactive, its last deactivation reason not the customer's pause), or
 * active with a callback of the window failed after its last delivery in the window.
 */
export async function customerOverview(q: Queryable, customerId: string, since: Date, pausedReason: string, limit: number): Promise<CustomerOverview> {
  const [perSubscription, domains, customer] = await Promise.all([
    q.query<{
      id: string;
      event_type: string;
      blockchain: string;
      network: string;
      is_active: boolean;
      last_reason: string | null;
      delivered: number;
      failed: number;
      pending: number;
      retrying: number;
      last_delivered_at: Date | null;
      last_failed_at: Date | null;
    }>(
      'overview:subscriptions',
      `SELECT s.id, s.event_type, s.blockchain, s.network, s.is_active, s.deactivation_reasons -> -1 ->> 'reason' AS last_reason, h.*
       FROM subscriptions s CROSS JOIN LATERAL (
         SELECT count(*) FILTER (WHERE status = 'delivered')::int AS delivered, count(*) FILTER (WHERE status = 'failed')::int AS failed,
                count(*) FILTER (WHERE status = 'pending')::int AS pending,
                count(*) FILTER (WHERE status = 'pending' AND attempts > series_start)::int AS retrying,
                max(finished_at) FILTER (WHERE status = 'delivered') AS last_delivered_at,
                max(finished_at) FILTER (WHERE status = 'failed') AS last_failed_at
         FROM callbacks c WHERE c.subscription_id = s.id AND c.created_at >= $2) h
       WHERE s.customer_id = $1`,
      [customerId, since],
    ),
    q.query<{ domain: string; verified_at: Date | null }>(
      'overview:domains',
      'SELECT domain, verified_at FROM callback_domains WHERE customer_id = $1 ORDER BY domain',
      [customerId],
    ),
    q.query<{ test_callback_delivered_at: Date | null }>('overview:customer', 'SELECT test_callback_delivered_at FROM customers WHERE id = $1', [customerId]),
  ]);
  const counts: OverviewCounts = { delivered: 0, failed: 0, pending: 0, retrying: 0 };
  const failing: FailingSubscription[] = [];
  for (const r of perSubscription) {
    counts.delivered += r.delivered;
    counts.failed += r.failed;
    counts.pending += r.pending;
    counts.retrying += r.retrying;
    const deactivated = !r.is_active && r.last_reason !== pausedReason;
    const failedLast = r.is_active && r.last_failed_at !== null && (r.last_delivered_at === null || r.last_failed_at > r.last_delivered_at);
    if (deactivated || failedLast) {
      failing.push({
        id: r.id,
        eventType: r.event_type,
        blockchain: r.blockchain,
        network: r.network,
        isActive: r.is_active,
        failed: r.failed,
        lastFailedAt: r.last_failed_at,
      });
    }
  }
  // The most recent failures first; the deactivated ones without a failure in the window after them.
  failing.sort((a, b) => (b.lastFailedAt?.getTime() ?? 0) - (a.lastFailedAt?.getTime() ?? 0) || a.id.localeCompare(b.id));
  return {
    counts,
    failing: { total: failing.length, items: failing.slice(0, limit) },
    unverifiedDomains: domains.filter((d) => d.verified_at === null).map((d) => d.domain),
    verifiedDomains: domains.filter((d) => d.verified_at !== null).length,
    subscriptions: perSubscription.length,
    testCallbackDeliveredAt: customer[0]?.test_callback_delivered_at ?? null,
  };
}

/** Notes that a test callback of the customer was delivered (the first-run checklist's last step). */
export async function noteTestCallbackDelivered(q: Queryable, customerId: string, at: Date): Promise<void> {
  await q.query('overview:test-delivered', 'UPDATE customers SET test_callback_delivered_at = $2 WHERE id = $1', [customerId, at]);
}
