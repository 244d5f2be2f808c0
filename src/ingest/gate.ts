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
 * And one way to keep out of the next step's way: the fetches a background job has in flight when a live
 * block arrives share that block's time (the node serves them first, their parsing takes a core). Live blocks
 * of a chain come at a steady pace, so the gate keeps the start times of recent steps that applied a block,
 * and roomForFetch() lets a job start a fetch near the next expected one only when it has none in flight.
 */
import { setImmediate, setTimeout as sleep } from 'node:timers/promises';

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
   * When the follower's next block is expected (performance.now() time) and how late it may come: the last
   * applied step's start plus the median interval between the recent ones. Undefined before four of them.
   */
  nextBlockAt(): { at: number; lateMs: number } | undefined {
    const starts = this.appliedStarts;
    if (starts.length < 4) return undefined;
    const intervals = starts
      .slice(1)
      .map((t, i) => t - (starts[i] as number))
      .sort((a, b) => a - b);
    const pace = intervals[Math.floor(intervals.length / 2)] as number;
    return { at: (starts.at(-1) as number) + pace, lateMs: Math.min(MAX_LATE_MS, pace * LATE_SHARE) };
  }

  /**
   * Resolves when background work may start one more fetch, `inFlight()` being how many it has running: at
   * once between steps, unless the next block is expected within `leadMs` (a fetch's time: one started now
   * would still run then) or is a little late, and a fetch is in flight already: then when that one is done,
   * the step has come and gone, or the forecast has passed. So at most one fetch shares a live block's time
   * when it comes on time, and the job never stops: one fetch at a time goes on meanwhile.
   */
  async roomForFetch(inFlight: () => number, leadMs: number): Promise<void> {
    for (;;) {
      await this.idle();
      if (inFlight() === 0) return;
      const next = this.nextBlockAt();
      const now = performance.now();
      if (!next || now < next.at - leadMs || now > next.at + Math.max(leadMs, next.lateMs)) return;
      await sleep(1);
    }
  }
}
