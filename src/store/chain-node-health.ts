/**
 * Reads of chain_nodes (migration 013), the ingest role's view of each configured node, for the roles
 * that do not follow chains themselves (the operator alerts of the delivery role).
 */
import type { Queryable } from './db.ts';

export interface ChainNodeRow {
  blockchain: string;
  network: string;
  /** The node's redacted URL. */
  node: string;
  eligible: boolean;
  /** Why it is not eligible; null when it is. */
  reason: string | null;
  headHeight: number | null;
  lagBlocks: number | null;
  errorRate: number | null;
  latencyMs: number | null;
  checkedAt: Date;
  changedAt: Date;
}

export async function listChainNodes(q: Queryable): Promise<ChainNodeRow[]> {
  const rows = await q.query<{
    blockchain: string;
    network: string;
    node: string;
    eligible: boolean;
    reason: string | null;
    head_height: string | null;
    lag_blocks: number | null;
    error_rate: number | null;
    latency_ms: number | null;
    checked_at: Date;
    changed_at: Date;
  }>(
    'chain-nodes:list',
    `SELECT blockchain, network, node, eligible, reason, head_height, lag_blocks, error_rate, latency_ms, checked_at, changed_at
     FROM chain_nodes ORDER BY blockchain, network, node`,
  );
  return rows.map((r) => ({
    blockchain: r.blockchain,
    network: r.network,
    node: r.node,
    eligible: r.eligible,
    reason: r.reason,
    headHeight: r.head_height === null ? null : Number(r.head_height),
    lagBlocks: r.lag_blocks,
    errorRate: r.error_rate,
    latencyMs: r.latency_ms,
    checkedAt: r.checked_at,
    changedAt: r.changed_at,
  }));
}
