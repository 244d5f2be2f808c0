/**
 * Chain following status for GET /blockchain-events/status: what the followers stored (cursor, last
 * head seen, block time) joined with the chains this deployment is configured to follow.
 */
import { chainLag } from '../domain/chain-lag.ts';
import { type ChainNodeRow, listChainNodes } from '../store/chain-nodes.ts';
import { type ChainStatusRow, listChainStatus } from '../store/chain-state.ts';
import type { Caller, Common } from './context.ts';

export interface ChainStatusItem {
  blockchain: string;
  network: string;
  state: 'starting' | 'following' | 'catching-up' | 'stopped' | 'not-configured';
  nodeHeight: number | null;
  processedHeight: number | null;
  processedHash: string | null;
  lagBlocks: number | null;
  lagSeconds: number | null;
  lastBlockTimestamp: number | null;
  nodeCheckedAt: string | null;
  stopReason: string | null;
  /** The chain's nodes as the ingest role last saw them (chain_nodes). */
  nodes: ChainNodeItem[];
}

export interface ChainNodeItem {
  /** Redacted: no credentials, no API key. */
  url: string;
  eligible: boolean;
  reason: string | null;
  headHeight: number | null;
  lagBlocks: number | null;
  errorRate: number | null;
  latencyMs: number | null;
  checkedAt: string;
}

export async function chainStatus(common: Common, caller: Caller, now: Date) {
  const items = await chainStatusItems(common, now);
  return { value: items, ...(await common.credits.charge(caller.owner.customerId, 0n, caller.endpoint)) };
}

/** Every chain configured or followed before, with its nodes: the status endpoint's and the operator's view. */
export async function chainStatusItems(common: Pick<Common, 'db' | 'config'>, now: Date): Promise<ChainStatusItem[]> {
  const [rows, nodeRows] = await Promise.all([listChainStatus(common.db), listChainNodes(common.db)]);
  const nodesOf = new Map<string, ChainNodeItem[]>();
  for (const n of nodeRows) {
    const key = `${n.blockchain}/${n.network}`;
    nodesOf.set(key, [...(nodesOf.get(key) ?? []), nodeItem(n)]);
  }
  const byKey = new Map(rows.map((r) => [`${r.blockchain}/${r.network}`, r]));
  const configured = new Set(common.config.chains.map((c) => `${c.blockchain}/${c.network}`));
  const items: ChainStatusItem[] = [];
  for (const key of new Set([...configured, ...byKey.keys()])) {
    const [blockchain, network] = key.split('/') as [string, string];
    const row = byKey.get(key);
    const nodes = nodesOf.get(key) ?? [];
    items.push(row ? { ...itemOf(row, configured.has(key), now), nodes } : { ...EMPTY, blockchain, network, state: 'starting', nodes });
  }
  items.sort((a, b) => a.blockchain.localeCompare(b.blockchain) || a.network.localeCompare(b.network));
  return items;
}

const EMPTY = {
  nodeHeight: null,
  processedHeight: null,
  processedHash: null,
  lagBlocks: null,
  lagSeconds: null,
  lastBlockTimestamp: null,
  nodeCheckedAt: null,
  stopReason: null,
};

function nodeItem(n: ChainNodeRow): ChainNodeItem {
  return {
    url: n.node,
    eligible: n.eligible,
    reason: n.reason,
    headHeight: n.headHeight,
    lagBlocks: n.lagBlocks,
    errorRate: n.errorRate,
    latencyMs: n.latencyMs,
    checkedAt: n.checkedAt.toISOString(),
  };
}

function itemOf(row: ChainStatusRow, configured: boolean, now: Date): Omit<ChainStatusItem, 'nodes'> {
  const { lagBlocks, lagSeconds } = chainLag(row, now);
  let state: ChainStatusItem['state'] = lagBlocks !== null && lagBlocks > 1 ? 'catching-up' : 'following';
  if (row.state === 'stopped') state = 'stopped';
  else if (!configured) state = 'not-configured';
  return {
    blockchain: row.blockchain,
    network: row.network,
    state,
    nodeHeight: row.nodeHead,
    processedHeight: row.height,
    processedHash: row.hash,
    lagBlocks,
    lagSeconds,
    lastBlockTimestamp: row.blockTimestamp,
    nodeCheckedAt: row.nodeHeadSeenAt?.toISOString() ?? null,
    stopReason: row.stopReason,
  };
}
