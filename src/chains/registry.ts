/**
 * Which adapter follows which chain family: the one place that maps a configured chain to its node
 * client. Families without an adapter yet answer undefined (the ingest role logs and skips them). Every
 * chain gets a pool (pool.ts) over one adapter per configured node; a single rpcUrl is a pool of one.
 */
import type { Logger } from 'pino';
import { type ChainConfig, chainNodes, DEFAULT_BLOCK_WORKERS, DEFAULT_MAX_LAG_BLOCKS, DEFAULT_REORG_QUORUM_DEPTH } from '../config/config.ts';
import { expectedIdentity } from '../domain/chain-identity.ts';
import { CHAINS, type ChainKey } from '../domain/chains.ts';
import { redactUrl } from '../domain/node-urls.ts';
import { createEvmAdapter } from './evm/adapter.ts';
import type { EvmBlockchain } from './evm/normalize.ts';
import { createNodePool, type NodePool, type NodeView } from './pool.ts';
import { createTronAdapter } from './tron/adapter.ts';
import type { TronNetwork } from './tron/normalize.ts';
import type { ChainAdapter, TokenMetadataCache } from './types.ts';
import { createUtxoAdapter } from './utxo/adapter.ts';
import type { UtxoBlockchain } from './utxo/normalize.ts';
import type { UtxoRpcAuth } from './utxo/rpc.ts';
import { createXrpAdapter } from './xrp/adapter.ts';

export interface ChainAdapterDeps {
  /** Where the adapters keep token metadata between restarts (the store's, from the composition root). */
  tokenMetadataCache: TokenMetadataCache;
  logger: Logger;
  /** Told every node's health after each round (the ingest role stores it; see pool.ts). */
  onNodes?: (views: NodeView[]) => void;
  /**
   * The adapter serves background work (backfill and replay jobs) beside the chain's follower: its block
   * worker threads run at a lower CPU priority (BACKGROUND_NICE), so on a busy machine the live block's
   * threads get the cores first.
   */
  background?: boolean;
}

/** The nice level of a background adapter's block workers (0 is the process's; 19 the lowest). */
export const BACKGROUND_NICE = 10;

export function createChainAdapter(chain: ChainConfig & ChainKey, deps: ChainAdapterDeps): NodePool | undefined {
  const urls = chainNodes(chain);
  const family = CHAINS[chain.blockchain].family;
  if (urls.length === 0 || !['evm', 'tron', 'xrp', 'utxo'].includes(family)) return undefined;
  const labels = nodeLabels(urls.map((u) => u.rpcUrl));
  const expected = expectedIdentity(chain.blockchain, chain.network, family, chain.chainId);
  return createNodePool({
    blockchain: chain.blockchain,
    network: chain.network,
    nodes: urls.map((url, i) => ({ label: labels[i] as string, adapter: createNodeAdapter(chain, url, deps) as ChainAdapter })),
    maxLagBlocks: chain.maxLagBlocks ?? DEFAULT_MAX_LAG_BLOCKS,
    reorgQuorumDepth: chain.reorgQuorumDepth ?? DEFAULT_REORG_QUORUM_DEPTH,
    identity: expected && { blockchain: chain.blockchain, network: chain.network, expected },
    probeIntervalMs: Math.min(Math.max(chain.pollIntervalMs, 50), 5_000),
    onReport: deps.onNodes,
    logger: deps.logger,
  });
}

/**
 * The nodes' names in logs, the status and the metrics: their redacted URLs, numbered (#2, #3) when two
 * differ only in what redaction hides (two API keys of one provider).
 */
export function nodeLabels(urls: string[]): string[] {
  const seen = new Map<string, number>();
  return urls.map((url) => {
    const label = redactUrl(url);
    const n = (seen.get(label) ?? 0) + 1;
    seen.set(label, n);
    return n === 1 ? label : `${label}#${n}`;
  });
}

function createNodeAdapter(
  chain: ChainConfig & ChainKey,
  node: { rpcUrl: string; wsUrl?: string; zmqUrl?: string },
  deps: ChainAdapterDeps,
): ChainAdapter | undefined {
  switch (CHAINS[chain.blockchain].family) {
    case 'evm':
      return createEvmAdapter({
        blockchain: chain.blockchain as EvmBlockchain,
        network: chain.network,
        rpcUrl: node.rpcUrl,
        wsUrl: node.wsUrl,
        mempoolPollIntervalMs: chain.mempoolPollIntervalMs,
        tokenMetadataCache: deps.tokenMetadataCache,
        concurrency: chain.concurrency,
        timeoutMs: chain.requestTimeoutMs,
        logger: deps.logger, // the adapter names its chain and node in each line
      });
    case 'tron':
      return createTronAdapter({
        network: chain.network as TronNetwork,
        rpcUrl: node.rpcUrl,
        tokenMetadataCache: deps.tokenMetadataCache,
        concurrency: chain.concurrency,
        timeoutMs: chain.requestTimeoutMs,
        logger: deps.logger,
      });
    case 'xrp':
      return createXrpAdapter({ network: chain.network, rpcUrl: node.rpcUrl, timeoutMs: chain.requestTimeoutMs, logger: deps.logger });
    case 'utxo':
      return createUtxoAdapter({
        blockchain: chain.blockchain as UtxoBlockchain,
        network: chain.network,
        rpcUrl: node.rpcUrl,
        auth: nodeAuth(chain),
        zmqUrl: node.zmqUrl,
        mempoolPollIntervalMs: chain.mempoolPollIntervalMs,
        tokenMetadataCache: deps.tokenMetadataCache,
        concurrency: chain.concurrency,
        timeoutMs: chain.requestTimeoutMs,
        logger: deps.logger,
        blockWorkers: chain.blockWorkers ?? DEFAULT_BLOCK_WORKERS,
        blockWorkerNice: deps.background ? BACKGROUND_NICE : undefined,
      });
    default:
      return undefined;
  }
}

/** Bitcoin-family credentials from the chain's configuration (the config check allows one kind at a time). */
function nodeAuth(chain: ChainConfig): UtxoRpcAuth | undefined {
  if (chain.rpcCookieFile !== undefined) return { cookieFile: chain.rpcCookieFile };
  if (chain.rpcUser !== undefined) return { user: chain.rpcUser, password: chain.rpcPassword ?? '' };
  return undefined;
}
