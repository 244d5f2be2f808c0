/**
 * Who goes first in one ingest process: the live follower of a chain marks the time it spends on a
 * block (fetch, match, commit), and that chain's backfill and replay runner waits for it to be over
 * before it asks the node for its next block or writes a batch. Both share one event loop and one node:
 * without this, a backfill's blocks (parsed on the same thread) would stand in the live block's way.
 */
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
}
