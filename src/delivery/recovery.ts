/**
 * The runner of bulk recovery jobs (delivery role): looks for unfinished jobs every `pollMs` and works
 * each through in chunks (store/recoveries.ts queueRecoveryChunk: charge, queue, move the cursor in one
 * transaction). Jobs survive restarts as rows; several runners share them (a chunk locks its job,
 * SKIP LOCKED), so the role can be scaled out or restarted at any point.
 *
 * Chunks are modest: queuing 100,000 callbacks is hundreds of short transactions, not one long one
 * holding row locks the delivery worker's recording would wait on.
 *
 * Recovered callbacks give way to live ones (target: 100,000 recovered without slowing live delivery by
 * more than 10 %, `npm run bench -- recovery`). When live delivery keeps the worker busy, a recovered
 * callback sent may be a live one not sent. Hence the pacing, from this process's worker's live load
 * (worker.ts liveLoad):
 *   - live callbacks flowing (at least BUSY_LIVE_PER_SECOND sent in the last second) and waiting (one
 *     waited at least BUSY_LAG_MS from due to sent): the worker is saturated. A chunk is then at most
 *     about two seconds of recovered callbacks at a share of the live rate, due one after the other at
 *     that rate (spread due times, so the worker never holds a burst of them), and the next chunk follows
 *     when those are due. The share starts at `liveShare` (default 5 %) and adapts to what the chunks
 *     cost the live rate, measured against the live rate alone in short pauses (recovery-pace.ts);
 *   - otherwise: full speed, but at most two chunks not yet sent, so that live callbacks arriving later
 *     do not find a whole job's callbacks due ahead of them.
 * Each runner sees its own process's worker; several delivery processes share the queue, so each one's
 * load stands for theirs.
 *
 * Jobs take turns between customers, as the chains' block jobs do (docs/guides/recover-and-replay.md):
 * each customer with an unfinished job gets a turn of about `turnMs` (500 ms) on its oldest job, the
 * customer served least recently first, so one customer's recovery of a million callbacks delays another's
 * small one by about a turn per customer ahead, not by the whole job. A job's pacing (the chunks not yet
 * sent, the adaptive share) is kept across its turns.
 */
import type { Logger } from 'pino';
import { sleep, startPollLoop } from '../lib/loop.ts';
import { type Db, retryLogLevel } from '../store/db.ts';
import { countUnattempted, queueRecoveryChunk, unfinishedRecoveries } from '../store/recoveries.ts';
import { PROBE_MS, RecoveryPace, START_SHARE } from './recovery-pace.ts';
import type { Clock, LiveLoad } from './worker.ts';

/** Below this many live callbacks sent per second the worker has room to spare: no pacing. */
const BUSY_LIVE_PER_SECOND = 100;
/** Live callbacks that are sent within this long of falling due are not held up: no pacing. */
const BUSY_LAG_MS = 250;
/** The slowest a paced recovery goes, callbacks/s: it always gets somewhere. */
const MIN_PACED_PER_SECOND = 10;
/** The longest a chunk waits for the one before it to be sent (its subscription may have been deactivated meanwhile). */
const MAX_WAIT_MS = 10_000;
/** How long one customer's job is worked before the next customer's gets its turn (as blockJobs.turnMs). */
const DEFAULT_TURN_MS = 500;

/** A job's pacing, kept across its turns: the chunks not yet known sent, and the adaptive share. */
interface JobState {
  /** The chunk before the last: the next one waits until it has been sent (at most two chunks unsent). */
  previous: string[];
  last: string[];
  adaptive: RecoveryPace;
  /** The live counter and time when the paced chunk being sent was queued: the live rate beside it. */
  beside: { sentTotal: number; at: number } | undefined;
}

export interface RecoveryRunnerOptions {
  db: Db;
  logger: Pick<Logger, 'info' | 'warn' | 'error'>;
  costPerCallback: bigint;
  clock?: Clock;
  /** How often to look for new jobs; default 1000 ms. */
  pollMs?: number;
  /** Callbacks per chunk; default 500. */
  chunk?: number;
  /** The delivery worker's live load; without it, no pacing. */
  liveLoad?: () => LiveLoad;
  /** The share of the live rate recovered callbacks start at while live delivery is saturated (then adapted); default 0.05. */
  liveShare?: number;
  /** How long a customer's job is worked before the next customer's turn; default 500 ms. */
  turnMs?: number;
}

/** What the next chunk is: how many callbacks, how far apart they fall due (ms). */
/** Live delivery keeps the worker busy: recovered callbacks are paced. */
export function saturated<L extends Pick<LiveLoad, 'sentPerSecond' | 'lagMs'>>(load: L | undefined): load is L {
  return load !== undefined && load.sentPerSecond >= BUSY_LIVE_PER_SECOND && load.lagMs >= BUSY_LAG_MS;
}

export function chunkPace(load: Pick<LiveLoad, 'sentPerSecond' | 'lagMs'> | undefined, chunk: number, liveShare: number): { size: number; spacingMs: number } {
  if (!saturated(load)) return { size: chunk, spacingMs: 0 };
  const perSecond = Math.max(MIN_PACED_PER_SECOND, liveShare * load.sentPerSecond);
  return { size: Math.max(1, Math.min(chunk, Math.round(perSecond * 2))), spacingMs: 1000 / perSecond };
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
  const liveShare = options.liveShare ?? START_SHARE;

  const turnMs = options.turnMs ?? DEFAULT_TURN_MS;
  /** Each unfinished job's pacing between its turns (dropped when it finishes). */
  const states = new Map<string, JobState>();
  /** When each customer's last turn ended (a counter): the least recently served goes first. */
  const served = new Map<string, number>();
  let turns = 0;

  /** Works job `id` for one turn (about turnMs): finished, its turn over (more to do), or busy (another runner holds it). */
  const runJob = async (id: string, stopping: AbortSignal): Promise<'finished' | 'turn' | 'busy'> => {
    /** Waits `ms`, or less when the runner stops. */
    const pause = (ms: number) => sleep(ms, stopping);
    const state = states.get(id) ?? { previous: [], last: [], adaptive: new RecoveryPace(liveShare), beside: undefined };
    states.set(id, state);
    const { adaptive } = state;
    /** Waits (at most MAX_WAIT_MS) until every callback of `ids` has been sent once. */
    const sent = async (ids: string[]) => {
      for (const started = performance.now(); !stopping.aborted && performance.now() - started < MAX_WAIT_MS; await pause(50)) {
        if ((await countUnattempted(db, ids)) === 0) return;
      }
    };
    const turnStarted = performance.now();
    for (;;) {
      let load = options.liveLoad?.();
      if (state.beside && load) {
        const ms = performance.now() - state.beside.at;
        if (saturated(load) && ms > 0) adaptive.observed(((load.sentTotal - state.beside.sentTotal) * 1000) / ms, ms);
        state.beside = undefined;
      }
      if (saturated(load) && adaptive.needsProbe() && options.liveLoad) {
        // A probe: nothing of the job left to send, then the live rate alone for PROBE_MS.
        await sent(state.last);
        const from = { sentTotal: options.liveLoad().sentTotal, at: performance.now() };
        await pause(PROBE_MS);
        if (stopping.aborted) return 'turn';
        load = options.liveLoad();
        adaptive.probed(((load.sentTotal - from.sentTotal) * 1000) / (performance.now() - from.at));
        logger.info(
          { recoveryId: id, livePerSecond: Math.round(adaptive.reference ?? 0), share: adaptive.share },
          'recovery paced beside saturated live delivery',
        );
      }
      const pace = chunkPace(load, chunk, adaptive.share);
      const { result, queued } = await queueRecoveryChunk(db, id, {
        chunk: pace.size,
        costPerCallback: options.costPerCallback,
        now: now(),
        spacingMs: pace.spacingMs,
      });
      if (result !== 'more') {
        states.delete(id);
        if (result === 'finished') logger.info({ recoveryId: id }, 'recovery job finished');
        return result;
      }
      if (stopping.aborted) return 'turn';
      state.previous = state.last;
      state.last = queued;
      if (pace.spacingMs > 0 && load) state.beside = { sentTotal: load.sentTotal, at: performance.now() };
      if (pace.spacingMs > 0) await pause(queued.length * pace.spacingMs);
      else await new Promise((resolve) => setImmediate(resolve)); // let the delivery worker's own queries in
      await sent(state.previous);
      if (stopping.aborted) return 'turn';
      // The turn is over: the next customer's job goes before this one's next chunk.
      if (performance.now() - turnStarted >= turnMs) return 'turn';
    }
  };

  return startPollLoop({
    pass: async (stopping) => {
      const jobs = await unfinishedRecoveries(db, 100);
      // Each customer's oldest job, the customer served least recently first (never served: first of all).
      const next = new Map<string, string>();
      for (const job of jobs) if (!next.has(job.customerId)) next.set(job.customerId, job.id);
      const order = [...next].sort(([a], [b]) => (served.get(a) ?? -1) - (served.get(b) ?? -1));
      const open = new Set(jobs.map((j) => j.id));
      for (const id of states.keys()) if (!open.has(id)) states.delete(id);
      let more = false;
      for (const [customerId, id] of order) {
        if (stopping.aborted) break;
        const result = await runJob(id, stopping);
        // A job left mid-way (its turn over), or finished with another of its customer's waiting: pass
        // again at once. A job another runner holds is its to run: no hurry (no spinning on it).
        if (result === 'turn' || (result === 'finished' && jobs.some((j) => j.customerId === customerId && j.id !== id))) more = true;
        served.set(customerId, ++turns);
      }
      return !stopping.aborted && more;
    },
    pollMs,
    // pollMs doubled per failure in a row, at most 2^6 times and 60 s.
    backoff: { firstMs: 2 * pollMs, maxMs: 60_000, maxDoublings: 5 },
    // The chunk in progress rolled back whole; the job resumes from its cursor on the next pass.
    onError: (error, failures) => logger[retryLogLevel(error)]({ err: error, failures }, 'recovery job failed; trying again'),
  });
}
