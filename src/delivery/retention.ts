/**
 * The retention job of the delivery role: finished callbacks older than their status's window are
 * deleted with their attempts, in small batches (src/store/retention.ts), at start and then every
 * retention.intervalSeconds. `herald prune` runs the same pass on demand. Several delivery processes may
 * prune at once: each batch skips the rows another holds.
 */
import type { Logger } from 'pino';
import type { RetentionConfig } from '../config/config.ts';
import { sleep } from '../lib/loop.ts';
import type { Metrics } from '../metrics.ts';
import { createBackgroundDb } from '../store/backend-priority.ts';
import { type Db, retryLogLevel } from '../store/db.ts';
import { countPrunable, FINISHED_STATUSES, type FinishedStatus, pruneFinishedBatch } from '../store/retention.ts';

const DAY_MS = 86_400_000;

export interface RetentionFigures {
  /** Per status: callbacks and attempts deleted (or, dry run, that would be). */
  byStatus: Record<FinishedStatus, { callbacks: number; attempts: number; before: Date }>;
  callbacks: number;
  attempts: number;
  seconds: number;
  /** Of `seconds`, the time spent in batches (the rest was pauses and counting): at most about dutyCycle of it. */
  busySeconds: number;
  /** The pass was stopped (shutdown) before it had deleted everything old. */
  interrupted: boolean;
}

export function retentionCutoffs(retention: RetentionConfig, now: Date): Record<FinishedStatus, Date> {
  const days: Record<FinishedStatus, number> = { delivered: retention.deliveredDays, failed: retention.failedDays, cancelled: retention.cancelledDays };
  return Object.fromEntries(FINISHED_STATUSES.map((s) => [s, new Date(now.getTime() - days[s] * DAY_MS)])) as Record<FinishedStatus, Date>;
}

/**
 * One pass: for each finished status, batches until none is left older than its window (or `signal`
 * aborts: the batch under way completes, none starts). Dry run: counts only.
 */
export async function pruneOldCallbacks(
  db: Db & { lowered?(): boolean },
  retention: RetentionConfig,
  options: { now?: Date; dryRun?: boolean; signal?: AbortSignal; metrics?: Metrics } = {},
): Promise<RetentionFigures> {
  const started = performance.now();
  const cutoffs = retentionCutoffs(retention, options.now ?? new Date());
  const figures: RetentionFigures = {
    byStatus: Object.fromEntries(FINISHED_STATUSES.map((s) => [s, { callbacks: 0, attempts: 0, before: cutoffs[s] }])) as RetentionFigures['byStatus'],
    callbacks: 0,
    attempts: 0,
    seconds: 0,
    busySeconds: 0,
    interrupted: false,
  };
  for (const status of FINISHED_STATUSES) {
    const totals = figures.byStatus[status];
    if (options.dryRun) {
      Object.assign(totals, await countPrunable(db, status, cutoffs[status]));
    } else {
      let from: Date | null = null;
      for (;;) {
        if (options.signal?.aborted) {
          figures.interrupted = true;
          break;
        }
        const batchStarted = performance.now();
        const batch = await pruneFinishedBatch(db, { status, before: cutoffs[status], limit: retention.batchSize, from });
        const batchMs = performance.now() - batchStarted;
        figures.busySeconds += batchMs / 1000;
        totals.callbacks += batch.callbacks;
        totals.attempts += batch.attempts;
        options.metrics?.retentionPruned.inc({ status, table: 'callbacks' }, batch.callbacks);
        options.metrics?.retentionPruned.inc({ status, table: 'callback_attempts' }, batch.attempts);
        // A short batch: nothing older is left (but rows another transaction held or changed, left for the next pass).
        if (batch.found < retention.batchSize || !batch.lastFinishedAt) break;
        from = batch.lastFinishedAt;
        const pauseMs = pauseAfter(batchMs, pacingOf(retention, db.lowered?.() ?? false));
        if (pauseMs > 0) await sleep(pauseMs, options.signal);
      }
    }
    figures.callbacks += totals.callbacks;
    figures.attempts += totals.attempts;
    if (figures.interrupted) break;
  }
  figures.seconds = (performance.now() - started) / 1000;
  return figures;
}

/**
 * The pacing in force: what is configured, else, while the pruner's backend runs at a lower priority,
 * no pause at all (dutyCycle 1, pauseMs 0: the CPU it gets is what the rest leaves idle, so a pause would
 * only leave that idle), else half its time in batches and at least 10 ms between two.
 */
export function pacingOf(retention: Pick<RetentionConfig, 'dutyCycle' | 'pauseMs'>, backendLowered: boolean): { dutyCycle: number; pauseMs: number } {
  return { dutyCycle: retention.dutyCycle ?? (backendLowered ? 1 : 0.5), pauseMs: retention.pauseMs ?? (backendLowered ? 0 : 10) };
}

/**
 * The pause after a batch that took `batchMs`: the pruner spends at most `dutyCycle` of its time in
 * batches, so when delivery makes the database slower (longer batches) it waits longer too, and gives
 * back in proportion to what it took; never less than `pauseMs`.
 */
export function pauseAfter(batchMs: number, retention: { pauseMs: number; dutyCycle: number }): number {
  return Math.max(retention.pauseMs, (batchMs * (1 - retention.dutyCycle)) / retention.dutyCycle);
}

/**
 * The pruner's own connection (a pool of one): its backend runs at retention.backendNice where it is a
 * local process herald may renice, so the batches use the CPU that delivery leaves idle
 * (docs/operations/retention.md, "CPU priority"); elsewhere (a remote server, a pooler in front) it is an ordinary connection.
 */
export function openPrunerDb(url: string, retention: RetentionConfig, options: { preparedStatements?: boolean; logger?: Logger }): Db & { lowered(): boolean } {
  return createBackgroundDb(url, {
    nice: retention.backendNice,
    preparedStatements: options.preparedStatements,
    onPriority: (p) =>
      p.lowered
        ? options.logger?.debug({ pid: p.pid, nice: p.nice, autogroup: p.autogroup }, "retention: the pruner's database backend runs at a lower priority")
        : options.logger?.info({ pid: p.pid, reason: p.reason }, "retention: the pruner's database backend keeps its priority"),
  });
}

export interface RetentionPruner {
  /** Resolves once the pass under way (if any) has stopped after its current batch. */
  stop(): Promise<void>;
}

/** Prunes at start and then every retention.intervalSeconds until stopped. */
export function startRetentionPruner(deps: { db: Db; retention: RetentionConfig; logger: Logger; metrics?: Metrics }): RetentionPruner {
  const { db, retention, logger, metrics } = deps;
  const abort = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  const pass = async () => {
    try {
      const figures = await pruneOldCallbacks(db, retention, { signal: abort.signal, metrics });
      metrics?.retentionLastRun.set(Date.now() / 1000);
      const counts = Object.fromEntries(Object.entries(figures.byStatus).map(([s, f]) => [s, { callbacks: f.callbacks, attempts: f.attempts }]));
      // At info when it deleted something or was cut short; a pass that found nothing logs at debug.
      logger[figures.callbacks > 0 || figures.interrupted ? 'info' : 'debug'](
        {
          callbacks: figures.callbacks,
          attempts: figures.attempts,
          byStatus: counts,
          seconds: Math.round(figures.seconds * 1000) / 1000,
          busySeconds: Math.round(figures.busySeconds * 1000) / 1000,
          interrupted: figures.interrupted,
        },
        figures.interrupted ? 'retention: pruning stopped by shutdown' : 'retention: old callbacks pruned',
      );
    } catch (error) {
      // The next pass tries again; nothing is half done (each batch is one statement).
      logger[retryLogLevel(error)]({ err: error }, 'retention: pruning failed');
    }
    if (!abort.signal.aborted) timer = setTimeout(schedule, retention.intervalSeconds * 1000);
  };
  const schedule = () => {
    running = pass();
  };
  timer = setTimeout(schedule, 0);
  return {
    async stop() {
      abort.abort();
      clearTimeout(timer);
      await running;
    },
  };
}
