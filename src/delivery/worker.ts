/**
 * The delivery worker, in four named stages:
 *   claim    due callbacks of active subscriptions, skipping destinations already at their cap
 *   prepare  the exact body bytes and the signature headers
 *   send     outside any transaction, through the guarded sender
 *   record   attempts and outcomes, batched into one transaction per flush
 * It keeps up to maxInFlight callbacks moving, claims again as soon as there is room, and sleeps until
 * a new callback is enqueued (NOTIFY) or the poll interval passes.
 */

import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Config } from '../config/config.ts';
import { unixSeconds } from '../domain/time.ts';
import { Alarm, Backoff, sleep } from '../lib/loop.ts';
import type { Metrics } from '../metrics.ts';
import { type AttemptOutcome, type ClaimedCallback, claimDue, recordOutcomes, releaseLeases, renewLeases } from '../store/callbacks.ts';
import { type Db, retryLogLevel } from '../store/db.ts';
import { claimAgainAtOnce, claimRoom, worthAnotherPass } from './claiming.ts';
import { nextRetryDelayMs, parseRetryAfter, type RetryPolicy } from './policy.ts';
import type { CallbackSender, SendResult } from './sender.ts';
import { signCallback } from './signing.ts';

/** A flush starts at once when this many outcomes wait; otherwise the first waits at most RECORD_DELAY_MS for others. */
const RECORD_BATCH = 250;
const RECORD_DELAY_MS = 15;
/** Leases that ended long ago (any holder's) are deleted at one heartbeat in this many. */
const PRUNE_EVERY_BEATS = 20;
/** Recording outcomes again after a failure: 200 ms, doubling, at most 5 s between tries. */
const RECORD_BACKOFF = { firstMs: 200, maxMs: 5_000 };

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

/** Live delivery as this worker sees it: what bulk recoveries give way to (delivery/recovery.ts). */
export interface LiveLoad {
  /** Callbacks not queued by a recovery whose sending started in the last whole second. */
  sentPerSecond: number;
  /** The longest any of them (in that second and this one) waited from due to sending. */
  lagMs: number;
  /** Live callbacks whose sending started since the worker started: a counter, for rates over any interval. */
  sentTotal: number;
}

export interface DeliveryWorker {
  /** Look for due callbacks now (a NOTIFY arrived, or a test moved the clock). */
  wake(): void;
  liveLoad(): LiveLoad;
  /** Resolves when nothing is in flight and the outcomes so far are recorded. */
  settled(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Headers of one POST: JSON, the subscription's sequence number, and the two signature styles when the
 * subscription has a secret (both secrets during a rotation's overlap).
 */
export function prepareHeaders(
  callback: Pick<ClaimedCallback, 'secret' | 'idempotencyKey'> & Partial<Pick<ClaimedCallback, 'previousSecret' | 'sequence'>>,
  body: Buffer,
  now: Date,
): Record<string, string> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (callback.sequence !== undefined && callback.sequence !== null) headers['x-callback-sequence'] = String(callback.sequence);
  if (callback.secret) Object.assign(headers, signCallback(callback.secret, body, callback.idempotencyKey, unixSeconds(now), callback.previousSecret));
  return headers;
}

/** What an attempt's result means for the callback: the retry policy applied. */
export function decideOutcome(
  callback: Pick<ClaimedCallback, 'id' | 'seriesAttempts' | 'destination' | 'probe'>,
  result: Omit<SendResult, 'headers'> & { headers?: SendResult['headers'] },
  policy: RetryPolicy,
  now: Date,
  random?: () => number,
): AttemptOutcome {
  // One object literal of one shape whatever the result (no spread of a base object: this runs once per POST).
  const outcome = (result_: AttemptOutcome['result'], nextAttemptAt: Date | null): AttemptOutcome => ({
    callbackId: callback.id,
    destination: callback.destination,
    probe: callback.probe,
    startedAt: result.startedAt,
    durationMs: result.durationMs,
    httpStatus: result.httpStatus,
    errorClass: result.errorClass,
    errorMessage: result.errorMessage,
    responseBody: result.responseBody,
    result: result_,
    nextAttemptAt,
  });
  if (result.httpStatus !== null && result.httpStatus >= 200 && result.httpStatus < 300) return outcome('delivered', null);
  if (result.httpStatus === 410) return outcome('gone', null);
  const retryAfterSeconds = parseRetryAfter(result.headers?.['retry-after'], now.getTime());
  const delay = nextRetryDelayMs(callback.seriesAttempts + 1, policy, { retryAfterSeconds, random });
  if (delay === null) return outcome('exhausted', null);
  return outcome('retry', new Date(now.getTime() + delay));
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
  // This worker's destination leases (store/callbacks.ts claimDue): its id, and the callbacks it has claimed
  // whose outcomes are not recorded yet, which its claims leave out (they stay due in the outbox meanwhile).
  const holder = randomUUID();
  /** Callback id -> its destination: the destinations whose leases the heartbeat renews. */
  const held = new Map<string, string>();
  let pending: AttemptOutcome[] = [];
  let flushing: Promise<void> = Promise.resolve();
  let flushTimer: NodeJS.Timeout | undefined;
  // A signal while the loop is not asleep (it is claiming) must not be lost: the claim in progress may
  // not have seen what it announces (a freed destination, a new callback), so the loop claims again
  // instead of sleeping until the next poll (the Alarm keeps it).
  const news = new Alarm();
  // The destinations the last claim skipped, and whether the loop stopped claiming for want of room:
  // a finished callback is worth another pass only when it frees one of those.
  let skipped = new Set<string>();
  let roomLimited = false;
  const idleWaiters: (() => void)[] = [];

  /** Runs the loop again now, or as soon as its current pass ends. */
  const signal = () => news.ring();
  /** New callbacks may be due (NOTIFY, a moved clock). */
  const wake = signal;

  // Group commit: one flush at a time, and the one waiting its turn takes every outcome that arrived
  // meanwhile, so the busier the worker, the larger (and fewer) its recording transactions.
  let flushQueued = false;
  const record = (): Promise<void> => {
    if (flushTimer) clearTimeout(flushTimer);
    flushTimer = undefined;
    if (flushQueued) return flushing;
    flushQueued = true;
    flushing = flushing.then(async () => {
      flushQueued = false;
      const batch = pending;
      pending = [];
      if (batch.length === 0) return;
      for (const backoff = new Backoff(RECORD_BACKOFF); ; ) {
        try {
          await recordOutcomes(db, batch, clock.now());
          // Recorded: no longer due (or due at their retry), so claims need not leave them out any more.
          for (const outcome of batch) held.delete(outcome.callbackId);
          // A probe's outcome may have let its destination go: its due callbacks are claimable now.
          if (batch.some((o) => o.probe)) signal();
          return;
        } catch (error) {
          // The attempts were made; keep trying to record them. Until then the lease protects the
          // callbacks, and if this process dies they are sent again (at least once, same key).
          const wait = backoff.next();
          logger[retryLogLevel(error)]({ err: error, outcomes: batch.length, attempt: backoff.failures }, 'could not record callback outcomes; retrying');
          await sleep(wait);
          if (!running && backoff.failures > 5) return;
        }
      }
    });
    return flushing;
  };

  // Live load in one-second buckets of real time: the one being filled and the last whole one.
  let bucketStart = performance.now();
  let current = { sent: 0, lagMs: 0 };
  let last = { sent: 0, lagMs: 0 };
  let sentTotal = 0;
  const rollBuckets = () => {
    const elapsed = performance.now() - bucketStart;
    if (elapsed < 1000) return;
    last = elapsed < 2000 ? current : { sent: 0, lagMs: 0 };
    current = { sent: 0, lagMs: 0 };
    bucketStart += elapsed - (elapsed % 1000);
  };

  const deliver = async (callback: ClaimedCallback) => {
    const now = clock.now();
    if (!callback.recovered) {
      rollBuckets();
      current.sent++;
      sentTotal++;
      current.lagMs = Math.max(current.lagMs, now.getTime() - callback.dueAt.getTime());
    }
    const body = Buffer.from(callback.body);
    const result: Omit<SendResult, 'headers'> & { headers?: SendResult['headers'] } = callback.domainVerified
      ? // Signed when its connection slot is free, with the time it goes (CallbackSender.send).
        await sender.send('POST', callback.callbackUrl, callback.destination, body, () => prepareHeaders(callback, body, clock.now()), {
          allowNetworks: callback.allowNetworks,
        })
      : {
          startedAt: now,
          durationMs: 0,
          httpStatus: null,
          errorClass: 'refused_destination',
          errorMessage: "the callback URL's host is no longer a verified domain of the customer",
          errorDetail: null,
          responseBody: null,
        };
    // The customer's attempt log has the generic reason; what exactly happened is for the operator only.
    if (result.errorDetail) {
      logger.warn(
        {
          callbackId: callback.id,
          subscriptionId: callback.subscriptionId,
          customerId: callback.customerId,
          destination: callback.destination,
          errorClass: result.errorClass,
          detail: result.errorDetail,
        },
        'callback attempt failed',
      );
    }
    const outcome = decideOutcome(callback, result, policy, clock.now(), deps.random);
    metrics?.callbacksSent.inc({ outcome: outcome.result });
    metrics?.callbackAttemptDuration.observe(result.durationMs / 1000);
    pending.push(outcome);
    // Fewer, larger recording statements: a statement's fixed part (planning, the round trip, the
    // commit) is paid once per batch. The outcomes wait at most RECORD_DELAY_MS (their callbacks' leases
    // protect them meanwhile); the sending does not wait for the recording.
    if (pending.length >= RECORD_BATCH) void record();
    else flushTimer ??= setTimeout(() => void record(), RECORD_DELAY_MS);
  };

  const loop = async () => {
    while (running) {
      news.reset();
      let claimed: ClaimedCallback[] = [];
      // Callbacks of inactive subscriptions the claim held out instead of taking (store/callbacks.ts): more may be due.
      let madeDormant = 0;
      let openDestinations: number | undefined;
      const { room, roomLimited: short } = claimRoom(settings, inFlight);
      roomLimited = short;
      if (!roomLimited) {
        skipped = new Set(sender.saturated());
        try {
          // Each claim costs one index probe per destination with pending callbacks, however many wait
          // for a skipped or parked one (store/callbacks.ts, claimDueCallbacks): no proof of what earlier
          // claims left behind is needed.
          const claim = await claimDue(db, {
            now: clock.now(),
            limit: room,
            leaseMs: settings.leaseSeconds * 1000,
            skipDestinations: [...skipped],
            minShare: settings.perDestinationConcurrency,
            // No more of a destination than the sender can take now: the rest would wait here, in this
            // worker's in-flight budget (a receiver that hangs would hold the others' share of it).
            capacities: sender.capacities(),
            maxPerDestination: settings.perDestinationConcurrency * 2,
            holder,
            inFlight: [...held.keys()],
          });
          claimed = claim.callbacks;
          madeDormant = claim.madeDormant;
          openDestinations = claim.openDestinations;
          if (claimed.length > 0) logger.debug({ callbacks: claimed.length, inFlight: inFlight + claimed.length }, 'callbacks claimed');
        } catch (error) {
          logger[retryLogLevel(error)]({ err: error }, 'could not claim due callbacks; trying again shortly');
        }
      }
      for (const callback of claimed) {
        inFlight++;
        held.set(callback.id, callback.destination);
        void deliver(callback)
          .catch((error) => {
            logger.error({ err: error, callbackId: callback.id }, 'callback delivery failed unexpectedly');
            // No outcome to record: claimed again once its lease would have ended, as a dead worker's would be.
            setTimeout(() => held.delete(callback.id), settings.leaseSeconds * 1000).unref();
          })
          .finally(() => {
            inFlight--;
            if (worthAnotherPass({ roomLimited, skipped }, callback.destination, () => sender.saturated())) signal();
            if (inFlight === 0) {
              void record().then(() => {
                for (const waiter of idleWaiters.splice(0)) waiter();
              });
            }
          });
      }
      const saturatedNow = sender.saturated();
      if (madeDormant > 0 || claimAgainAtOnce(room, claimed, () => saturatedNow, openDestinations)) continue;
      // Asleep until a destination saturated now frees a slot (worthAnotherPass), a NOTIFY or the poll.
      for (const destination of saturatedNow) skipped.add(destination);
      // The poll: callbacks may have become due with time (retries, leases, parking).
      await news.sleep(settings.pollIntervalMs);
    }
  };

  // The heartbeat: while this process lives, the leases of the destinations it has callbacks on their way
  // to are renewed every third of leaseSeconds, however long those callbacks take (a receiver that times
  // out, a long queue); the others lapse by themselves, and a process that dies holds none longer than
  // leaseSeconds (docs/concepts/delivery.md). It also forgets leases that ended long ago, anyone's.
  const leaseMs = settings.leaseSeconds * 1000;
  let beats = 0;
  const beat = () => {
    const destinations = [...new Set(held.values())];
    const pruning = beats++ % PRUNE_EVERY_BEATS === 0;
    if (destinations.length === 0 && !pruning) return;
    renewLeases(db, holder, destinations, clock.now(), leaseMs, pruning).catch((error) =>
      logger[retryLogLevel(error)]({ err: error, destinations: destinations.length }, 'could not renew the destination leases; trying again at the next beat'),
    );
  };
  const heartbeat = setInterval(beat, Math.max(100, Math.floor(leaseMs / 3)));
  heartbeat.unref();

  const done = loop();
  return {
    wake,
    liveLoad() {
      rollBuckets();
      return { sentPerSecond: last.sent, lagMs: Math.max(last.lagMs, current.lagMs), sentTotal };
    },
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
      clearInterval(heartbeat);
      // Every outcome is recorded: another worker may take this one's destinations at once.
      if (held.size === 0) {
        await releaseLeases(db, holder).catch((error) => logger.warn({ err: error }, 'could not release the destination leases; they end by themselves'));
      }
    },
  };
}
