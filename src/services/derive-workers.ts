/**
 * Address derivation for wallet keys off the main thread (docs/concepts/wallet-keys.md#derivation-speed): a
 * small pool of worker threads (derive-worker.ts) deriving the windows of many keys at once, for a large
 * first window (a gapLimit in the thousands) and bulk loads, so that the API's event loop and matching are
 * not held up by seconds of curve arithmetic.
 *
 * - A job (a batch of keys) goes to the worker with the fewest jobs in flight; workers start at the first
 *   job and are unref'd while idle (they never keep the process alive).
 * - A worker that dies fails its jobs (the caller's create fails and can be retried) and is replaced at the
 *   next job.
 * - Each window comes back as its addresses in one newline-joined string plus the window's path prefix;
 *   rows are rebuilt here.
 *
 * Running from the TypeScript sources (tsx, vitest), a worker registers tsx before loading its .ts entry;
 * from the build (dist/), it loads the compiled .js (as chains/utxo/block-workers.ts does).
 */
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Blockchain, Network } from '../domain/chains.ts';
import type { DerivedAddressRow, SubscribedWalletKey } from '../domain/subscriptions.ts';
import { deriveWindow, parseSubscribedKey, windowEnd } from '../domain/wallet-windows.ts';

/** The windows to derive of one key: indexes from..to (inclusive) of the receive (false) or change (true) chain. */
export interface DeriveRequest {
  blockchain: Blockchain;
  network: Network;
  key: SubscribedWalletKey;
  windows: { change: boolean; from: number; to: number }[];
}

/** @internal The message to a worker. */
export interface DeriveJob {
  id: number;
  requests: DeriveRequest[];
}

/** @internal A worker's answer: per request, its windows (addresses newline-joined) or why the key was refused. */
export interface DeriveAnswer {
  id: number;
  error?: string;
  results: ({ windows: JoinedWindow[] } | { error: string })[];
}

/** One window as a worker sends it: its addresses in one newline-joined string (a bulk insert passes it on as it is: store/xpub-addresses.ts insertDerivedWindows). */
export interface JoinedWindow {
  change: boolean;
  from: number;
  /** The path up to the index: `${prefix}/${index}` is an address's derivationPath. */
  prefix: string;
  /** Addresses of indexes from, from + 1, ..., joined by newlines ('' for none). */
  addresses: string;
  count: number;
}

export type DerivedWindowRow = Pick<DerivedAddressRow, 'address' | 'derivationPath' | 'change' | 'index'>;

/** One window as derived: the addresses of indexes from, from + 1, ... and their derivation path prefix. */
export interface DerivedWindow {
  change: boolean;
  from: number;
  /** The path up to the index: `${prefix}/${index}` is an address's derivationPath. */
  prefix: string;
  addresses: string[];
}

export interface DerivePool {
  /** The windows of each request, in order (a window of a branch the key does not have is empty); rejects on a refused key. */
  derive(requests: DeriveRequest[]): Promise<DerivedWindow[][]>;
  /** derive() with each window's addresses as the worker joined them (for a bulk insert: no array per window built here). */
  deriveJoined(requests: DeriveRequest[]): Promise<JoinedWindow[][]>;
  /** Worker threads in the pool (started or not). */
  readonly size: number;
  close(): Promise<void>;
}

/** A window's rows, as the store and the matching index take them. */
export function windowRows(window: DerivedWindow): DerivedWindowRow[] {
  return window.addresses.map((address, i) => ({
    address,
    derivationPath: `${window.prefix}/${window.from + i}`,
    change: window.change,
    index: window.from + i,
  }));
}

function workerEntry(): { code: string; eval: true } | { url: URL; eval: false } {
  const fromSource = import.meta.url.endsWith('.ts');
  const url = new URL(`./derive-worker.${fromSource ? 'ts' : 'js'}`, import.meta.url);
  if (!fromSource) return { url, eval: false };
  const tsx = pathToFileURL(
    createRequire(import.meta.url)
      .resolve('tsx/esm/api')
      .replace(/\.cjs$/, '.mjs'),
  ).href;
  return { code: `import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(url.href)}); })`, eval: true };
}

interface Slot {
  worker: Worker;
  inFlight: Map<number, { resolve: (windows: JoinedWindow[][]) => void; reject: (error: Error) => void }>;
}

/** The default pool size: two workers (one on a one-core machine): derivation shares the machine with PostgreSQL and the rest of herald. */
export const DEFAULT_DERIVE_WORKERS = Math.max(1, Math.min(2, availableParallelism()));

export function createDerivePool(size = DEFAULT_DERIVE_WORKERS): DerivePool {
  if (!Number.isInteger(size) || size < 1) throw new RangeError(`a derivation pool needs at least one worker, not ${size}`);
  const slots: (Slot | undefined)[] = Array.from({ length: size }, () => undefined);
  let nextId = 0;
  let closed = false;

  function start(index: number): Slot {
    const entry = workerEntry();
    const worker = entry.eval ? new Worker(entry.code, { eval: true }) : new Worker(entry.url);
    worker.unref();
    const slot: Slot = { worker, inFlight: new Map() };
    worker.on('message', (answer: DeriveAnswer) => {
      const job = slot.inFlight.get(answer.id);
      if (!job) return;
      slot.inFlight.delete(answer.id);
      if (slot.inFlight.size === 0) worker.unref();
      if (answer.error !== undefined) return job.reject(new Error(`deriving addresses failed: ${answer.error}`));
      const refused = answer.results.find((r) => 'error' in r);
      if (refused && 'error' in refused) return job.reject(new Error(`deriving addresses failed: ${refused.error}`));
      job.resolve(answer.results.map((r) => ('windows' in r ? r.windows : [])));
    });
    let failure: Error | undefined;
    worker.on('error', (error) => {
      failure = error;
    });
    worker.on('exit', (code) => {
      if (slots[index] === slot) slots[index] = undefined;
      const why = failure ? `${failure.name}: ${failure.message}` : `exit code ${code}`;
      for (const job of slot.inFlight.values()) job.reject(new Error(`the derivation worker stopped (${why})`));
      slot.inFlight.clear();
    });
    slots[index] = slot;
    return slot;
  }

  function pick(): Slot {
    let best: Slot | undefined;
    for (let i = 0; i < slots.length; i++) {
      const slot = slots[i] ?? start(i);
      if (!best || slot.inFlight.size < best.inFlight.size) best = slot;
    }
    return best as Slot;
  }

  async function derive(requests: DeriveRequest[]): Promise<DerivedWindow[][]> {
    const results = await deriveJoined(requests);
    return results.map((windows) =>
      windows.map((w) => ({ change: w.change, from: w.from, prefix: w.prefix, addresses: w.addresses === '' ? [] : w.addresses.split('\n') })),
    );
  }

  function deriveJoined(requests: DeriveRequest[]): Promise<JoinedWindow[][]> {
    if (closed) return Promise.reject(new Error('the derivation workers are closed'));
    if (requests.length === 0) return Promise.resolve([]);
    const slot = pick();
    const id = ++nextId;
    return new Promise((resolve, reject) => {
      if (slot.inFlight.size === 0) slot.worker.ref();
      slot.inFlight.set(id, { resolve, reject });
      slot.worker.postMessage({ id, requests } satisfies DeriveJob);
    });
  }

  async function close(): Promise<void> {
    closed = true;
    await Promise.all(slots.map((slot) => slot?.worker.terminate()));
  }

  return { derive, deriveJoined, size, close };
}

let shared: DerivePool | undefined;

/** The process's pool (started at its first job; idle workers do not keep the process alive). */
export function sharedDerivePool(): DerivePool {
  shared ??= createDerivePool();
  return shared;
}

/** Windows up to this many addresses in all are derived on the calling thread (a few milliseconds); larger ones in the pool. */
export const IN_THREAD_ADDRESSES = 200;

/**
 * The first window of a new wallet-key subscription: indexes 0 .. gapLimit - 1 of the receive and the
 * change chain (a key without a change chain has the receive one only). Small windows are derived here,
 * large ones in the shared pool.
 */
export async function deriveFirstWindow(
  blockchain: Blockchain,
  network: Network,
  key: SubscribedWalletKey,
  pool: () => DerivePool = sharedDerivePool,
): Promise<DerivedWindowRow[]> {
  const last = windowEnd(-1, key.gapLimit);
  if (2 * key.gapLimit <= IN_THREAD_ADDRESSES) {
    const parsed = parseSubscribedKey(blockchain, network, key);
    if (!parsed.ok) throw new Error(parsed.message);
    return [...deriveWindow(parsed.key, false, 0, last, key.regtest), ...deriveWindow(parsed.key, true, 0, last, key.regtest)];
  }
  const [windows = []] = await pool().derive([
    {
      blockchain,
      network,
      key,
      windows: [
        { change: false, from: 0, to: last },
        { change: true, from: 0, to: last },
      ],
    },
  ]);
  return windows.flatMap(windowRows);
}
