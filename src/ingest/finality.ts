/**
 * The chain's finalized height as the follower reads it (docs/concepts/confirmations-and-reorganisations.md#finality):
 * the adapter's getFinalizedHeight (EVM `finalized` tag, Tron's solidified block, Dash ChainLocks), asked
 * at most once per `minIntervalMs` so that catching up pays one call a second, not one per block. A failed
 * read keeps the last height known (finality only moves forward) and is logged once per streak: holding a
 * finality callback a little longer is safe, failing the block step for it is not.
 */
import type { Logger } from 'pino';
import type { ChainAdapter } from '../chains/types.ts';
import type { ChainKey } from '../domain/chains.ts';

const DEFAULT_MIN_INTERVAL_MS = 1_000;

export class FinalityWatch {
  private known: number | undefined;
  private readAt = Number.NEGATIVE_INFINITY;
  private failing = false;
  /** The finalized height at the last sweep (follower.ts releaseFinalized): swept again only when it moved. */
  swept: number | undefined;

  constructor(
    private readonly adapter: Required<Pick<ChainAdapter, 'getFinalizedHeight'>>,
    private readonly chain: ChainKey,
    private readonly logger: Pick<Logger, 'warn' | 'info'>,
    private readonly minIntervalMs = DEFAULT_MIN_INTERVAL_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /** The finalized height, read again when the last read is older than minIntervalMs; undefined while none is known. */
  async height(): Promise<number | undefined> {
    if (this.now() - this.readAt < this.minIntervalMs) return this.known;
    this.readAt = this.now();
    try {
      const height = await this.adapter.getFinalizedHeight();
      if (height !== undefined && (this.known === undefined || height > this.known)) this.known = height;
      if (this.failing) this.logger.info({ ...this.chain, finalizedHeight: this.known }, 'finalized height read again');
      this.failing = false;
    } catch (error) {
      if (!this.failing)
        this.logger.warn(
          { err: error, ...this.chain, finalizedHeight: this.known },
          `cannot read the finalized height; finality callbacks wait: ${(error as Error).message}`,
        );
      this.failing = true;
    }
    return this.known;
  }
}

/** A FinalityWatch for the adapter when its chain has a finality signal, else undefined. */
export function finalityWatchOf(adapter: ChainAdapter, chain: ChainKey, logger: Pick<Logger, 'warn' | 'info'>): FinalityWatch | undefined {
  const read = adapter.getFinalizedHeight;
  return read ? new FinalityWatch({ getFinalizedHeight: () => read.call(adapter) }, chain, logger) : undefined;
}
