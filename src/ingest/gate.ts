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
 */
import { setImmediate } from 'node:timers/promises';

export class FollowerGate {
  private busy = false;
  private waiting: (() => void)[] = [];

  /** The follower starts a step. */
  enter(): void {
    this.busy = true;
  }

  /** The follower's step is over (applied, caught up or failed). */
  leave(): void {
    this.busy = false;
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
}
