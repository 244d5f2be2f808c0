/**
 * A pool of worker threads that read, parse and normalise a Bitcoin-family node's blocks off the main
 * thread (block-worker.ts), for the adapter's getBlock. A block of thousands of transactions is megabytes of
 * JSON: parsing and normalising it on the main thread held up matching, the database writes and everything
 * else of the process (the API, the live follower beside a backfill). The workers post each block back in a
 * compact form (compact-block.ts).
 *
 * - A request goes to the worker with the fewest in flight; a worker serves several at once (its reads
 *   overlap on its own event loop), so the follower's prefetch keeps every worker busy.
 * - Workers start at the first block asked, not before (a CLI command that never reads a block starts none).
 * - A worker that dies (an uncaught error, out of memory) fails its requests with UtxoAdapterError, which the
 *   follower retries like any node failure, and is replaced at the next request.
 * - Idle workers do not keep the process alive; a worker with a request in flight does.
 *
 * Running from the TypeScript sources (tsx, vitest), a worker registers tsx before loading its .ts entry;
 * from the build (dist/), it loads the compiled .js.
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
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

interface Slot {
  worker: Worker;
  inFlight: Map<number, { height: number; resolve: (block: NormalizedBlock) => void; reject: (error: Error) => void }>;
}

/** The worker entry beside this module, and the code that starts it (registering tsx first for a .ts entry). */
function workerEntry(): { code: string; eval: true } | { url: URL; eval: false } {
  const fromSource = import.meta.url.endsWith('.ts');
  const url = new URL(`./block-worker.${fromSource ? 'ts' : 'js'}`, import.meta.url);
  if (!fromSource) return { url, eval: false };
  // tsx's ESM API (require.resolve finds its CommonJS twin beside it, which cannot register in a worker).
  const tsx = pathToFileURL(
    createRequire(import.meta.url)
      .resolve('tsx/esm/api')
      .replace(/\.cjs$/, '.mjs'),
  ).href;
  return { code: `import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(url.href)}); })`, eval: true };
}

export function createBlockWorkerPool(size: number, setup: BlockWorkerSetup, logger?: Pick<Logger, 'warn' | 'info'>): BlockWorkerPool {
  if (!Number.isInteger(size) || size < 1) throw new RangeError(`a block worker pool needs at least one worker, not ${size}`);
  const slots: (Slot | undefined)[] = Array.from({ length: size }, () => undefined);
  let nextId = 0;
  let latest: NodeDialect | undefined;
  let closed = false;

  function start(index: number): Slot {
    const entry = workerEntry();
    const options = { workerData: setup, resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB } };
    const worker = entry.eval ? new Worker(entry.code, { ...options, eval: true }) : new Worker(entry.url, options);
    worker.unref();
    const slot: Slot = { worker, inFlight: new Map() };
    worker.on('message', (answer: BlockAnswer) => {
      if (answer.kind === 'log') {
        logger?.[answer.level](answer.fields, answer.message);
        return;
      }
      latest = { verbosity: answer.verbosity, rawTransactionBlockHash: answer.rawTransactionBlockHash };
      const job = slot.inFlight.get(answer.id);
      if (!job) return;
      slot.inFlight.delete(answer.id);
      if (slot.inFlight.size === 0) worker.unref();
      if (answer.kind === 'error') job.reject(reviveError(answer.error));
      else {
        try {
          job.resolve(decodeCompactBlock(answer.block));
        } catch (error) {
          job.reject(new UtxoAdapterError(`block ${job.height} from the block worker could not be read: ${(error as Error).message}`));
        }
      }
    });
    let failure: Error | undefined;
    worker.on('error', (error) => {
      failure = error;
    });
    worker.on('exit', (code) => {
      if (slots[index] === slot) slots[index] = undefined;
      if (slot.inFlight.size === 0) return;
      const why = failure ? `${failure.name}: ${failure.message}` : `exit code ${code}`;
      if (!closed) logger?.warn({ ...setup.log, err: failure, code }, `block worker stopped (${why}); it is replaced at the next block`);
      for (const job of slot.inFlight.values())
        job.reject(new UtxoAdapterError(`the block worker reading block ${job.height} stopped (${why})${closed ? '' : '; retried in a new worker'}`));
      slot.inFlight.clear();
    });
    slots[index] = slot;
    return slot;
  }

  /** The live worker with the fewest requests in flight (an empty or dead place is filled). */
  function pick(): Slot {
    let best: Slot | undefined;
    for (let i = 0; i < slots.length; i++) {
      const slot = slots[i] ?? start(i);
      if (!best || slot.inFlight.size < best.inFlight.size) best = slot;
    }
    return best as Slot;
  }

  function getBlock(height: number): Promise<NormalizedBlock> {
    if (closed) return Promise.reject(new UtxoAdapterError('the block workers are closed'));
    const slot = pick();
    const id = ++nextId;
    return new Promise<NormalizedBlock>((resolve, reject) => {
      if (slot.inFlight.size === 0) slot.worker.ref();
      slot.inFlight.set(id, { height, resolve, reject });
      slot.worker.postMessage({ id, height } satisfies BlockRequest);
    });
  }

  async function close(): Promise<void> {
    closed = true;
    await Promise.all(slots.map((slot) => slot?.worker.terminate()));
  }

  return { getBlock, dialect: () => latest, threads: () => slots.flatMap((slot) => (slot ? [slot.worker] : [])), close };
}
