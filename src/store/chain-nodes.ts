/**
 * chain_nodes (migration 013): each configured node's health as the ingest role last saw it, so that any
 * process (the status endpoint, the metrics, the operator alerts) shows the same view.
 */

import type { ChainKey } from '../domain/chains.ts';
import type { NodeView } from '../domain/node-view.ts';
import type { Queryable } from './db.ts';

/** A node's row: the pool's view of it (domain/node-view.ts). */
export type ChainNodeRow = NodeView;

/**
 * The chain's nodes as they are now: one statement that writes every row and deletes the rows of nodes no
 * longer configured (so it is atomic without a transaction, and cheap enough to run at every health round).
 */
export async function saveChainNodes(q: Queryable, chain: ChainKey, nodes: ChainNodeRow[]): Promise<void> {
  await q.query(
    'chain-nodes:save',
    `WITH input AS (
       SELECT * FROM unnest($3::text[], $4::boolean[], $5::text[], $6::bigint[], $7::text[], $8::integer[], $9::float8[], $10::float8[],
                            $11::timestamptz[], $12::timestamptz[])
         AS t(node, eligible, reason, head_height, head_hash, lag_blocks, error_rate, latency_ms, checked_at, changed_at)
     ), gone AS (
       DELETE FROM chain_nodes c WHERE c.blockchain = $1 AND c.network = $2 AND c.node <> ALL ($3::text[])
     )
     INSERT INTO chain_nodes (blockchain, network, node, eligible, reason, head_height, head_hash, lag_blocks, error_rate, latency_ms, checked_at, changed_at)
     SELECT $1, $2, node, eligible, reason, head_height, head_hash, lag_blocks, error_rate, latency_ms, checked_at, changed_at FROM input
     ON CONFLICT (blockchain, network, node) DO UPDATE SET
       eligible = EXCLUDED.eligible, reason = EXCLUDED.reason, head_height = EXCLUDED.head_height, head_hash = EXCLUDED.head_hash,
       lag_blocks = EXCLUDED.lag_blocks, error_rate = EXCLUDED.error_rate, latency_ms = EXCLUDED.latency_ms,
       checked_at = EXCLUDED.checked_at, changed_at = EXCLUDED.changed_at`,
    [
      chain.blockchain,
      chain.network,
      nodes.map((n) => n.node),
      nodes.map((n) => n.eligible),
      nodes.map((n) => n.reason),
      nodes.map((n) => n.headHeight),
      nodes.map((n) => n.headHash),
      nodes.map((n) => n.lagBlocks),
      nodes.map((n) => n.errorRate),
      nodes.map((n) => n.latencyMs),
      nodes.map((n) => n.checkedAt),
      nodes.map((n) => n.changedAt),
    ],
  );
}

/** Every chain's nodes, by chain and then in name order. */
export async function listChainNodes(q: Queryable): Promise<(ChainNodeRow & ChainKey)[]> {
  const rows = await q.query<{
    blockchain: ChainKey['blockchain'];
    network: ChainKey['network'];
    node: string;
    eligible: boolean;
    reason: string | null;
    head_height: string | null;
    head_hash: string | null;
    lag_blocks: number | null;
    error_rate: number | null;
    latency_ms: number | null;
    checked_at: Date;
    changed_at: Date;
  }>(
    'chain-nodes:list',
    `SELECT blockchain, network, node, eligible, reason, head_height, head_hash, lag_blocks, error_rate, latency_ms, checked_at, changed_at
     FROM chain_nodes ORDER BY blockchain, network, node`,
  );
  return rows.map((r) => ({
    blockchain: r.blockchain,
    network: r.network,
    node: r.node,
    eligible: r.eligible,
    reason: r.reason,
    headHeight: r.head_height === null ? null : Number(r.head_height),
    headHash: r.head_hash,
    lagBlocks: r.lag_blocks,
    errorRate: r.error_rate,
    latencyMs: r.latency_ms,
    checkedAt: r.checked_at,
    changedAt: r.changed_at,
  }));
}

/** Whether an ingest process checked a node of `chain` since `since` (the chain is followed somewhere). */
export async function hasNodeCheckedSince(q: Queryable, chain: ChainKey, since: Date): Promise<boolean> {
  const rows = await q.query<{ one: number }>(
    'chain-nodes:checked-since',
    'SELECT 1 AS one FROM chain_nodes WHERE blockchain = $1 AND network = $2 AND checked_at >= $3 LIMIT 1',
    [chain.blockchain, chain.network, since],
  );
  return rows.length > 0;
}
