/**
 * The ingest role: one follower per configured (blockchain, network), each with its matching index
 * kept current from the database's subscription announcements.
 *
 * Index freshness: `reload()` (called whenever the change listener (re)connects, so also at start)
 * rebuilds every index from the database and swaps it in; announcements that arrive while it loads
 * are replayed on the new index. Each announcement re-reads its subscription row, so replaying one
 * twice is harmless. Followers start after the first load: no block is matched against an empty index.
 * A load that fails (the database unreachable for a moment) is tried again with backoff, announcements
 * still buffered, until it succeeds.
 */
import { setMaxListeners } from 'node:events';
import type { Logger } from 'pino';
import type { ChainAdapter } from '../chains/types.ts';
import { type ChainConfig, type Config, chainNodes, reorgBreakerDepthOf } from '../config/config.ts';
import type { Blockchain, ChainKey, Network } from '../domain/chains.ts';
import { redactUrl } from '../domain/node-urls.ts';
import type { IndexableSubscription } from '../domain/subscriptions.ts';
import { Backoff, sleep } from '../lib/loop.ts';
import { SubscriptionIndex } from '../matching/index.ts';
import { safetyPolicy } from '../matching/safety.ts';
import type { Metrics } from '../metrics.ts';
import { loadIndexableByIds, loadIndexableInRange, loadIndexableSubscriptions } from '../store/chain-state.ts';
import { type Db, retryLogLevel } from '../store/db.ts';
import { readOpenings } from '../wallets/openings.ts';
import { startAlreadyMinedChecks } from './already-mined.ts';
import { type BlockJobRunner, startBlockJobRunner } from './block-jobs.ts';
import {
  type AnnouncedChange,
  chainIdOf,
  changeKey,
  indexUpdateOf,
  mempoolRoundMs,
  openingsWaitMs,
  requeueFailed,
  splitChanges,
  stepEffectsOf,
} from './decisions.ts';
import { DEFAULT_WINDOW, type FollowerDeps, followChain, type StepResult } from './follower.ts';
import { FollowerGate } from './gate.ts';
import { followMempool, type MempoolState, newMempoolState } from './mempool.ts';

/** The longest a follower waits for announced subscriptions to be indexed before matching a block. */
const INDEX_WAIT_MS = 2_000;
/** The longest the start-up look-back of a chain waits for its follower to reach the head (see `lookBackWhenCaughtUp`). */
const LOOK_BACK_MAX_WAIT_MS = 60_000;
/** Reading the subscriptions again after a failure: from 250 ms, doubling, at most 10 s between tries. */
const RETRY_BACKOFF = { firstMs: 250, maxMs: 10_000 };

/**
 * `options.reportNodes: false`: a second adapter of a chain (backfill and replay jobs), whose pool must not
 * report the chain's nodes again; `background: true`: its work comes after the follower's (lower CPU priority
 * for its block worker threads).
 */
export type AdapterFactory = (chain: ChainConfig & ChainKey, options?: { reportNodes?: boolean; background?: boolean }) => ChainAdapter | undefined;

export interface IngestService {
  /** The chains this process follows. */
  readonly chains: ChainKey[];
  /** Rebuilds every index from the database (at start and after the listener reconnects). */
  reload(): Promise<void>;
  onSubscriptionChange(change: AnnouncedChange): void;
  /** Resolves when the pending subscription announcements have been applied (tests, shutdown). */
  settled(): Promise<void>;
  close(): Promise<void>;
}

interface Followed {
  key: ChainKey;
  config: ChainConfig;
  adapter: ChainAdapter;
  index: SubscriptionIndex;
  confirmations: number;
  done?: Promise<unknown>;
  /** The mempool loop (unconfirmed events), when the chain's nodes have a reader and the config allows it. */
  mempool?: { state: MempoolState; done: Promise<unknown> };
  /** Backfill and replay jobs of the chain, with an adapter of their own. */
  jobs?: BlockJobRunner;
  /** The follower's steps, which the jobs give way to. */
  gate: FollowerGate;
  /** Settled once the follower has first reached the head (or found its chain stopped). */
  head: { reached: Promise<void>; reach: () => void };
  /** A start-up look-back is waiting and has not read its subscriptions yet (another request would find the same). */
  lookBackPending?: boolean;
}

const headSignal = (): Followed['head'] => {
  let reach = () => {};
  const reached = new Promise<void>((resolve) => {
    reach = resolve;
  });
  return { reached, reach };
};

export function startIngest(deps: {
  db: Db;
  /**
   * Where the bulk-created ranges are read (the low-priority pool, niced like the bulk chunks that wrote
   * them: docs/guides/bulk-import.md); `db` when not given.
   */
  rangeDb?: Db;
  config: Config;
  logger: Logger;
  createAdapter: AdapterFactory;
  metrics?: Metrics;
}): IngestService {
  const { db, config, logger } = deps;
  const abort = new AbortController();
  const closed = new Promise<void>((resolve) => abort.signal.addEventListener('abort', () => resolve(), { once: true }));
  const followed = new Map<string, Followed>();
  for (const chain of config.chains) {
    const key = { blockchain: chain.blockchain as Blockchain, network: chain.network as Network };
    const adapter = deps.createAdapter({ ...chain, ...key });
    if (!adapter) {
      logger.error({ ...key }, `${key.blockchain} ${key.network} is configured but this version cannot follow ${key.blockchain} yet; skipping it`);
      continue;
    }
    followed.set(chainIdOf(key), {
      key,
      config: chain,
      adapter,
      index: new SubscriptionIndex(key.blockchain, key.network),
      confirmations: chain.confirmations ?? config.defaultConfirmations,
      gate: new FollowerGate(),
      head: headSignal(),
    });
  }

  // Every chain's loops wait on this one signal (the follower's poll, the mempool's, the openings' pause):
  // a few listeners per chain by design, which Node's leak warning at 10 would report for 3 or more chains.
  setMaxListeners(10 + 4 * followed.size, abort.signal);

  let loading: Promise<void> | undefined;
  let replay: AnnouncedChange[] | undefined;
  /**
   * Announced changes not yet applied, by subscription id (the row is read afresh, so the last one is
   * enough), and bulk-created ranges, by their range.
   */
  const pendingChanges = new Map<string, AnnouncedChange>();
  /** Already-mined lookups, run a few at a time beside the index updates (which never wait for RPC). */
  const minedChecks = startAlreadyMinedChecks({ db, logger });
  /** Start-up look-backs waiting for their follower or running (`lookBackWhenCaughtUp`). */
  const lookBacks = new Set<Promise<void>>();
  const work = new Set<Promise<unknown>>();
  const track = <T>(p: Promise<T>) => {
    work.add(p);
    void p.finally(() => work.delete(p)).catch(() => undefined);
    return p;
  };
  let draining = false;

  const startJobs = (f: Followed) => {
    if (f.jobs) return;
    // Its own adapter (made at its first job): its own connections and concurrency, never a queue the follower waits in.
    f.jobs = startBlockJobRunner({
      db,
      chain: f.key,
      createAdapter: () => deps.createAdapter({ ...f.config, ...f.key, wsUrl: undefined, wsUrls: [] }, { reportNodes: false, background: true }),
      logger,
      defaultConfirmations: f.confirmations,
      safety: safetyPolicy(f.key, f.config),
      costs: { backfillPerCallback: BigInt(config.costs.backfillPerCallback), replayPerCallback: BigInt(config.costs.replayPerCallback) },
      concurrency: config.blockJobs.concurrency,
      batchBlocks: config.blockJobs.batchBlocks,
      turnMs: config.blockJobs.turnMs,
      gate: f.gate,
    });
  };

  const startFollowing = (f: Followed) => {
    startJobs(f);
    if (f.done) return;
    const followerDeps: FollowerDeps = {
      db,
      adapter: f.adapter,
      index: () => f.index,
      indexCurrent,
      logger, // the follower names its chain in each line
      defaultConfirmations: f.confirmations,
      window: DEFAULT_WINDOW,
      reorgBreakerDepth: reorgBreakerDepthOf(f.config),
      startHeight: f.config.startHeight,
      tokenMetadata: f.adapter.tokenMetadata?.bind(f.adapter),
      safety: safetyPolicy(f.key, f.config),
    };
    const nodes = chainNodes(f.config);
    logger.info({ ...f.key, rpc: nodes.map((n) => redactUrl(n.rpcUrl)), ws: nodes.flatMap((n) => (n.wsUrl ? [redactUrl(n.wsUrl)] : [])) }, 'following chain');
    const labels = { blockchain: f.key.blockchain, network: f.key.network };
    const onStep = (result: StepResult) => {
      const effects = stepEffectsOf(result);
      if (result.kind === 'applied') {
        deps.metrics?.chainBlocks.inc(labels);
        // One line per block at debug: which process applied which block (several ingest processes may follow one chain).
        logger.debug({ ...labels, height: result.height, hash: result.hash, callbacks: result.enqueued }, 'block applied');
      }
      if (effects.reorganised) deps.metrics?.chainReorganisations.inc(labels);
      if (effects.openings) wakeOpenings(f, effects.openings.caughtUp);
      if (effects.headReached) f.head.reach();
    };
    f.done = followChain(followerDeps, f.key, { signal: abort.signal, pollMs: f.config.pollIntervalMs, onStep, gate: f.gate }).catch((error) =>
      logger.error({ err: error, ...f.key }, 'chain follower ended with an error'),
    );
    startMempool(f);
  };

  /** Beside the follower, never inside it: its own loop, timer and transactions (ingest/mempool.ts). */
  const startMempool = (f: Followed) => {
    const reader = f.adapter.mempool;
    if (!reader || f.config.mempool === false || f.mempool) return;
    const labels = { blockchain: f.key.blockchain, network: f.key.network };
    const state = newMempoolState();
    logger.info({ ...labels, method: reader.method }, 'reading the mempool');
    // The follower's gate: a mempool burst gives way to blocks (as backfill does).
    const mempoolDeps = {
      db,
      reader,
      chain: f.key,
      index: () => f.index,
      logger,
      tokenMetadata: f.adapter.tokenMetadata?.bind(f.adapter),
      safety: safetyPolicy(f.key, f.config),
      gate: f.gate,
      catchUpYieldMs: f.config.mempoolCatchUpYieldMs,
      evictionSpanMs: f.config.mempoolEvictionSpanMs,
    };
    const done = followMempool(mempoolDeps, state, {
      signal: abort.signal,
      pollMs: mempoolRoundMs(f.config.mempoolPollIntervalMs, Boolean(reader.watch)),
      onRound: (round) => {
        if (round.read > 0) deps.metrics?.mempoolTransactionsSeen.inc(labels, round.read);
        if (round.fired > 0) deps.metrics?.mempoolCallbacksFired.inc(labels, round.fired);
      },
    }).catch((error) => logger.error({ err: error, ...f.key }, 'mempool loop ended with an error'));
    f.mempool = { state, done };
  };

  /**
   * Opening balances are read beside the follower, never inside its block transactions (a UTXO scan
   * takes minutes on mainnet): one run per chain at a time, again after it if blocks came meanwhile.
   * While blocks keep coming (catching up), at most one run a second: its look-up would otherwise be one
   * more statement per block, and blocks applied during the wait are covered by the run after it. Once
   * the follower is caught up, at once (a wait under way is cut short): an opening is not left pending
   * for a second at the head of the chain.
   */
  type OpeningRun = { again: boolean; caughtUp: boolean; cutWait?: () => void };
  const openingRuns = new Map<Followed, OpeningRun>();
  const lastOpeningRun = new Map<Followed, number>();
  const wakeOpenings = (f: Followed, caughtUp: boolean) => {
    const running = openingRuns.get(f);
    if (running) {
      running.again = true;
      if (caughtUp) {
        running.caughtUp = true;
        running.cutWait?.();
      }
      return;
    }
    const run: OpeningRun = { again: false, caughtUp };
    openingRuns.set(f, run);
    void track(
      (async () => {
        for (;;) {
          if (!run.caughtUp) {
            const cut = new Promise<void>((resolve) => {
              run.cutWait = resolve;
            });
            await Promise.race([sleep(openingsWaitMs(lastOpeningRun.get(f), Date.now(), false), abort.signal), cut]);
            run.cutWait = undefined;
          }
          if (abort.signal.aborted) return;
          run.again = false;
          run.caughtUp = false;
          lastOpeningRun.set(f, Date.now());
          try {
            await readOpenings({ db, chain: f.key, node: f.adapter, confirmations: f.confirmations, logger });
          } catch (error) {
            if (abort.signal.aborted) return;
            logger.warn({ err: error, ...f.key }, 'could not read opening balances yet; trying again after the next block');
          }
          if (!run.again || abort.signal.aborted) break;
        }
      })().finally(() => openingRuns.delete(f)),
    );
  };

  /** One attempt: every index rebuilt and swapped in, the changes announced meanwhile replayed, followers started. */
  const loadIndexes = async () => {
    replay ??= []; // after a failed attempt, the changes it buffered are kept for this one
    for (const f of followed.values()) {
      const rows = await loadIndexableSubscriptions(db, f.key);
      const index = new SubscriptionIndex(f.key.blockchain, f.key.network, { expectedSize: rows.length });
      for (const row of rows) index.add(row);
      index.settle();
      f.index = index;
      logger.info({ ...f.key, subscriptions: index.size }, 'matching index loaded');
    }
    const missed = replay;
    replay = undefined;
    for (const change of missed) enqueueChange(change);
    for (const f of followed.values()) startFollowing(f);
    for (const f of followed.values()) lookBackWhenCaughtUp(f);
  };

  /**
   * Resolves once `f`'s follower has reached the head, LOOK_BACK_MAX_WAIT_MS have passed or the service
   * closes. One listener on the abort signal for them all (`closed`): a waiting timer each would be one
   * listener per chain for up to a minute.
   */
  const untilHeadOrBound = (f: Followed) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, LOOK_BACK_MAX_WAIT_MS);
      timer.unref();
      void Promise.race([f.head.reached, closed]).then(() => {
        clearTimeout(timer);
        resolve();
      });
    });

  /**
   * Subscriptions created while no ingest process listened (or before a crash between create and check)
   * have had no already-mined check: every one still without a callback gets one, once the follower has
   * reached the head, or after LOOK_BACK_MAX_WAIT_MS at most. Those checks are tens of thousands at an
   * exchange (one node lookup each, in batches): run beside a catch-up, they took about a fifth of its
   * speed (docs/benchmarks.md, utxo-block), and a catch-up delays every customer's callbacks. After it, they are
   * also fewer: a transaction mined in a block the catch-up applied has its callback from the follower
   * and is not looked up at all. Only the callbacks of transactions mined before the cursor (and heights
   * below it) wait, and never longer than the bound. Nothing is lost meanwhile: the follower matches the
   * blocks it applies with the index already loaded.
   */
  const lookBackWhenCaughtUp = (f: Followed) => {
    // A look-back that has not read its rows yet will see every subscription this request would.
    if (f.lookBackPending) return;
    f.lookBackPending = true;
    const run = (async () => {
      await untilHeadOrBound(f);
      const backoff = new Backoff(RETRY_BACKOFF);
      while (!abort.signal.aborted) {
        f.lookBackPending = false;
        try {
          const queued = await minedChecks.checkAllUncalled(f);
          if (queued > 0)
            logger.info(
              { ...f.key, subscriptions: queued },
              'checking transaction-mined and block-height-reached subscriptions without a callback for transactions already mined and heights already reached',
            );
          return;
        } catch (error) {
          if (abort.signal.aborted) return;
          f.lookBackPending = true;
          const delay = backoff.next();
          logger[retryLogLevel(error)]({ err: error, ...f.key, retryInMs: delay }, 'could not read the subscriptions to look back for yet; retrying');
          await sleep(delay, abort.signal);
        }
      }
    })();
    lookBacks.add(run);
    void run.finally(() => lookBacks.delete(run));
  };

  /**
   * Tried again with backoff until it succeeds (or the service closes). The listener that asks for it
   * may be connected before the pool can reach the database (PostgreSQL restarting, a pooler waiting
   * to log in again); giving up would leave every later change buffered and, at start, no follower.
   */
  const reload = async () => {
    const backoff = new Backoff(RETRY_BACKOFF);
    while (!abort.signal.aborted) {
      try {
        await loadIndexes();
        return;
      } catch (error) {
        if (abort.signal.aborted) return;
        const delay = backoff.next();
        logger.warn({ err: error, retryInMs: delay }, `matching indexes not loaded yet; retrying: ${(error as Error).message}`);
        await sleep(delay, abort.signal);
      }
    }
  };

  /**
   * Bulk-created ranges received and applied, counted: a follower about to match a block waits until
   * those received before it are applied (a bulk create's last chunk, answered just before the block
   * that pays one of its addresses, is matched by that block). Only ranges: single creates arrive all
   * the time and are applied within milliseconds (waiting for them would slow every block), and the
   * ones that race a block have the already-mined check. Bounded: a database that cannot be read for
   * the index must not stop the follower for long.
   */
  let received = 0;
  let applied = 0;
  const appliedWaiters: { upTo: number; done: () => void }[] = [];
  const noteApplied = (upTo: number) => {
    applied = Math.max(applied, upTo);
    for (let i = appliedWaiters.length - 1; i >= 0; i--) {
      const w = appliedWaiters[i] as { upTo: number; done: () => void };
      if (w.upTo <= applied) {
        appliedWaiters.splice(i, 1);
        w.done();
      }
    }
  };
  const indexCurrent = async () => {
    const upTo = received;
    if (applied >= upTo || replay) return;
    await new Promise<void>((done) => {
      const timer = setTimeout(finish, INDEX_WAIT_MS);
      const waiter = { upTo, done: finish };
      appliedWaiters.push(waiter);
      function finish() {
        clearTimeout(timer);
        const i = appliedWaiters.indexOf(waiter);
        if (i >= 0) appliedWaiters.splice(i, 1);
        done();
      }
    });
  };

  const enqueueChange = (change: AnnouncedChange) => {
    const f = followed.get(chainIdOf(change));
    if (!f) return;
    // A new subscription may come with a backfill, and a replay is announced as a change: look for jobs.
    f.jobs?.wake();
    if (replay) {
      replay.push(change);
      return;
    }
    if (change.op === 'INSERT_RANGE') received++;
    pendingChanges.set(changeKey(change), change);
    if (!draining) {
      draining = true;
      void track(drainChanges().finally(() => (draining = false)));
    }
  };

  /** Applies one row read afresh: indexed when active, removed otherwise. */
  const apply = (f: Followed, id: string, row: IndexableSubscription | undefined) => {
    const update = indexUpdateOf(row);
    if (update.kind === 'remove' || !row) {
      f.index.remove(id);
      return;
    }
    f.index.add(row);
    // Queued only now that the index holds it: see already-mined.ts for why that order matters.
    if (update.check?.kind === 'transaction') minedChecks.check(f, row.id, update.check.transactionId);
    else if (update.check?.kind === 'height') minedChecks.checkHeight(f, row.id, update.check.height);
  };

  /**
   * Applies announced changes in batches: one query reads every changed row of the batch, and one
   * query each bulk-created range (thousands of rows in one announcement).
   */
  const drainChanges = async () => {
    while (pendingChanges.size > 0 && !abort.signal.aborted) {
      const batch = [...pendingChanges.values()];
      const upTo = received;
      pendingChanges.clear();
      try {
        const { single, ranges } = splitChanges(batch);
        const rows = new Map(
          (
            await loadIndexableByIds(
              db,
              single.map((c) => c.id),
            )
          ).map((r) => [r.id, r]),
        );
        // A bulk import's ranges are read at the bulk's low priority (a thousand rows each, one per chunk):
        // other customers' statements get the database's CPU first.
        const rangeRows = await Promise.all(ranges.map((range) => loadIndexableInRange(deps.rangeDb ?? db, range)));
        for (const change of single) apply(followed.get(chainIdOf(change)) as Followed, change.id, rows.get(change.id));
        ranges.forEach((range, i) => {
          const f = followed.get(chainIdOf(range)) as Followed;
          for (const row of rangeRows[i] ?? []) apply(f, row.id, row);
        });
        noteApplied(upTo);
      } catch (error) {
        logger[retryLogLevel(error)]({ err: error, changes: batch.length }, 'subscription changes not applied yet; retrying');
        requeueFailed(pendingChanges, batch);
        await sleep(500);
      }
    }
  };

  return {
    chains: [...followed.values()].map((f) => f.key),
    reload() {
      loading = (loading ?? Promise.resolve()).then(reload, reload);
      return loading;
    },
    onSubscriptionChange: enqueueChange,
    async settled() {
      await loading;
      while (work.size > 0) await Promise.allSettled([...work]);
      await minedChecks.settled();
    },
    async close() {
      abort.abort();
      await Promise.all(lookBacks);
      await minedChecks.close();
      await Promise.all([...followed.values()].map((f) => f.jobs?.stop()));
      await Promise.all([...followed.values()].flatMap((f) => [f.done, f.mempool?.done]));
      while (work.size > 0) await Promise.allSettled([...work]);
      await Promise.all([...followed.values()].map((f) => f.adapter.close?.()));
    },
  };
}
