/**
 * Chain following status for GET /blockchain-events/status: what the followers stored (cursor, last
 * head seen, block time) joined with the chains this deployment is configured to follow.
 */
import { chainLag } from '../domain/chain-lag.ts';
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
}

export async function chainStatus(common: Common, caller: Caller, now: Date) {
  const rows = await listChainStatus(common.db);
  const byKey = new Map(rows.map((r) => [`${r.blockchain}/${r.network}`, r]));
  const configured = new Set(common.config.chains.map((c) => `${c.blockchain}/${c.network}`));
  const items: ChainStatusItem[] = [];
  for (const key of new Set([...configured, ...byKey.keys()])) {
    const [blockchain, network] = key.split('/') as [string, string];
    const row = byKey.get(key);
    items.push(row ? itemOf(row, configured.has(key), now) : { ...EMPTY, blockchain, network, state: 'starting' });
  }
  items.sort((a, b) => a.blockchain.localeCompare(b.blockchain) || a.network.localeCompare(b.network));
  return { value: items, ...(await common.credits.charge(caller.owner.customerId, 0n)) };
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

function itemOf(row: ChainStatusRow, configured: boolean, now: Date): ChainStatusItem {
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
