/**
 * Which chains this installation follows (docs/reference/chains.md "Chains without a node"): a subscription on a chain no node
 * follows would stay "active, no callbacks yet" for ever, so it is refused unless the operator accepts them
 * (subscriptions.allowUnfollowedChains, to set them up before the node is added).
 *
 * Followed: a chain of this process's configuration, or one whose nodes an ingest process checked lately
 * (chain_nodes): API processes are not always given the node URLs the ingest processes follow.
 */
import type { Blockchain, Network } from '../domain/chains.ts';
import { ApiError } from '../domain/errors.ts';
import { hasNodeCheckedSince } from '../store/chain-nodes.ts';
import type { Common } from './context.ts';

/** An ingest process checks its nodes every few seconds; a chain whose last check is older is not followed any more. */
export const NODE_REPORT_FRESH_MS = 10 * 60_000;

export function isConfigured(config: Common['config'], blockchain: string, network: string): boolean {
  return config.chains.some((c) => c.blockchain === blockchain && c.network === network);
}

export async function isFollowed(common: Pick<Common, 'config' | 'db'>, blockchain: Blockchain, network: Network, now = new Date()): Promise<boolean> {
  if (isConfigured(common.config, blockchain, network)) return true;
  return await hasNodeCheckedSince(common.db, { blockchain, network }, new Date(now.getTime() - NODE_REPORT_FRESH_MS));
}

/** What the status says of a chain with active subscriptions and no node. */
export function noNodeReason(activeSubscriptions: number): string {
  const these = activeSubscriptions === 1 ? '1 active subscription sends' : `${activeSubscriptions} active subscriptions send`;
  return `no node follows this chain: its ${these} no callbacks until the operator adds one`;
}

/** What a create refused on a chain without a node says. */
export function noNodeMessage(blockchain: string, network: string): string {
  return `This herald installation follows no ${blockchain} ${network} node, so subscriptions there would send no callbacks: the operator has to add a ${blockchain} ${network} node first; then create the subscription again.`;
}

/** Refuses a create on a chain not followed (409 invalid_data) unless the operator accepts them. */
export async function assertChainFollowed(common: Pick<Common, 'config' | 'db'>, blockchain: Blockchain, network: Network): Promise<void> {
  if (common.config.subscriptions.allowUnfollowedChains) return;
  if (await isFollowed(common, blockchain, network)) return;
  const message = noNodeMessage(blockchain, network);
  throw new ApiError('invalid_data', message, [{ attribute: 'network', message }]);
}
