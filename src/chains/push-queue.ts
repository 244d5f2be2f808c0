/**
 * The ids a node pushed (ZMQ rawtx, WebSocket newPendingTransactions) waiting for the mempool loop's next
 * round, and the loop's wake-up (MempoolReader.watch). Bounded: a push that outruns a stalled loop drops
 * the oldest ids and says so, and the reader then polls its node for what was dropped.
 */
export interface PushQueue {
  /** Queues an id (once) and wakes the loop; false when the queue was full and its oldest id was dropped. */
  push(id: string): boolean;
  /** The queued ids, oldest first; the queue is then empty. */
  drain(): string[];
  /** Wakes the loop without an id (a gap asks for a poll). */
  wake(): void;
  /** MempoolReader.watch. */
  watch(onNews: () => void): () => void;
  clear(): void;
}

export function createPushQueue(max = 200_000): PushQueue {
  const listeners = new Set<() => void>();
  let ids = new Set<string>();
  const wake = () => {
    for (const listener of listeners) listener();
  };
  return {
    push(id) {
      if (ids.has(id)) return true;
      let kept = true;
      if (ids.size >= max) {
        ids.delete(ids.values().next().value as string);
        kept = false;
      }
      ids.add(id); // a Set keeps insertion order: oldest first
      wake();
      return kept;
    },
    drain() {
      const out = [...ids];
      ids = new Set();
      return out;
    },
    wake,
    watch(onNews) {
      listeners.add(onNews);
      return () => listeners.delete(onNews);
    },
    clear() {
      listeners.clear();
      ids = new Set();
    },
  };
}
