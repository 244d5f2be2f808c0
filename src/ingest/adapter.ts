/**
 * The one contract between a chain family's node client and chain following (ARCHITECTURE.md,
 * convention 1): RPC and normalisation only. Reorganisation handling lives once, in the follower.
 */
import type { NormalizedBlock } from '../chains/types.ts';

export interface ChainAdapter {
  /** The height of the node's best block. */
  getHead(): Promise<number>;
  /**
   * The node's canonical block at `height`, normalised. May throw (node down, height not yet there):
   * the follower retries with backoff, never skips the height.
   */
  getBlock(height: number): Promise<NormalizedBlock>;
}
