/**
 * Sends the operator alerts of the outbox (src/store/alerts.ts) to alerts.webhookUrl: POSTed as JSON,
 * signed with the Standard Webhooks headers (webhook-id is the alert's id on every attempt, so a
 * receiver that saw an attempt whose answer was lost can drop the repeat). An attempt that is not
 * answered 2xx is retried after alerts.retrySeconds[n]; past the last, the alert is given up and logged
 * at error. Several senders may run on one database: a claim is a lease, each alert goes to one of them.
 */
import type { Logger } from 'pino';
import type { AlertsConfig } from '../config/config.ts';
import { unixSeconds } from '../domain/time.ts';
import type { Metrics } from '../metrics.ts';
import { claimDueAlerts, recordAlertAttempt } from '../store/alerts.ts';
import { destinationOf } from '../store/callbacks.ts';
import type { Db } from '../store/db.ts';
import type { CallbackSender } from './sender.ts';
import { signStandardWebhook, standardWebhookKey } from './signing.ts';

/**
 * The operator chose the webhook URL; unlike a customer's it may be on a private network (a relay in
 * the same cluster), so the destination guard lets every address through for it.
 */
const ANY_NETWORK = ['0.0.0.0/0', '::/0'];
/** Alerts sent per claim; alerts are few, and the rest are claimed by the next pass. */
const BATCH = 20;

export interface AlertSenderDeps {
  db: Db;
  sender: CallbackSender;
  alerts: AlertsConfig & { webhookUrl: string; secret: string };
  /** The sender's own timeout: the lease must outlast one attempt. */
  timeoutMs: number;
  logger: Logger;
  metrics?: Metrics;
}

/** Sends the alerts due at `now`; returns how many were sent (2xx). */
export async function sendDueAlerts(deps: AlertSenderDeps, now: Date): Promise<number> {
  const { db, sender, alerts, logger, metrics } = deps;
  const claimed = await claimDueAlerts(db, { now, limit: BATCH, leaseMs: deps.timeoutMs + 30_000 });
  const key = standardWebhookKey(alerts.secret);
  const destination = destinationOf(alerts.webhookUrl);
  let sent = 0;
  await Promise.all(
    claimed.map(async (alert) => {
      const body = Buffer.from(alert.body);
      const headers = { 'content-type': 'application/json', ...signStandardWebhook(key, body, alert.id, unixSeconds(new Date())) };
      const result = await sender.send('POST', alerts.webhookUrl, destination, body, headers, { allowNetworks: ANY_NETWORK });
      const finished = new Date();
      if (result.httpStatus !== null && result.httpStatus >= 200 && result.httpStatus < 300) {
        await recordAlertAttempt(db, { id: alert.id, result: 'sent', nextAttemptAt: null, error: null, now: finished });
        sent++;
        return;
      }
      const error = result.errorDetail ?? result.errorMessage ?? `answered ${result.httpStatus}`;
      const wait = alerts.retrySeconds[alert.attempts];
      const context = { alertId: alert.id, alert: alert.kind, subject: alert.subject, attempt: alert.attempts + 1, error };
      if (wait === undefined) {
        await recordAlertAttempt(db, { id: alert.id, result: 'failed', nextAttemptAt: null, error, now: finished });
        metrics?.alertSendFailures.inc({ outcome: 'given_up' });
        logger.error(context, 'alert webhook did not take the alert; no retry left, given up');
      } else {
        const nextAttemptAt = new Date(finished.getTime() + wait * 1000);
        await recordAlertAttempt(db, { id: alert.id, result: 'retry', nextAttemptAt, error, now: finished });
        metrics?.alertSendFailures.inc({ outcome: 'retry' });
        logger.warn({ ...context, retryInSeconds: wait }, 'alert webhook did not take the alert; retrying');
      }
    }),
  );
  return sent;
}
