/**
 * The runner of bulk recovery jobs (delivery role): looks for unfinished jobs every `pollMs` and works
 * each through in chunks (store/recoveries.ts runRecoveryChunk: charge, queue, move the cursor in one
 * transaction). Jobs survive restarts as rows; several runners share them (a chunk locks its job,
 * SKIP LOCKED), so the role can be scaled out or restarted at any point.
 *
 * Chunks are modest and the runner yields between them: queuing 100,000 callbacks is 200 short
 * transactions, not one long one holding row locks the delivery worker's recording would wait on.
 */
import type { Logger } from 'pino';
import { type Db, retryLogLevel } from '../store/db.ts';
import { runRecoveryChunk, unfinishedRecoveries } from '../store/recoveries.ts';
import type { Clock } from './worker.ts';

export interface RecoveryRunnerOptions {
  db: Db;
  logger: Pick<Logger, 'info' | 'warn' | 'error'>;
  costPerCallback: bigint;
  clock?: Clock;
  /** How often to look for new jobs; default 1000 ms. */
  pollMs?: number;
  /** Callbacks per chunk; default 500. */
  chunk?: number;
}

export interface RecoveryRunner {
  /** Look for jobs now (a test, or whoever learns of a new job). */
  wake(): void;
  stop(): Promise<void>;
}

export function startRecoveryRunner(options: RecoveryRunnerOptions): RecoveryRunner {
  const { db, logger } = options;
  const pollMs = options.pollMs ?? 1000;
  const chunk = options.chunk ?? 500;
  const now = () => options.clock?.now() ?? new Date();
  let running = true;
  let wakeUp: (() => void) | undefined;
  let woken = false;
  let failures = 0;

  const runJob = async (id: string) => {
    for (;;) {
      const result = await runRecoveryChunk(db, id, { chunk, costPerCallback: options.costPerCallback, now: now() });
      if (result !== 'more') {
        if (result === 'finished') logger.info({ recoveryId: id }, 'recovery job finished');
        return;
      }
      if (!running) return;
      // Let the delivery worker's own queries in between chunks.
      await new Promise((resolve) => setImmediate(resolve));
    }
  };

  const loop = async () => {
    while (running) {
      woken = false;
      try {
        for (const id of await unfinishedRecoveries(db, 20)) {
          if (!running) break;
          await runJob(id);
        }
        failures = 0;
      } catch (error) {
        // The chunk in progress rolled back whole; the job resumes from its cursor on the next pass.
        failures++;
        logger[retryLogLevel(error)]({ err: error, failures }, 'recovery job failed; trying again');
      }
      if (!running || woken) continue;
      const wait = failures > 0 ? Math.min(60_000, pollMs * 2 ** Math.min(failures, 6)) : pollMs;
      await new Promise<void>((resume) => {
        const timer = setTimeout(() => {
          wakeUp = undefined;
          resume();
        }, wait);
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
    wake() {
      if (wakeUp) wakeUp();
      else woken = true;
    },
    async stop() {
      running = false;
      wakeUp?.();
      await done;
    },
  };
}
