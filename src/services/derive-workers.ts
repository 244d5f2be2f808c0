/**
 * Address derivation for wallet keys off the main thread (docs/concepts/wallet-keys.md#derivation-speed): a
 * small pool of worker threads (derive-worker.ts) deriving the windows of many keys at once, for a large
 * first window (a gapLimit in the thousands) and bulk loads, so that the API's event loop and matching are
 * not held up by seconds of curve arithmetic.
 *
 * The pool is lib/worker-pool.ts's (as chains/utxo/block-workers.ts's is):
 * - A job (a batch of keys) goes to the worker with the fewest jobs in flight; workers start at the first
 *   job and are unref'd while idle (they never keep the process alive).
 * - A worker that dies fails its jobs (the caller's create fails and can be retried) and is replaced at the
 *   next job.
 * - Each window comes back as its addresses in one newline-joined string plus the window's path prefix;
 *   rows are rebuilt here.
 */
import { availableParallelism } from 'node:os';
import type { Blockchain, Network } from '../domain/chains.ts';
import type { DerivedAddressRow, SubscribedWalletKey } from '../domain/subscriptions.ts';
import { deriveWindow, parseSubscribedKey, windowEnd } from '../domain/wallet-windows.ts';
import { createWorkerPool } from '../lib/worker-pool.ts';

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

/** The default pool size: two workers (one on a one-core machine): derivation shares the machine with PostgreSQL and the rest of herald. */
export const DEFAULT_DERIVE_WORKERS = Math.max(1, Math.min(2, availableParallelism()));

export function createDerivePool(size = DEFAULT_DERIVE_WORKERS): DerivePool {
  const pool = createWorkerPool<DeriveAnswer>({
    entry: new URL('./derive-worker', import.meta.url),
    size,
    what: 'a derivation pool',
    closedError: () => new Error('the derivation workers are closed'),
  });

  async function derive(requests: DeriveRequest[]): Promise<DerivedWindow[][]> {
    const results = await deriveJoined(requests);
    return results.map((windows) =>
      windows.map((w) => ({ change: w.change, from: w.from, prefix: w.prefix, addresses: w.addresses === '' ? [] : w.addresses.split('\n') })),
    );
  }

  function deriveJoined(requests: DeriveRequest[]): Promise<JoinedWindow[][]> {
    if (pool.closed()) return Promise.reject(new Error('the derivation workers are closed'));
    if (requests.length === 0) return Promise.resolve([]);
    return pool.run({
      message: (id) => ({ id, requests }) satisfies DeriveJob,
      settle: (answer) => {
        if (answer.error !== undefined) throw new Error(`deriving addresses failed: ${answer.error}`);
        const refused = answer.results.find((r) => 'error' in r);
        if (refused && 'error' in refused) throw new Error(`deriving addresses failed: ${refused.error}`);
        return answer.results.map((r) => ('windows' in r ? r.windows : []));
      },
      stopped: (why) => new Error(`the derivation worker stopped (${why})`),
    });
  }

  return { derive, deriveJoined, size, close: pool.close };
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
