/**
 * Which adapter follows which chain family: the one place that maps a configured chain to its node
 * client. Families without an adapter yet answer undefined (the ingest role logs and skips them).
 */
import type { Logger } from 'pino';
import { type ChainConfig, chainNodes } from '../config/config.ts';
import { CHAINS } from '../domain/chains.ts';
import type { ChainKey } from '../store/chain-state.ts';
import type { Db } from '../store/db.ts';
import { createEvmAdapter } from './evm/adapter.ts';
import type { EvmBlockchain } from './evm/normalize.ts';
import { createTronAdapter } from './tron/adapter.ts';
import type { TronNetwork } from './tron/normalize.ts';
import type { ChainAdapter } from './types.ts';
import { createUtxoAdapter } from './utxo/adapter.ts';
import type { UtxoBlockchain } from './utxo/normalize.ts';
import type { UtxoRpcAuth } from './utxo/rpc.ts';
import { createXrpAdapter } from './xrp/adapter.ts';

export function createChainAdapter(chain: ChainConfig & ChainKey, deps: { db: Db; logger: Logger }): ChainAdapter | undefined {
  const [node] = chainNodes(chain);
  if (!node) return undefined;
  switch (CHAINS[chain.blockchain].family) {
    case 'evm':
      return createEvmAdapter({
        blockchain: chain.blockchain as EvmBlockchain,
        network: chain.network,
        rpcUrl: node.rpcUrl,
        wsUrl: node.wsUrl,
        db: deps.db,
        concurrency: chain.concurrency,
        timeoutMs: chain.requestTimeoutMs,
        logger: deps.logger, // the adapter names its chain and node in each line
      });
    case 'tron':
      return createTronAdapter({
        network: chain.network as TronNetwork,
        rpcUrl: node.rpcUrl,
        db: deps.db,
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
        db: deps.db,
        concurrency: chain.concurrency,
        timeoutMs: chain.requestTimeoutMs,
        logger: deps.logger,
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
