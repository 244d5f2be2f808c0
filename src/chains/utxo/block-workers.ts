/**
 * A pool of worker threads that read, parse and normalise a Bitcoin-family node's blocks off the main
 * thread (block-worker.ts), for the adapter's getBlock. A block of thousands of transactions is megabytes of
 * JSON: parsing and normalising it on the main thread held up matching, the database writes and everything
 * else of the process (the API, the live follower beside a backfill). The workers post each block back in a
 * compact form (compact-block.ts).
 *
 * The pool is lib/worker-pool.ts's:
 * - A request goes to the worker with the fewest in flight; a worker serves several at once (its reads
 *   overlap on its own event loop), so the follower's prefetch keeps every worker busy.
 * - Workers start at the first block asked, not before (a CLI command that never reads a block starts none).
 * - A worker that dies (an uncaught error, out of memory) fails its requests with UtxoAdapterError, which the
 *   follower retries like any node failure, and is replaced at the next request.
 * - Idle workers do not keep the process alive; a worker with a request in flight does.
 */
import type { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { createWorkerPool } from '../../lib/worker-pool.ts';
import type { NormalizedBlock } from '../types.ts';
import type { BlockAnswer, BlockRequest, BlockWorkerSetup, NodeDialect } from './block-worker-protocol.ts';
import { reviveError } from './block-worker-protocol.ts';
import { decodeCompactBlock } from './compact-block.ts';
import { UtxoAdapterError } from './errors.ts';

/**
 * The worker's young generation (V8 sizes it as three semi-spaces): room for a whole block's parse (a
 * 2,000-transaction block is about 4.5 MB of JSON and more in objects), so a scavenge finds it dead rather
 * than promoting it to the old generation for a full collection. With the default (16 MB semi-spaces) the
 * garbage collector was the worker's largest cost (29 % of its busy time); 32 MB semi-spaces cut the
 * worker's CPU per block by about a quarter (measured on the bench's blocks).
 */
const YOUNG_GENERATION_MB = 96;

export interface BlockWorkerPool {
  /** Block `height`, read from the node, checked and normalised in a worker. */
  getBlock(height: number): Promise<NormalizedBlock>;
  /** What the workers learnt of the node (the latest answer's); undefined before any answer. */
  dialect(): NodeDialect | undefined;
  /** The live worker threads (for tests: a crash is a terminated thread). */
  threads(): Worker[];
  /** Stops the workers; requests in flight fail. */
  close(): Promise<void>;
}

export function createBlockWorkerPool(size: number, setup: BlockWorkerSetup, logger?: Pick<Logger, 'warn' | 'info'>): BlockWorkerPool {
  let latest: NodeDialect | undefined;
  const pool = createWorkerPool<BlockAnswer>({
    entry: new URL('./block-worker', import.meta.url),
    size,
    what: 'a block worker pool',
    workerOptions: { workerData: setup, resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB } },
    intercept: (answer) => {
      if (answer.kind === 'log') {
        logger?.[answer.level](answer.fields, answer.message);
        return true;
      }
      latest = { verbosity: answer.verbosity, rawTransactionBlockHash: answer.rawTransactionBlockHash };
      return false;
    },
    onStop: (why, failure, code) => {
      if (!pool.closed()) logger?.warn({ ...setup.log, err: failure, code }, `block worker stopped (${why}); it is replaced at the next block`);
    },
    closedError: () => new UtxoAdapterError('the block workers are closed'),
  });

  function getBlock(height: number): Promise<NormalizedBlock> {
    return pool.run({
      message: (id) => ({ id, height }) satisfies BlockRequest,
      settle: (answer) => {
        if (answer.kind === 'error') throw reviveError(answer.error);
        if (answer.kind !== 'block') throw new UtxoAdapterError(`block ${height}: an answer of kind ${answer.kind} from the block worker`);
        try {
          return decodeCompactBlock(answer.block);
        } catch (error) {
          throw new UtxoAdapterError(`block ${height} from the block worker could not be read: ${(error as Error).message}`);
        }
      },
      stopped: (why) => new UtxoAdapterError(`the block worker reading block ${height} stopped (${why})${pool.closed() ? '' : '; retried in a new worker'}`),
    });
  }

  return { getBlock, dialect: () => latest, threads: pool.threads, close: pool.close };
}
