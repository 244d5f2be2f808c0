/**
 * A small pool of worker threads serving jobs by message: what the block workers (chains/utxo/block-workers.ts)
 * and the derivation workers (services/derive-workers.ts) share.
 *
 * - A job goes to the worker with the fewest jobs in flight; a worker serves several at once.
 * - Workers start at the first job, not before, and are unref'd while idle (they never keep the process
 *   alive); a worker with a job in flight does.
 * - A worker that dies fails its jobs in flight and is replaced at the next job.
 * - Each job's message carries an id; the worker's answer carries it back.
 *
 * Running from the TypeScript sources (tsx, vitest), a worker registers tsx before loading its .ts entry;
 * from the build (dist/), it loads the compiled .js.
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';

export interface PoolJob<Answer, T> {
  /** The message to the worker, given the job's id (which its answer carries back). */
  message(id: number): unknown;
  /** The job's outcome from its worker's answer; what it throws rejects the job. */
  settle(answer: Answer): T;
  /** The error of a job whose worker stopped before answering (`why`: the worker's error or its exit code). */
  stopped(why: string): Error;
}

export interface WorkerPoolOptions<Answer> {
  /** The worker module beside the caller, without its extension: new URL('./block-worker', import.meta.url). */
  entry: URL;
  /** Worker threads in the pool. */
  size: number;
  /** What the pool is, for the error on a bad size ('a block worker pool'). */
  what: string;
  /** Options of each Worker (workerData, resourceLimits). */
  workerOptions?: Omit<WorkerOptions, 'eval'>;
  /** Sees every message first: true for one that answers no job (a log line), which goes no further. */
  intercept?: (message: Answer) => boolean;
  /** A worker stopped with jobs in flight (before they are failed with their `stopped` error). */
  onStop?: (why: string, failure: Error | undefined, code: number) => void;
  /** The error of a job asked after close(). */
  closedError: () => Error;
}

export interface WorkerPool<Answer> {
  run<T>(job: PoolJob<Answer, T>): Promise<T>;
  /** The live worker threads. */
  threads(): Worker[];
  /** Worker threads in the pool (started or not). */
  readonly size: number;
  /** True once close() is called. */
  closed(): boolean;
  /** Stops the workers; jobs in flight fail. */
  close(): Promise<void>;
}

/** The worker entry (`entry` with this build's extension), and the code that starts it (registering tsx first for a .ts entry). */
function workerEntry(entry: URL): { code: string; eval: true } | { url: URL; eval: false } {
  const fromSource = import.meta.url.endsWith('.ts');
  const url = new URL(`${entry.href}.${fromSource ? 'ts' : 'js'}`);
  if (!fromSource) return { url, eval: false };
  // tsx's ESM API (require.resolve finds its CommonJS twin beside it, which cannot register in a worker).
  const tsx = pathToFileURL(
    createRequire(import.meta.url)
      .resolve('tsx/esm/api')
      .replace(/\.cjs$/, '.mjs'),
  ).href;
  return { code: `import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(url.href)}); })`, eval: true };
}

interface InFlight<Answer> {
  settle: (answer: Answer) => void;
  stopped: (why: string) => void;
}

interface Slot<Answer> {
  worker: Worker;
  inFlight: Map<number, InFlight<Answer>>;
}

export function createWorkerPool<Answer>(options: WorkerPoolOptions<Answer>): WorkerPool<Answer> {
  const { size } = options;
  if (!Number.isInteger(size) || size < 1) throw new RangeError(`${options.what} needs at least one worker, not ${size}`);
  const slots: (Slot<Answer> | undefined)[] = Array.from({ length: size }, () => undefined);
  let nextId = 0;
  let closed = false;

  function start(index: number): Slot<Answer> {
    const entry = workerEntry(options.entry);
    const worker = entry.eval ? new Worker(entry.code, { ...options.workerOptions, eval: true }) : new Worker(entry.url, options.workerOptions);
    worker.unref();
    const slot: Slot<Answer> = { worker, inFlight: new Map() };
    worker.on('message', (answer: Answer) => {
      if (options.intercept?.(answer)) return;
      const id = (answer as { id?: unknown }).id;
      const job = typeof id === 'number' ? slot.inFlight.get(id) : undefined;
      if (!job) return;
      slot.inFlight.delete(id as number);
      if (slot.inFlight.size === 0) worker.unref();
      job.settle(answer);
    });
    let failure: Error | undefined;
    worker.on('error', (error) => {
      failure = error;
    });
    worker.on('exit', (code) => {
      if (slots[index] === slot) slots[index] = undefined;
      if (slot.inFlight.size === 0) return;
      const why = failure ? `${failure.name}: ${failure.message}` : `exit code ${code}`;
      options.onStop?.(why, failure, code);
      for (const job of slot.inFlight.values()) job.stopped(why);
      slot.inFlight.clear();
    });
    slots[index] = slot;
    return slot;
  }

  /** The live worker with the fewest jobs in flight (an empty or dead place is filled). */
  function pick(): Slot<Answer> {
    let best: Slot<Answer> | undefined;
    for (let i = 0; i < slots.length; i++) {
      const slot = slots[i] ?? start(i);
      if (!best || slot.inFlight.size < best.inFlight.size) best = slot;
    }
    return best as Slot<Answer>;
  }

  function run<T>(job: PoolJob<Answer, T>): Promise<T> {
    if (closed) return Promise.reject(options.closedError());
    const slot = pick();
    const id = ++nextId;
    return new Promise<T>((resolve, reject) => {
      if (slot.inFlight.size === 0) slot.worker.ref();
      slot.inFlight.set(id, {
        settle: (answer) => {
          try {
            resolve(job.settle(answer));
          } catch (error) {
            reject(error);
          }
        },
        stopped: (why) => reject(job.stopped(why)),
      });
      slot.worker.postMessage(job.message(id));
    });
  }

  async function close(): Promise<void> {
    closed = true;
    await Promise.all(slots.map((slot) => slot?.worker.terminate()));
  }

  return { run, threads: () => slots.flatMap((slot) => (slot ? [slot.worker] : [])), size, closed: () => closed, close };
}
