/**
 * Background work: the pieces every long-running loop of herald shares (the chain follower, the mempool
 * reader, the backfill and replay runner, the delivery worker, the recovery runner, the pruner...).
 *
 * - `sleep`: a wait that ends early when the loop's stop signal aborts, and leaves no timer or listener
 *   behind either way.
 * - `Alarm`: news for a sleeping loop (a NOTIFY, a head announced by the node, a freed destination).
 *   News during the sleep ends it; news while the loop works is kept, so the sleep after the work is
 *   skipped: the pass in progress may not have seen what the news announces.
 * - `Backoff`: the wait after each failure in a row, doubling from a first wait up to a cap.
 * - `startPollLoop`: a loop of passes with all three and an error log: wake, stop, back off.
 *
 * No jitter: each of these loops is one per process and chain (a follower, a runner), and what they
 * retry against (one node, the database) is not shared with thousands of clients; the outbound
 * callbacks, which are, have their own jittered schedule (src/delivery/policy.ts).
 */

/** Resolves after `ms`, or at once when `signal` aborts (or has). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return cuttableSleep(ms, signal);
}

/** `onStart` receives the function that ends the sleep early; `onEnd` runs the moment it ends, however. */
function cuttableSleep(ms: number, signal: AbortSignal | undefined, onStart?: (end: () => void) => void, onEnd?: () => void): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(end, ms);
    signal?.addEventListener('abort', end, { once: true });
    onStart?.(end);
    function end() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', end);
      onEnd?.();
      resolve();
    }
  });
}

/**
 * News for a loop that sleeps between passes. The loop calls `reset()` as a pass starts (the pass
 * itself sees what was announced before it) and `sleep()` after it.
 */
export class Alarm {
  #rang = false;
  #end: (() => void) | undefined;

  /** Ends the sleep in progress; when there is none, the next sleep returns at once. */
  ring(): void {
    if (this.#end) this.#end();
    else this.#rang = true;
  }

  /** Forgets news announced before the pass that starts now. */
  reset(): void {
    this.#rang = false;
  }

  /** Sleeps `ms`, less when news comes (or came during the pass) or `signal` aborts. */
  async sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (this.#rang) return;
    await cuttableSleep(
      ms,
      signal,
      (end) => {
        this.#end = end;
      },
      // Spent the moment it ends (not when the sleeper resumes): a ring in between marks the next sleep.
      () => {
        this.#end = undefined;
      },
    );
  }
}

export interface BackoffOptions {
  /** The wait after the first failure. */
  firstMs: number;
  /** The longest wait. */
  maxMs: number;
  /** How many times the wait may double (unlimited by default: maxMs caps it). */
  maxDoublings?: number;
}

/** The wait after the `failures`-th failure in a row (0 for none): firstMs, doubling, at most maxMs. */
export function backoffMs(failures: number, options: BackoffOptions): number {
  if (failures <= 0) return 0;
  const { firstMs, maxMs, maxDoublings = Number.POSITIVE_INFINITY } = options;
  return Math.min(maxMs, firstMs * 2 ** Math.min(failures - 1, maxDoublings));
}

/** The wait after each failure in a row: firstMs, doubling (at most maxDoublings times), at most maxMs. */
export class Backoff {
  #failures = 0;
  constructor(private readonly options: BackoffOptions) {}

  /** Failures since the last success. */
  get failures(): number {
    return this.#failures;
  }

  /** Counts a failure and returns the wait before the next try. */
  next(): number {
    this.#failures++;
    return this.current();
  }

  /** The wait after the failures counted so far (0 after a success). */
  current(): number {
    return backoffMs(this.#failures, this.options);
  }

  reset(): void {
    this.#failures = 0;
  }
}

export interface PollLoopOptions {
  /**
   * One pass over the work; resolves true when there is more to do at once. It stops early when `signal`
   * aborts (the loop is stopping). A throw counts as a failure: logged, then the pass is tried again
   * after the backoff's wait.
   */
  pass: (signal: AbortSignal) => Promise<boolean>;
  /** The sleep between passes when the last one succeeded and found nothing more. */
  pollMs: number;
  backoff: BackoffOptions;
  /** Logs a failed pass (`failures`: in a row, this one included). */
  onError: (error: unknown, failures: number) => void;
}

export interface PollLoop {
  /** News: passes again now, or as soon as the pass in progress ends. */
  wake(): void;
  /** Stops: the pass in progress sees its signal abort; resolves when it has returned. */
  stop(): Promise<void>;
}

/** Starts a loop of passes, woken by news, backing off after failures, until stopped. */
export function startPollLoop(options: PollLoopOptions): PollLoop {
  const stopping = new AbortController();
  const { signal } = stopping;
  const alarm = new Alarm();
  const backoff = new Backoff(options.backoff);
  const loop = async () => {
    while (!signal.aborted) {
      alarm.reset();
      let again = false;
      try {
        again = (await options.pass(signal)) === true;
        backoff.reset();
      } catch (error) {
        backoff.next();
        options.onError(error, backoff.failures);
      }
      if (signal.aborted || again) continue;
      await alarm.sleep(backoff.failures > 0 ? backoff.current() : options.pollMs, signal);
    }
  };
  const done = loop();
  return {
    wake: () => alarm.ring(),
    async stop() {
      stopping.abort();
      await done;
    },
  };
}
