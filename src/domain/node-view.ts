/**
 * A chain node's health as the node pool judges it after each round (chains/pool.ts), and as the ingest
 * role saves it for every process to show (store/chain-nodes.ts, the status endpoint, the metrics).
 */
export interface NodeView {
  /** The node's redacted URL. */
  node: string;
  eligible: boolean;
  /** Why not eligible; null when eligible. */
  reason: string | null;
  headHeight: number | null;
  headHash: string | null;
  /** Blocks behind the best eligible head (0 at or above it); null before the first answer. */
  lagBlocks: number | null;
  /** Failed / all requests over the last minute, 0..1; null when there were none. */
  errorRate: number | null;
  /** Moving average (EWMA) of the answered requests' latency; null before the first answer. */
  latencyMs: number | null;
  checkedAt: Date;
  /** When `eligible` last flipped (or the pool started). */
  changedAt: Date;
}
