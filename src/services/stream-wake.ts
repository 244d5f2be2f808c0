/**
 * Wakes the event stream's long-polls (docs/concepts/event-stream.md) when the database announces new
 * callbacks or marks (NOTIFY herald_callbacks, the announcement that wakes the delivery worker too):
 * a waiting request reads again within milliseconds of the commit instead of polling.
 */
export class StreamWake {
  private waiters = new Set<() => void>();
  private closed = false;
  /** The change listener is connected: announcements arrive. Off, long-polls read again every POLL_WITHOUT_LISTENER_MS. */
  live = false;

  /** An announcement came: every waiting request reads again. */
  notify(): void {
    const waiting = [...this.waiters];
    this.waiters.clear();
    for (const wake of waiting) wake();
  }

  /**
   * A promise of the next announcement, armed now (before the caller's read, so that one arriving during
   * the read is not missed); it also resolves after `ms`, on `signal`'s abort, and at close().
   */
  next(ms: number, signal?: AbortSignal): Promise<void> {
    if (this.closed || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.waiters.add(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  /** Shutdown: every long-poll answers now (with what it has), and none waits any more. */
  close(): void {
    this.closed = true;
    this.notify();
  }

  get isClosed(): boolean {
    return this.closed;
  }
}
