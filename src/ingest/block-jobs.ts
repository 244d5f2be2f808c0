/**
 * The runner of backfill and replay jobs of one chain (ingest role, beside the follower): fetches the
 * job's blocks with an adapter of its own (its own connections and concurrency, so the live follower
 * never waits behind it), evaluates them for the job's subscription alone (evaluate.ts: the follower's
 * own matching), and hands them to store/block-jobs.ts in batches, each one transaction.
 *
 * Jobs take turns, round-robin between customers: each pass gives every customer with a running job one
 * turn (turnMs) on its next job (store/block-jobs.ts nextJobPerCustomer), the customer served least
 * recently first. So one customer's long queue (40 replays of thousands of blocks) delays another's
 * 5-block replay by a turn, not by the whole queue; a customer's own jobs run one after another.
 *
 * Jobs are rows: a restart resumes each from its processed_height. Several ingest processes may run the
 * same job: a batch whose job moved meanwhile is dropped (and the outbox's key uniqueness would make it
 * queue nothing twice anyway), like two followers of one chain.
 */
import type { Logger } from 'pino';
import type { ChainAdapter, NormalizedBlock } from '../chains/types.ts';
import type { BlockJob } from '../domain/block-jobs.ts';
import type { ChainKey } from '../domain/chains.ts';
import type { PendingEvent } from '../domain/events.ts';
import { startPollLoop } from '../lib/loop.ts';
import { COIN_EVENTS, pastBlockEvaluator } from '../matching/evaluate.ts';
import type { SafetyPolicy } from '../matching/safety.ts';
import { advanceQuietBatch, nextJobPerCustomer, writeJobBatch } from '../store/block-jobs.ts';
import { getCursor, loadCallbackTargets, loadIndexableByIds } from '../store/chain-state.ts';
import { type Db, retryLogLevel } from '../store/db.ts';
import * as ledger from '../wallets/ledger.ts';
import { DEFAULT_WINDOW } from './follower.ts';
import type { FollowerGate } from './gate.ts';
import { BlockPrefetcher } from './prefetch.ts';

export interface BlockJobRunnerOptions {
  db: Db;
  chain: ChainKey;
  /** Makes the runner's own adapter (not the follower's), at its first job: a chain without jobs opens nothing. */
  createAdapter: () => ChainAdapter | undefined;
  logger: Pick<Logger, 'info' | 'warn' | 'error'>;
  defaultConfirmations: number;
  /** The chain's safety thresholds and list (src/matching/safety.ts); default: the shipped defaults. */
  safety?: SafetyPolicy;
  costs: { backfillPerCallback: bigint; replayPerCallback: bigint };
  /** Blocks fetched at once; default 8. */
  concurrency?: number;
  /** Blocks per batch transaction at most; default 200. */
  batchBlocks?: number;
  /** How often to look for new jobs; default 1000 ms. */
  pollMs?: number;
  /** How long one customer's job runs before the next customer's gets its turn; default 500 ms. */
  turnMs?: number;
  /** The chain's live follower: each block fetch, look-up, evaluation and write waits until it is between steps and clear of its next block (gate.ts). */
  gate?: FollowerGate;
}

export interface BlockJobRunner {
  /** Look for jobs now. */
  wake(): void;
  stop(): Promise<void>;
}

/** Quiet batches (no callback) write their progress at most this often. */
const QUIET_PERSIST_MS = 1000;
/** Callbacks per batch at most (a batch of busy blocks is written sooner). */
const MAX_BATCH_CALLBACKS = 1000;

export function startBlockJobRunner(options: BlockJobRunnerOptions): BlockJobRunner {
  const { db, chain, logger } = options;
  let made: ChainAdapter | undefined;
  const adapterOf = (): ChainAdapter => {
    made ??= options.createAdapter();
    if (!made) throw new Error(`no adapter for ${chain.blockchain} ${chain.network}`);
    return made;
  };
  const pollMs = options.pollMs ?? 1000;
  const batchBlocks = options.batchBlocks ?? 200;
  const turnMs = options.turnMs ?? 500;
  /** When each customer's last turn ended (performance.now()); a customer not in it has not had one lately and goes first. */
  const servedAt = new Map<string, number>();
  /**
   * The current job's subscription is a coin one: a UTXO block's spends are resolved against the ledger
   * (one query) as the block arrives, so those look-ups run as many at once as the fetches, not one
   * after another in block order.
   */
  let resolveSpends = false;
  // The live block first (gate.ts): nothing of the job starts while the follower applies a block (no request
  // to the node, no query, no evaluation, no write), nor when it would still run when the next live block is
  // expected (gate.clearOfNextBlock, each kind of work by its own recent duration), so a live block that comes
  // on time finds the job idle: none of its fetches at the node or in its block worker, none of its queries in
  // PostgreSQL, nothing of it on the event loop.
  let inFlight = 0;
  /** How long each kind of work took lately (ms, moving averages): how early before a live block to hold it back. */
  const took = { fetch: 5, lookup: 1, evaluate: 1, write: 2 };
  const leadOf = (what: keyof typeof took) => Math.max(2, took[what] * 1.5);
  const timed = async <T>(what: keyof typeof took, work: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    try {
      return await work();
    } finally {
      took[what] += (performance.now() - started - took[what]) / 8;
    }
  };
  /** Resolves when `what` may start (at once without a gate). */
  const clearFor = async (what: keyof typeof took) => {
    await options.gate?.clearOfNextBlock(leadOf(what));
  };
  const fetchBlock = async (height: number) => {
    await options.gate?.roomForFetch(() => inFlight, leadOf('fetch'));
    inFlight++;
    try {
      const block = await timed('fetch', () => adapterOf().getBlock(height));
      if (!resolveSpends) return block;
      await clearFor('lookup'); // it may have arrived during a live block, or just before the next one
      return await timed('lookup', () => ledger.resolveSpends(db, chain, block));
    } finally {
      inFlight--;
    }
  };
  const prefetch = new BlockPrefetcher({ getBlock: fetchBlock }, options.concurrency ?? 8);
  /**
   * Works one job for a turn: until the turn is over, the job ends, pauses (subscription inactive), or the
   * chain is not settled. Returns whether to look again at once.
   */
  const runJob = async (job: BlockJob, stopping: AbortSignal): Promise<boolean> => {
    const turnEnds = performance.now() + turnMs;
    const [subscription] = await loadIndexableByIds(db, [job.subscriptionId]);
    const target = (await loadCallbackTargets(db, [job.subscriptionId])).get(job.subscriptionId);
    if (!subscription || !target) return false; // deleted: its job went with it
    if (!target.isActive) return false;
    const evaluator = pastBlockEvaluator({
      subscription,
      target,
      chain,
      defaultConfirmations: options.defaultConfirmations,
      safety: options.safety,
      tokenMetadata: (transfer) => adapterOf().tokenMetadata?.(transfer) ?? Promise.resolve(undefined),
    });
    resolveSpends = COIN_EVENTS.has(subscription.eventType);
    const costPerCallback = job.kind === 'backfill' ? options.costs.backfillPerCallback : options.costs.replayPerCallback;
    let after = job.processedHeight;
    /** The job's processed_height in the database: quiet batches (no callback) are persisted at most every QUIET_PERSIST_MS. */
    let persisted = job.processedHeight;
    let persistedAt = performance.now();
    prefetch.clear();
    while (!stopping.aborted && after < job.toHeight) {
      await clearFor('lookup');
      const cursor = await getCursor(db, chain);
      const quietBelow = (cursor?.height ?? 0) - DEFAULT_WINDOW;
      const blocks: { height: number; hash: string }[] = [];
      const callbacks: PendingEvent[] = [];
      let through = after;
      while (
        through < job.toHeight &&
        blocks.length < batchBlocks &&
        callbacks.length < MAX_BATCH_CALLBACKS &&
        (blocks.length === 0 || performance.now() < turnEnds)
      ) {
        await options.gate?.idle();
        const block: NormalizedBlock = await prefetch.get(through + 1, job.toHeight);
        await clearFor('evaluate'); // it may have arrived during a live block: evaluated after it
        if (block.height !== through + 1) throw new Error(`adapter returned block ${block.height} for height ${through + 1}`);
        through = block.height;
        blocks.push({ height: block.height, hash: block.hash });
        for (const c of await timed('evaluate', () => evaluator.evaluate(block))) callbacks.push(c);
      }
      const now = new Date();
      if (callbacks.length === 0 && through < job.toHeight && through < quietBelow) {
        // Nothing to queue: only progress. Kept in memory between writes (a restart evaluates those
        // blocks again and finds nothing again), so that a long quiet range is a write a second, not one
        // every batch: each commit is a WAL flush a live block's commit may have to wait behind.
        if (performance.now() - persistedAt >= QUIET_PERSIST_MS) {
          await clearFor('write');
          if (!(await timed('write', () => advanceQuietBatch(db, job, persisted, through, now)))) return true; // raced: read the job again
          persisted = through;
          persistedAt = performance.now();
        }
        after = through;
        if (performance.now() >= turnEnds) break;
        continue;
      }
      // `after`: the job's processed height as the database has it; the quiet blocks since matched nothing.
      await clearFor('write');
      const result = await timed('write', () =>
        writeJobBatch(db, { job, after: persisted, through, blocks, callbacks, costPerCallback, window: DEFAULT_WINDOW, now }),
      );
      if (result.kind !== 'written') {
        // raced: read the job again at once; paused (subscription inactive) or unsettled (a reorganisation): later.
        if (result.kind === 'unsettled') prefetch.clear();
        return result.kind === 'raced';
      }
      after = through;
      persisted = through;
      persistedAt = performance.now();
      if (result.finished) {
        logger.info({ ...chain, jobId: job.id, kind: job.kind, subscriptionId: job.subscriptionId, toHeight: job.toHeight }, `${job.kind} job finished`);
        return true;
      }
      if (performance.now() >= turnEnds) break;
    }
    if (stopping.aborted || after >= job.toHeight) return false;
    // The turn is over: the quiet progress kept in memory is written, as the next turn of this job
    // starts from the database's processed_height.
    if (after > persisted) {
      await clearFor('write');
      await timed('write', () => advanceQuietBatch(db, job, persisted, after, new Date()));
    }
    return true;
  };

  const loop = startPollLoop({
    pass: async (stopping) => {
      let again = false;
      // One turn per customer, the least recently served first.
      const jobs = await nextJobPerCustomer(db, chain);
      const lastTurn = (job: BlockJob) => servedAt.get(job.customerId) ?? 0;
      jobs.sort((a, b) => lastTurn(a) - lastTurn(b));
      for (const key of servedAt.keys()) if (!jobs.some((j) => j.customerId === key)) servedAt.delete(key);
      for (const job of jobs) {
        if (stopping.aborted) break;
        const more = await runJob(job, stopping);
        servedAt.set(job.customerId, performance.now());
        if (more) again = true;
      }
      return again;
    },
    pollMs,
    // pollMs doubled per failure in a row, at most 2^4 times and 10 s.
    backoff: { firstMs: 2 * pollMs, maxMs: 10_000, maxDoublings: 3 },
    onError: (error, failures) => {
      // The batch in progress rolled back whole; the job resumes from its processed_height.
      prefetch.clear();
      logger[retryLogLevel(error)]({ err: error, ...chain, failures }, `backfill or replay batch failed; trying again: ${(error as Error).message}`);
    },
  });
  return {
    wake: loop.wake,
    async stop() {
      await loop.stop();
      await made?.close?.();
    },
  };
}
