/**
 * The delivery worker, in four named stages:
 *   claim    due callbacks of active subscriptions, skipping destinations already at their cap
 *   prepare  the exact body bytes and the signature headers
 *   send     outside any transaction, through the guarded sender
 *   record   attempts and outcomes, batched into one transaction per flush
 * It keeps up to maxInFlight callbacks moving, claims again as soon as there is room, and sleeps until
 * a new callback is enqueued (NOTIFY) or the poll interval passes.
 */
import type { Logger } from 'pino';
import type { Config } from '../config/config.ts';
import type { Metrics } from '../metrics.ts';
import { type AttemptOutcome, type ClaimedCallback, claimDueCallbacks, recordOutcomes } from '../store/callbacks.ts';
import type { Db } from '../store/db.ts';
import { nextRetryDelayMs, parseRetryAfter, type RetryPolicy } from './policy.ts';
import type { CallbackSender, SendResult } from './sender.ts';
import { signCallback } from './signing.ts';

export interface Clock {
  now(): Date;
}
export const systemClock: Clock = { now: () => new Date() };

export interface WorkerDeps {
  db: Db;
  sender: CallbackSender;
  config: Config;
  logger: Logger;
  metrics?: Metrics;
  clock?: Clock;
  random?: () => number;
}

export interface DeliveryWorker {
  /** Look for due callbacks now (a NOTIFY arrived, or a test moved the clock). */
  wake(): void;
  /** Resolves when nothing is in flight and the outcomes so far are recorded. */
  settled(): Promise<void>;
  stop(): Promise<void>;
}

/** Headers of one POST: JSON, and the two signature styles when the subscription has a secret. */
export function prepareHeaders(callback: Pick<ClaimedCallback, 'secret' | 'idempotencyKey'>, body: Buffer, now: Date): Record<string, string> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (callback.secret) Object.assign(headers, signCallback(callback.secret, body, callback.idempotencyKey, Math.floor(now.getTime() / 1000)));
  return headers;
}

/** What an attempt's result means for the callback: the retry policy applied. */
export function decideOutcome(
  callback: Pick<ClaimedCallback, 'id' | 'seriesAttempts'>,
  result: Omit<SendResult, 'headers'> & { headers?: SendResult['headers'] },
  policy: RetryPolicy,
  now: Date,
  random?: () => number,
): AttemptOutcome {
  const base = {
    callbackId: callback.id,
    startedAt: result.startedAt,
    durationMs: result.durationMs,
    httpStatus: result.httpStatus,
    errorClass: result.errorClass,
    errorMessage: result.errorMessage,
    responseBody: result.responseBody,
  };
  if (result.httpStatus !== null && result.httpStatus >= 200 && result.httpStatus < 300) return { ...base, result: 'delivered', nextAttemptAt: null };
  if (result.httpStatus === 410) return { ...base, result: 'gone', nextAttemptAt: null };
  const retryAfterSeconds = parseRetryAfter(result.headers?.['retry-after'], now.getTime());
  const delay = nextRetryDelayMs(callback.seriesAttempts + 1, policy, { retryAfterSeconds, random });
  if (delay === null) return { ...base, result: 'exhausted', nextAttemptAt: null };
  return { ...base, result: 'retry', nextAttemptAt: new Date(now.getTime() + delay) };
}

export function startDeliveryWorker(deps: WorkerDeps): DeliveryWorker {
  const { db, sender, config, logger, metrics } = deps;
  const clock = deps.clock ?? systemClock;
  const settings = config.delivery;
  const policy: RetryPolicy = {
    scheduleSeconds: settings.retryScheduleSeconds,
    jitter: settings.retryJitter,
    maxRetryAfterSeconds: settings.maxRetryAfterSeconds,
  };
  let running = true;
  let inFlight = 0;
  let pending: AttemptOutcome[] = [];
  let flushing: Promise<void> = Promise.resolve();
  let flushTimer: NodeJS.Timeout | undefined;
  let wakeUp: (() => void) | undefined;
  const idleWaiters: (() => void)[] = [];

  const wake = () => wakeUp?.();

  const record = (): Promise<void> => {
    if (flushTimer) clearTimeout(flushTimer);
    flushTimer = undefined;
    const batch = pending;
    pending = [];
    flushing = flushing.then(async () => {
      if (batch.length === 0) return;
      for (let attempt = 1; ; attempt++) {
        try {
          await recordOutcomes(db, batch, clock.now());
          return;
        } catch (error) {
          // The attempts were made; keep trying to record them. Until then the lease protects the
          // callbacks, and if this process dies they are sent again (at least once, same key).
          logger.error({ err: error, outcomes: batch.length, attempt }, 'could not record callback outcomes; retrying');
          await new Promise((r) => setTimeout(r, Math.min(5_000, 100 * 2 ** attempt)));
          if (!running && attempt > 5) return;
        }
      }
    });
    return flushing;
  };

  const deliver = async (callback: ClaimedCallback) => {
    const now = clock.now();
    const body = Buffer.from(callback.body);
    const result: Omit<SendResult, 'headers'> & { headers?: SendResult['headers'] } = callback.domainVerified
      ? await sender.send('POST', callback.callbackUrl, callback.destination, body, prepareHeaders(callback, body, now))
      : {
          startedAt: now,
          durationMs: 0,
          httpStatus: null,
          errorClass: 'refused_destination',
          errorMessage: "the callback URL's host is no longer a verified domain of the customer",
          responseBody: null,
        };
    const outcome = decideOutcome(callback, result, policy, clock.now(), deps.random);
    metrics?.callbacksSent.inc({ outcome: outcome.result });
    metrics?.callbackAttemptDuration.observe(result.durationMs / 1000);
    pending.push(outcome);
    if (pending.length >= 100) void record();
    else flushTimer ??= setTimeout(() => void record(), 5);
  };

  const loop = async () => {
    while (running) {
      const room = Math.min(settings.batchSize, settings.maxInFlight - inFlight);
      let claimed: ClaimedCallback[] = [];
      if (room >= Math.min(settings.batchSize, settings.maxInFlight) / 2) {
        try {
          claimed = await claimDueCallbacks(db, {
            now: clock.now(),
            limit: room,
            leaseMs: settings.leaseSeconds * 1000,
            skipDestinations: sender.saturated(),
          });
        } catch (error) {
          logger.error({ err: error }, 'could not claim due callbacks; trying again shortly');
        }
      }
      for (const callback of claimed) {
        inFlight++;
        void deliver(callback)
          .catch((error) => logger.error({ err: error, callbackId: callback.id }, 'callback delivery failed unexpectedly'))
          .finally(() => {
            inFlight--;
            wake();
            if (inFlight === 0) {
              void record().then(() => {
                for (const waiter of idleWaiters.splice(0)) waiter();
              });
            }
          });
      }
      if (claimed.length === room && room > 0) continue; // there may be more due right now
      await new Promise<void>((resume) => {
        const timer = setTimeout(resume, settings.pollIntervalMs);
        wakeUp = () => {
          clearTimeout(timer);
          wakeUp = undefined;
          resume();
        };
      });
    }
  };

  const done = loop();
  return {
    wake,
    settled: () =>
      inFlight === 0
        ? record()
        : new Promise<void>((resolve) => {
            idleWaiters.push(resolve);
          }),
    async stop() {
      running = false;
      wake();
      await done;
      while (inFlight > 0) await new Promise<void>((resolve) => idleWaiters.push(resolve));
      await record();
    },
  };
}
