/**
 * Chain following status for GET /blockchain-events/status: what the followers stored (cursor, last
 * head seen, block time) joined with the chains this deployment is configured to follow, and the chains
 * that have active subscriptions but no node (state no-node; docs/reference/chains.md "Chains without a node").
 */
import { chainLag } from '../domain/chain-lag.ts';
import { holdReason } from '../domain/holds.ts';
import { type ChainNodeRow, listChainNodes } from '../store/chain-nodes.ts';
import { type ChainStatusRow, listChainStatus } from '../store/chain-state.ts';
import { listMempoolStatus, type MempoolStatusRow } from '../store/mempool.ts';
import { activeSubscriptionChains } from '../store/subscriptions.ts';
import type { Caller, Common } from './context.ts';
import { NODE_REPORT_FRESH_MS, noNodeReason } from './followed-chains.ts';

export interface ChainStatusItem {
  blockchain: string;
  network: string;
  state: 'starting' | 'following' | 'catching-up' | 'held' | 'stopped' | 'not-configured' | 'no-node';
  nodeHeight: number | null;
  processedHeight: number | null;
  processedHash: string | null;
  lagBlocks: number | null;
  lagSeconds: number | null;
  lastBlockTimestamp: number | null;
  nodeCheckedAt: string | null;
  stopReason: string | null;
  /** The deep-reorganisation breaker's hold (state held): why, how deep, the blocks involved; null when not held. */
  hold: HoldItem | null;
  /** The chain's nodes as the ingest role last saw them (chain_nodes). */
  nodes: ChainNodeItem[];
  /** The mempool reader as the ingest role last reported it (mempool_status); null without one. */
  mempool: MempoolItem | null;
}

export interface HoldItem {
  heldSince: string;
  reason: 'reorganisation' | 'disagreement';
  /** The deepest reorganisation (or disagreement) while held, in blocks. */
  depth: number;
  breakerDepth: number;
  /** The sentence the alert and the status show. */
  description: string;
  /** The last trip's common ancestor and blocks: herald's (orphaned) and the node's (new) hash per height, lowest first. */
  ancestorHeight: number;
  ancestorHash: string | null;
  blocks: { height: number; orphanedHash: string; newHash: string | null }[];
  /** Trips of the breaker since the chain was held (at most the last 20 kept). */
  trips: number;
}

export function holdItem(hold: NonNullable<ChainStatusRow['hold']>): HoldItem {
  const last = hold.trips.at(-1);
  return {
    heldSince: hold.heldAt.toISOString(),
    reason: hold.reason,
    depth: hold.depth,
    breakerDepth: hold.breakerDepth,
    description: holdReason(hold),
    ancestorHeight: last?.ancestorHeight ?? 0,
    ancestorHash: last?.ancestorHash ?? null,
    blocks: last?.blocks ?? [],
    trips: hold.trips.length,
  };
}

export interface MempoolItem {
  state: 'following' | 'failing' | 'idle';
  method: string;
  lastPolledAt: string | null;
  lagSeconds: number | null;
  backlog: number;
  transactionsSeen: number;
  callbacksFired: number;
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
  // The chains without a node that matter to this customer: those of its own active subscriptions.
  const items = await chainStatusItems(common, now, caller.owner.customerId);
  return { value: items, ...(await common.credits.charge(caller.owner.customerId, 0n, caller.endpoint)) };
}

/**
 * Every chain configured or followed before, with its nodes, and every chain with active subscriptions (of
 * `customerId`, or of anyone) that no node follows: the status endpoint's and the operator's view.
 */
export async function chainStatusItems(common: Pick<Common, 'db' | 'config'>, now: Date, customerId?: string): Promise<ChainStatusItem[]> {
  const [rows, nodeRows, mempoolRows, subscribed] = await Promise.all([
    listChainStatus(common.db),
    listChainNodes(common.db),
    listMempoolStatus(common.db),
    activeSubscriptionChains(common.db, customerId),
  ]);
  const mempoolOf = new Map(mempoolRows.map((m) => [`${m.blockchain}/${m.network}`, mempoolItem(m, now)]));
  const nodesOf = new Map<string, ChainNodeItem[]>();
  for (const n of nodeRows) {
    const key = `${n.blockchain}/${n.network}`;
    nodesOf.set(key, [...(nodesOf.get(key) ?? []), nodeItem(n)]);
  }
  const byKey = new Map(rows.map((r) => [`${r.blockchain}/${r.network}`, r]));
  const configured = new Set(common.config.chains.map((c) => `${c.blockchain}/${c.network}`));
  // Followed: configured here, or nodes checked lately by an ingest process elsewhere (as followed-chains.ts decides).
  const fresh = now.getTime() - NODE_REPORT_FRESH_MS;
  const followed = new Set([...configured, ...nodeRows.filter((n) => n.checkedAt.getTime() >= fresh).map((n) => `${n.blockchain}/${n.network}`)]);
  const noNode = new Map(subscribed.filter((s) => !followed.has(`${s.blockchain}/${s.network}`)).map((s) => [`${s.blockchain}/${s.network}`, s.active]));
  const items: ChainStatusItem[] = [];
  for (const key of new Set([...configured, ...byKey.keys(), ...noNode.keys()])) {
    const [blockchain, network] = key.split('/') as [string, string];
    const row = byKey.get(key);
    const nodes = nodesOf.get(key) ?? [];
    const mempool = mempoolOf.get(key) ?? null;
    const item: ChainStatusItem = row
      ? { ...itemOf(row, configured.has(key), now), nodes, mempool }
      : { ...EMPTY, blockchain, network, state: 'starting', hold: null, nodes, mempool };
    const active = noNode.get(key);
    if (active !== undefined) {
      item.state = 'no-node';
      item.stopReason = noNodeReason(active);
    }
    items.push(item);
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

function mempoolItem(m: MempoolStatusRow, now: Date): MempoolItem {
  return {
    state: m.state,
    method: m.method,
    lastPolledAt: m.lastPolledAt?.toISOString() ?? null,
    lagSeconds: m.lastPolledAt ? Math.max(0, Math.floor((now.getTime() - m.lastPolledAt.getTime()) / 1000)) : null,
    backlog: m.backlog,
    transactionsSeen: m.transactionsSeen,
    callbacksFired: m.callbacksFired,
  };
}

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

function itemOf(row: ChainStatusRow, configured: boolean, now: Date): Omit<ChainStatusItem, 'nodes' | 'mempool'> {
  const { lagBlocks, lagSeconds } = chainLag(row, now);
  let state: ChainStatusItem['state'] = lagBlocks !== null && lagBlocks > 1 ? 'catching-up' : 'following';
  // Held before not-configured: an API process is often given no chains, and a hold needs the operator wherever it is looked at.
  if (row.state === 'stopped') state = 'stopped';
  else if (row.hold) state = 'held';
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
    hold: row.hold && holdItem(row.hold),
  };
}
