/**
 * Turns for bulk chunks (docs/guides/bulk-import.md "Sharing the service"): one chunk is
 * written at a time in the whole process, whichever request (or `herald subscriptions import`) it
 * belongs to, and after each one the database is left to everything else for a rest in proportion to
 * the time the chunk took.
 *
 * Why one at a time: two chunks of one customer queue on its row anyway (each holds it until its
 * commit), so a second one in flight adds little speed, but it doubles what the bulk asks of the
 * database's CPU and WAL at once, which other customers' statements then wait behind. Why a rest in
 * proportion rather than a fixed pace: the share adapts to the machine (a chunk that took long because
 * the database was busy is followed by a longer rest); with REST_FRACTION 0.1 the bulk holds the
 * database at most about 90 % of the time. Small on purpose: turns alone made a two-request import
 * slower (the second request's read no longer overlaps the first's write: about 1.2-1.5 times the
 * code before on a loaded machine), and the 60 s budget of a million items must hold; a rest mostly
 * lowers the other customers' median, while their tail comes from the moments the bulk does run.
 *
 * The rest delays the next chunk's turn, not the caller: the request goes on checking its next items
 * and answering while the database rests.
 */

import { setTimeout as sleep } from 'node:timers/promises';

/** The rest after a chunk, as a fraction of the time the chunk took (its turn's wait not counted). */
export const REST_FRACTION = 0.1;

export class ChunkTurns {
  /** Settles when the last turn given out (and its rest) is over: the next one starts then. */
  private last: Promise<void> = Promise.resolve();

  constructor(private readonly restFraction: number = REST_FRACTION) {}

  /** Runs `write` when no other chunk's turn (or rest) is running; turns are given in the order asked. */
  async run<T>(write: () => Promise<T>): Promise<T> {
    const before = this.last;
    let finished!: () => void;
    this.last = new Promise<void>((resolve) => {
      finished = resolve;
    });
    await before;
    const started = performance.now();
    try {
      return await write();
    } finally {
      const rest = (performance.now() - started) * this.restFraction;
      if (rest > 0) void sleep(rest).then(finished);
      else finished();
    }
  }
}

/** The process's turns: every bulk request and import of this process takes its chunks' turns here. */
export const bulkChunkTurns = new ChunkTurns();
