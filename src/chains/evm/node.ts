/**
 * One EVM node as the parts of its adapter share it (adapter.ts): the RPC client, the bounded concurrency
 * of per-transaction requests, the logger, and what the node serves of the methods that have a fallback,
 * learnt on first use.
 *
 * Only an answer that says "this method is not served" (EvmRpcError kind 'unsupported') switches to a
 * fallback; timeouts, 5xx and everything else are thrown, so the follower retries rather than silently
 * degrading because the node was busy.
 */
import type { Logger } from 'pino';
import { type EvmRpcClient, EvmRpcError } from './rpc.ts';

export type Support = 'unknown' | 'supported' | 'unsupported';

/** The node methods with a fallback, each 'unknown' until first asked. */
export interface EvmMethodSupport {
  blockReceipts: Support;
  /** Parity's trace_block. */
  parityBlockTraces: Support;
  /** debug_traceBlockByNumber with callTracer. */
  blockTraces: Support;
  transactionTraces: Support;
}

export interface EvmNode {
  rpc: EvmRpcClient;
  /** Parallel per-transaction requests when the node lacks the block-level methods. */
  concurrency: number;
  logger?: Pick<Logger, 'warn' | 'info'>;
  /** The fields of every log line about this node. */
  log: Record<string, unknown>;
  support: EvmMethodSupport;
  /** Records that the node does not serve `method` (logged once). */
  markUnsupported(capability: keyof EvmMethodSupport, method: string, error: EvmRpcError): void;
}

/** A consistency check failed (the node answered, but not about the block asked): the follower retries. */
export class EvmAdapterError extends Error {
  override name = 'EvmAdapterError';
}

export function createEvmNode(rpc: EvmRpcClient, concurrency: number, logger: EvmNode['logger'], log: Record<string, unknown>): EvmNode {
  const support: EvmMethodSupport = { blockReceipts: 'unknown', parityBlockTraces: 'unknown', blockTraces: 'unknown', transactionTraces: 'unknown' };
  return {
    rpc,
    concurrency,
    logger,
    log,
    support,
    markUnsupported(capability, method, error) {
      if (support[capability] !== 'unsupported')
        logger?.info({ ...log, method, answer: error.nodeMessage }, `node does not serve ${method}; using the fallback`);
      support[capability] = 'unsupported';
    },
  };
}

export function isUnsupported(error: unknown): error is EvmRpcError {
  return error instanceof EvmRpcError && error.kind === 'unsupported';
}
