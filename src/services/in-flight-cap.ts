/**
 * At most a few calls of one kind in flight per customer or API key (docs/reference/api-overview.md): the call over the
 * cap is refused at once (429) instead of queueing, so one customer's burst of heavy calls (dry-run
 * replays, bulk creates) takes a bounded share of the process and the others' requests do not wait
 * behind it. Per process: N API processes allow N times the cap.
 */
export class InFlightCap {
  private readonly counts = new Map<string, number>();

  constructor(readonly limit: number) {}

  /** A release function (idempotent) when `key` has room, undefined when it has `limit` calls in flight already. */
  tryEnter(key: string): (() => void) | undefined {
    const n = this.counts.get(key) ?? 0;
    if (n >= this.limit) return undefined;
    this.counts.set(key, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.counts.get(key) ?? 1) - 1;
      if (left > 0) this.counts.set(key, left);
      else this.counts.delete(key);
    };
  }

  /** Calls in flight for `key`. */
  inFlight(key: string): number {
    return this.counts.get(key) ?? 0;
  }
}
