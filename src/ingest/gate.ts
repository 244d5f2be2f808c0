/**
 * Who goes first in one ingest process: the live follower of a chain marks the time it spends on a
 * block (fetch, match, commit), and the chain's background work (backfill and replay runner, mempool
 * reader) waits for it to be over before it asks the node for more, works on what it got, or writes.
 * They share one event loop, one node and the database: without this, background blocks and pending
 * transactions (parsed and matched on the same thread) would stand in the live block's way.
 *
 * Two ways to wait:
 * - idle(): the follower is between two steps. Enough for work that is cheap per turn (a backfill
 *   block): it never runs inside a live step, so a live block arriving alone is not delayed.
 * - quiet(maxWaitMs): the follower is between steps AND did not start the next one at once, i.e. it is
 *   waiting for the chain, not catching up. While it catches up it starts each step as the previous one
 *   ends, so idle() would let the background work take every gap and a share of the core with it; quiet()
 *   lets it through once per maxWaitMs at most, so it is slowed, never starved.
 *
 * And one way to keep out of the next step's way: whatever background work runs when a live block arrives
 * shares that block's time (the node serves the job's requests first, their parsing and the job's queries take
 * the cores the live block's fetch and commit need, the answers land on the same event loop). Live blocks of a
 * chain come at a steady pace, so the gate keeps the start times of recent steps that applied a block, and
 * clearOfNextBlock() starts a piece of work only when it should be over before the next expected one: the
 * live block finds the job idle, none of its requests in flight.
 */
import { setImmediate } from 'node:timers/promises';

/** Steps that applied a block, whose start times forecast the next one. */
const FORECAST_STEPS = 9;
/** How late the forecast next step may be and still be waited for, as a share of the pace (and at most 1 s). */
const LATE_SHARE = 0.2;
const MAX_LATE_MS = 1000;

export class FollowerGate {
  private busy = false;
  private waiting: (() => void)[] = [];
  private stepStart = 0;
  /** Start times (performance.now()) of the latest steps that applied a block, oldest first. */
  private appliedStarts: number[] = [];
  /** nextBlockAt()'s answer, worked out when a step that applied a block ends (not at every question). */
  private forecast: { at: number; lateMs: number; pace: number } | undefined;

  /** The follower starts a step. */
  enter(): void {
    this.busy = true;
    this.stepStart = performance.now();
  }

  /** The follower's step is over (applied, caught up or failed); `applied`: it applied a block. */
  leave(applied = false): void {
    this.busy = false;
    if (applied) {
      this.appliedStarts.push(this.stepStart);
      if (this.appliedStarts.length > FORECAST_STEPS) this.appliedStarts.shift();
      this.forecast = forecastOf(this.appliedStarts, performance.now());
    }
    const waiting = this.waiting;
    this.waiting = [];
    for (const resume of waiting) resume();
  }

  /** Resolves at once when the follower is between steps, else when its step is over. */
  idle(): Promise<void> {
    if (!this.busy) return Promise.resolve();
    return new Promise((resume) => this.waiting.push(resume));
  }

  /**
   * Resolves when the follower is between steps and still is one turn of the event loop later (its loop
   * starts the next step within the same turn when it is catching up), or, once `maxWaitMs` have passed,
   * at its next gap between steps.
   */
  async quiet(maxWaitMs: number): Promise<void> {
    const deadline = performance.now() + maxWaitMs;
    for (;;) {
      await this.idle();
      if (performance.now() >= deadline) return;
      await setImmediate();
      if (!this.busy) return;
    }
  }

  /**
   * When the follower's next block is expected (performance.now() time), how late it may come, and the pace:
   * the last applied step's start plus the median interval between the recent ones, or the step's end when it
   * took longer than that (the next block came meanwhile: the follower goes on to it at once). Undefined before
   * four of them.
   */
  nextBlockAt(): { at: number; lateMs: number; pace: number } | undefined {
    return this.forecast;
  }

  /** Resolves at `at` (performance.now() time) or when the follower's next step ends, whichever comes first. */
  private until(at: number): Promise<void> {
    return new Promise((resume) => {
      const timer = setTimeout(wake, Math.max(1, at - performance.now()));
      let woken = false;
      function wake() {
        if (woken) return;
        woken = true;
        clearTimeout(timer);
        resume();
      }
      this.waiting.push(wake);
    });
  }

  /**
   * Resolves when background work that takes about `leadMs` may start: the follower is between steps and its
   * next block is neither expected within `leadMs` (the work would still be running then) nor a little late.
   * Inside that window it waits until the step has come and gone, or the forecast has passed. Never stuck:
   * work held for a whole block interval goes through at the follower's next gap once `mayPass()` (the
   * follower's blocks come back to back, catching up: there is no clear room, and the job must still move).
   */
  async clearOfNextBlock(leadMs: number, mayPass: () => boolean = () => true): Promise<void> {
    let heldSince: number | undefined;
    for (;;) {
      await this.idle();
      const next = this.nextBlockAt();
      const now = performance.now();
      if (!next || now < next.at - leadMs) return;
      const windowEnd = next.at + Math.max(leadMs, next.lateMs);
      if (now > windowEnd) return;
      heldSince ??= now;
      if (now - heldSince >= next.pace && mayPass()) return;
      // No polling: woken when the window ends, when it has been held a whole pace, or when the step ends.
      const paceOver = heldSince + next.pace;
      await this.until(now < paceOver ? Math.min(windowEnd, paceOver) : windowEnd);
    }
  }

  /**
   * Resolves when background work may start one more fetch taking about `leadMs`, `inFlight()` being how many
   * it has running: clearOfNextBlock(), so a live block that comes on time finds none of the job's fetches at
   * the node (those started before the window are over by then); a fetch held for a whole block interval goes
   * through only when none is in flight, so catching up, the job goes on one fetch at a time.
   */
  roomForFetch(inFlight: () => number, leadMs: number): Promise<void> {
    return this.clearOfNextBlock(leadMs, () => inFlight() === 0);
  }
}

/** The forecast of the next block (see nextBlockAt) from the start times of the recent applied steps and the last one's end. */
function forecastOf(starts: number[], lastEnd: number): { at: number; lateMs: number; pace: number } | undefined {
  if (starts.length < 4) return undefined;
  const intervals = starts
    .slice(1)
    .map((t, i) => t - (starts[i] as number))
    .sort((a, b) => a - b);
  const pace = intervals[Math.floor(intervals.length / 2)] as number;
  return { at: Math.max((starts.at(-1) as number) + pace, lastEnd), lateMs: Math.min(MAX_LATE_MS, pace * LATE_SHARE), pace };
}
