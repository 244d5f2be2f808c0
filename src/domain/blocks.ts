/**
 * A block as every layer names it: height, hash and time. The chain adapters' normalised blocks extend
 * it (src/chains/types.ts); the store keeps it in the chain window; matching puts it in callback items.
 */
export interface BlockRef {
  height: number;
  hash: string;
  /** Seconds since the Unix epoch. */
  timestamp: number;
}
