/**
 * The ChainAdapter of the EVM chains (ethereum, ethereum-classic, binance-smart-chain): node RPC plus
 * the pure normaliser (normalize.ts), composed of one part per concern, each sharing the node
 * (node.ts: its client, and what it serves, detected per node, lazily, on first use):
 *
 * - blocks.ts: blocks, their hashes, the node's health and identity;
 * - receipts.ts: a block's receipts (`eth_getBlockReceipts` when served, else `eth_getTransactionReceipt`
 *   per transaction with bounded concurrency), and where transactions were mined;
 * - traces.ts: a block's call traces, for internal transfers (`trace_block`, `debug_traceBlockByNumber`
 *   or `debug_traceTransaction`; none served: no internal transfers, visible in capabilities());
 * - tokens.ts: balances and token metadata;
 * - mempool.ts and details.ts: pending transactions, and transaction details;
 * - subscription.ts: new heads over the node's WebSocket.
 */

import type { Logger } from 'pino';
import type { Network } from '../../domain/chains.ts';
import type { ChainAdapter, TokenMetadataCache } from '../types.ts';
import { createEvmBlockReader } from './blocks.ts';
import { createEvmDetailsReader } from './details.ts';
import { createEvmMempoolReader } from './mempool.ts';
import { createEvmNode, type EvmMethodSupport } from './node.ts';
import { type EvmBlockchain, parseQuantity } from './normalize.ts';
import { createEvmReceiptReader } from './receipts.ts';
import { createEvmRpcClient } from './rpc.ts';
import { createSubscription } from './subscription.ts';
import { createEvmTokenReader } from './tokens.ts';
import { createEvmTraceReader } from './traces.ts';

export interface EvmAdapterOptions {
  blockchain: EvmBlockchain;
  network: Network;
  rpcUrl: string;
  /** Enables watchHeads (eth_subscribe newHeads); without it the follower polls. */
  wsUrl?: string;
  /** Token metadata is cached here too (the store's token_metadata); memory only without it. */
  tokenMetadataCache?: TokenMetadataCache;
  /** Parallel per-transaction requests when the node lacks the block-level methods; default 8. */
  concurrency?: number;
  /** Per request; default 10 s. */
  timeoutMs?: number;
  logger?: Pick<Logger, 'warn' | 'info'>;
  /** First delay before reconnecting the WebSocket; doubles up to 30 s. Default 1 s. */
  reconnectDelayMs?: number;
  /** With wsUrl: the pending transaction filter is polled at least this often (newPendingTransactions pushes); default 30 s. */
  mempoolPollIntervalMs?: number;
}

export interface EvmCapabilities extends EvmMethodSupport {
  /** Where internal transfers come from; 'none': the node serves no trace method, blocks have none. */
  internalTransfers: 'unknown' | 'block-traces' | 'transaction-traces' | 'none';
  headWatching: 'websocket' | 'none';
}

export type EvmAdapter = Required<
  Omit<ChainAdapter, 'watchHeads' | 'getUnspentOutputs' | 'checkReorganisation' | 'reportInconsistency' | 'mempool' | 'getFinalizedHeight'>
> &
  Pick<ChainAdapter, 'mempool' | 'getFinalizedHeight'> &
  Pick<ChainAdapter, 'watchHeads'> & {
    capabilities(): EvmCapabilities;
  };

/** The EVM chains whose nodes serve the `finalized` block tag (docs/concepts/confirmations-and-reorganisations.md#finality). */
const FINALIZED_TAG_CHAINS: ReadonlySet<string> = new Set(['ethereum', 'binance-smart-chain']);

export function createEvmAdapter(options: EvmAdapterOptions): EvmAdapter {
  const { blockchain, network, logger } = options;
  const rpc = createEvmRpcClient({ url: options.rpcUrl, timeoutMs: options.timeoutMs });
  const log = { blockchain, network, node: rpc.url };
  const node = createEvmNode(rpc, Math.max(1, options.concurrency ?? 8), logger, log);
  const receipts = createEvmReceiptReader(node);
  const blocks = createEvmBlockReader(node, blockchain, receipts, createEvmTraceReader(node));
  const caps = node.support;

  const mempool = createEvmMempoolReader(
    rpc,
    blockchain,
    node.concurrency,
    options.wsUrl
      ? {
          wsUrl: options.wsUrl,
          pollIntervalMs: options.mempoolPollIntervalMs,
          timeoutMs: options.timeoutMs,
          reconnectDelayMs: options.reconnectDelayMs,
          logger,
          log,
        }
      : undefined,
  );

  const adapter: EvmAdapter = {
    // The node's `finalized` block tag (post-merge Ethereum, BSC's fast finality; ethereum-classic has none):
    // null before any block is final.
    ...(FINALIZED_TAG_CHAINS.has(blockchain) && {
      async getFinalizedHeight() {
        const block = await rpc.request<{ number?: string } | null>('eth_getBlockByNumber', ['finalized', false]);
        return block?.number ? Number(BigInt(block.number)) : undefined;
      },
    }),
    getHead: () => rpc.blockNumber(),
    // Reading ahead while the follower applies a block is the follower's job (src/ingest/prefetch.ts).
    ...blocks,
    findTransaction: receipts.findTransaction,
    findTransactions: receipts.findTransactions,
    ...createEvmTokenReader(rpc, options),
    ...createEvmDetailsReader(rpc, blockchain),
    mempool,
    capabilities: () => ({
      ...caps,
      internalTransfers:
        caps.parityBlockTraces === 'supported' || caps.blockTraces === 'supported'
          ? 'block-traces'
          : caps.blockTraces === 'unsupported' && caps.transactionTraces === 'supported'
            ? 'transaction-traces'
            : caps.transactionTraces === 'unsupported'
              ? 'none'
              : 'unknown',
      headWatching: options.wsUrl ? 'websocket' : 'none',
    }),
    async close() {
      heads?.stop();
      await mempool.close?.();
      await rpc.close();
    },
  };

  const heads = options.wsUrl
    ? createSubscription({
        wsUrl: options.wsUrl,
        params: ['newHeads'],
        parse: (result) => {
          const height = parseQuantity((result as { number?: unknown } | undefined)?.number);
          return height === undefined ? undefined : Number(height);
        },
        keepAliveMs: 15_000,
        timeoutMs: options.timeoutMs,
        reconnectDelayMs: options.reconnectDelayMs,
        logger,
        log,
      })
    : undefined;
  if (heads) {
    adapter.watchHeads = (onHead) => heads.watch(onHead);
  }
  return adapter;
}
