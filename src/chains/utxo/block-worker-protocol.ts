/**
 * The messages between the block worker pool (block-workers.ts, main thread) and a block worker
 * (block-worker.ts), and how an error crosses: as its class and fields, revived on the main thread as the
 * same class (UtxoRpcError with its kind and code, UtxoAdapterError, UtxoNormalizeError), so the follower
 * and the node pool treat a failure in a worker exactly as the same failure in process: retried with
 * backoff, never skipped.
 */
import type { Network } from '../../domain/chains.ts';
import type { BlockVerbosity, Support } from './blocks.ts';
import type { CompactUtxoBlock } from './compact-block.ts';
import { UtxoAdapterError } from './errors.ts';
import { type UtxoBlockchain, UtxoNormalizeError } from './normalize.ts';
import { type UtxoRpcAuth, UtxoRpcError, type UtxoRpcErrorKind } from './rpc.ts';

/** workerData: what a worker needs to read blocks from its node on its own. */
export interface BlockWorkerSetup {
  blockchain: UtxoBlockchain;
  network: Network;
  rpcUrl: string;
  auth?: UtxoRpcAuth;
  timeoutMs?: number;
  exactAmounts: boolean;
  concurrency: number;
  /**
   * The worker thread's nice level (Linux setpriority on the thread), 0 or absent: the process's own. Workers
   * of background work (backfill, replay) run lower, so the CPU goes to the live follower's threads first.
   */
  nice?: number;
  /** Fields of every log line (chain, redacted node URL). */
  log: Record<string, unknown>;
}

/** Main thread to worker: read and normalise block `height`. */
export interface BlockRequest {
  id: number;
  height: number;
}

/** What the worker's block fetcher has learnt of its node (reported with every answer). */
export interface NodeDialect {
  verbosity: 'unknown' | BlockVerbosity;
  rawTransactionBlockHash: Support;
}

export type BlockAnswer =
  | ({ kind: 'block'; id: number; block: CompactUtxoBlock } & NodeDialect)
  | ({ kind: 'error'; id: number; error: SerializedError } & NodeDialect)
  | { kind: 'log'; level: 'info' | 'warn'; fields: Record<string, unknown>; message: string };

export interface SerializedError {
  name: string;
  message: string;
  rpc?: { method: string; url: string; kind: UtxoRpcErrorKind; nodeMessage: string; code?: number; status?: number; retryAfterMs?: number };
}

export function serializeError(error: unknown): SerializedError {
  if (error instanceof UtxoRpcError) {
    const retryAfterMs = error.retryAfterMs;
    return {
      name: error.name,
      message: error.message,
      rpc: { method: error.method, url: error.url, kind: error.kind, nodeMessage: error.nodeMessage, code: error.code, status: error.status, retryAfterMs },
    };
  }
  if (error instanceof Error) return { name: error.name, message: error.message };
  return { name: 'Error', message: String(error) };
}

export function reviveError(e: SerializedError): Error {
  if (e.rpc) {
    const r = e.rpc;
    const error = new UtxoRpcError(r.method, r.url, r.kind, r.nodeMessage, r.code, r.status);
    if (r.retryAfterMs !== undefined) error.retryAfterMs = r.retryAfterMs;
    return error;
  }
  if (e.name === 'UtxoNormalizeError') return new UtxoNormalizeError(e.message);
  // UtxoAdapterError, and anything unexpected in a worker: the node's answer could not be read (retried,
  // and on a pool of nodes tried on another), never a caller's mistake.
  return new UtxoAdapterError(e.name === 'UtxoAdapterError' ? e.message : `block worker: ${e.name}: ${e.message}`);
}
