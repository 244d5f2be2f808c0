/**
 * Fetches the blocks after the one being applied while it is applied, so that catching up overlaps
 * node round trips with database work instead of alternating them.
 *
 * Safe against reorganisations by construction: a prefetched block is only a candidate. The follower
 * still checks its parent hash against the cursor before applying it; on a mismatch (or any failure)
 * it clears the prefetcher and reconciles with blocks fetched afresh.
 */
import type { ChainAdapter, NormalizedBlock } from '../chains/types.ts';

export class BlockPrefetcher {
  private readonly ahead = new Map<number, Promise<NormalizedBlock>>();

  /** `depth`: blocks fetched at once, the one asked for included. */
  constructor(
    private readonly adapter: Pick<ChainAdapter, 'getBlock'>,
    private readonly depth: number,
  ) {}

  /** The block at `height`, and fetches of the following ones up to `head` started. */
  get(height: number, head: number): Promise<NormalizedBlock> {
    for (const h of this.ahead.keys()) if (h < height) this.ahead.delete(h);
    const block = this.fetch(height);
    this.ahead.delete(height);
    for (let h = height + 1; h < height + this.depth && h <= head; h++) this.fetch(h);
    return block;
  }

  /** Forgets every block fetched ahead (after a failure or a reorganisation). */
  clear(): void {
    this.ahead.clear();
  }

  private fetch(height: number): Promise<NormalizedBlock> {
    let block = this.ahead.get(height);
    if (!block) {
      block = this.adapter.getBlock(height);
      // A fetch ahead that fails is retried when its height is asked for; never an unhandled rejection.
      block.catch(() => this.ahead.get(height) === block && this.ahead.delete(height));
      this.ahead.set(height, block);
    }
    return block;
  }
}
