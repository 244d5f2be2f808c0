/**
 * The already-mined check of TRANSACTION_MINED subscriptions: a transaction mined before (or while) it
 * was subscribed to gets its callback now (contract: mined at one confirmation), and exactly one of
 * this check and the follower sends it. BLOCK_HEIGHT_REACHED subscriptions get the same check for their
 * height (docs/reference/api.md#settled-when-events-fire): a height the chain has applied (at or below the cursor) is called back
 * at once with the block the chain holds there; a height not applied yet is the follower's.
 *
 * Why no callback can fall between the two:
 * - A block the follower has applied (seen under the chain's lock, which the follower holds while it
 *   applies one) is the check's to call back, with the same idempotency key as the follower's own match
 *   would have, so the outbox keeps one.
 * - A block not applied yet is the follower's, but the follower may be applying it at this very moment
 *   with an index read before the subscription arrived, or be another ingest process whose index has not
 *   heard of it yet (announcements reach processes at different times). So the check is parked, and run
 *   again once the cursor has moved past what it saw, unless the subscription has a callback by then:
 *   whichever way the race went, one of the two sends it.
 * - Start and every reconnection of the change listener check every active TRANSACTION_MINED and
 *   BLOCK_HEIGHT_REACHED subscription that has no callback (`checkAllUncalled`): one created while no ingest process
 *   listened, or before a crash between its create and its check, is not forgotten. The ingest service asks
 *   for it once the chain's follower has reached the head (a minute at most: ingest/service.ts), so that a
 *   catch-up does not share the node with these lookups.
 * - Those start-up checks are many (every uncalled subscription, tens of thousands at an exchange), so the
 *   node is asked about the transactions of up to BATCH checks in one request where the adapter batches
 *   (findTransactions). Only the asking is shared: each check then goes on alone exactly as above (first
 *   look, lock, park or enqueue), and a failed batch retries every check in it. Nothing is recorded about a
 *   check that ended (a later start asks again): cheap enough in batches, and no new state to keep right
 *   across reorganisations, deactivations and nodes that lag.
 */
import type { Logger } from 'pino';
import type { ChainAdapter } from '../chains/types.ts';
import type { ChainKey } from '../domain/chains.ts';
import { Fifo } from '../lib/fifo.ts';
import { backoffMs } from '../lib/loop.ts';
import { buildBlockEvents } from '../matching/events.ts';
import { SubscriptionIndex } from '../matching/index.ts';
import { enqueueCallbacks } from '../store/callbacks.ts';
import {
  type ChainCursor,
  getCursor,
  loadCallbackTargets,
  loadIndexableByIds,
  loadUncalledMinedSubscriptions,
  lockChain,
  recordBlockCallbacks,
  subscriptionsWithCallbacks,
  windowBlockAt,
} from '../store/chain-state.ts';
import type { Db, Queryable } from '../store/db.ts';

/** Checks (or batches of checks, below) in flight at once, per process. */
const CONCURRENCY = 16;
/**
 * Transaction checks looked up in one node request where the adapter batches (findTransactions), and such
 * batches in flight at once. At start every uncalled TRANSACTION_MINED subscription is checked (tens of
 * thousands at an exchange): one request each took the node, the event loop and its socket writes from the
 * catch-up running beside them (bench/evm-ingest.ts, bench/utxo-block.ts). Batched, the same lookups are a
 * few hundred requests, and at most BATCHES_IN_FLIGHT * BATCH of them wait on the node at once.
 */
const BATCH = 100;
const BATCHES_IN_FLIGHT = 4;
/**
 * How long one read of a chain's cursor serves the first looks of the checks that follow it. A first look is
 * only a hint (a check that finds its block applied reads again under the chain's lock; one that finds it not
 * yet applied parks and is looked at again once the cursor moves), and at start-up thousands of checks come
 * at once, spread over many batches: one cursor read each would be as many statements.
 */
const FIRST_LOOK_MAX_AGE_MS = 250;
/** How often parked checks look at the cursor. */
const PARKED_SWEEP_MS = 500;
/** Longest wait before a failed check is tried again. */
const MAX_RETRY_MS = 60_000;

export interface MinedCheckChain {
  key: ChainKey;
  adapter: ChainAdapter;
  confirmations: number;
}

/** A block a check found: where a transaction was mined, or a subscribed height (hash null: whatever block is there). */
type BlockLocation = { height: number; hash: string | null };

/** What a check looks for: a subscribed transaction, or a subscribed height. */
type CheckTarget = { transactionId: string; height?: undefined } | { height: number; transactionId?: undefined };

interface Check {
  chain: MinedCheckChain;
  subscriptionId: string;
  target: CheckTarget;
  /** Failed attempts before this one. */
  failures?: number;
}

/**
 * A check that left its block to the follower: run again once the cursor has reached `height` and is no
 * longer `seen`. A check that failed (node or database down): run again at `retryAt`.
 */
interface Parked extends Check {
  height: number;
  seen: { height: number; hash: string } | undefined;
  retryAt?: number;
  failures?: number;
}

export interface AlreadyMinedChecks {
  /** Checks one TRANSACTION_MINED subscription (just created or activated, and already in the index). */
  check(chain: MinedCheckChain, subscriptionId: string, transactionId: string): void;
  /** Checks one BLOCK_HEIGHT_REACHED subscription (just created or activated, and already in the index). */
  checkHeight(chain: MinedCheckChain, subscriptionId: string, height: number): void;
  /** Checks every active TRANSACTION_MINED and BLOCK_HEIGHT_REACHED subscription of `chain` without a callback. */
  checkAllUncalled(chain: MinedCheckChain): Promise<number>;
  /** Resolves when nothing is queued or running (parked checks wait for the follower: not counted). */
  settled(): Promise<void>;
  close(): Promise<void>;
}

export function startAlreadyMinedChecks(deps: { db: Db; logger: Pick<Logger, 'info' | 'warn' | 'error'> }): AlreadyMinedChecks {
  const { db, logger } = deps;
  const abort = new AbortController();
  const queue = new Fifo<Check>();
  /** Subscriptions queued, running or parked: one check at a time per subscription. */
  const known = new Set<string>();
  const parked = new Map<string, Parked>();
  const firstLooks = new Map<string, { at: number; cursor: Promise<ChainCursor | undefined> }>();
  const firstLook = async (key: ChainKey) => {
    const k = `${key.blockchain}/${key.network}`;
    let look = firstLooks.get(k);
    if (!look || Date.now() - look.at > FIRST_LOOK_MAX_AGE_MS) {
      look = { at: Date.now(), cursor: getCursor(db, key) };
      look.cursor.catch(() => firstLooks.get(k) === look && firstLooks.delete(k));
      firstLooks.set(k, look);
    }
    return { cursor: await look.cursor };
  };
  const running = new Set<Promise<unknown>>();
  let sweepTimer: NodeJS.Timeout | undefined;
  /**
   * The locked steps of one chain run one at a time: a check waiting for the chain's lock holds a pooled
   * connection, and a pool full of waiting checks would starve the very block transaction they wait for.
   */
  const lockQueues = new Map<string, Promise<unknown>>();
  const underChainLock = <T>(chain: ChainKey, name: string, fn: (tx: Queryable) => Promise<T>): Promise<T> => {
    const k = `${chain.blockchain}/${chain.network}`;
    const run = (lockQueues.get(k) ?? Promise.resolve()).then(() =>
      db.transaction(name, async (tx) => {
        await lockChain(tx, chain);
        return await fn(tx);
      }),
    );
    const tail = run.catch(() => undefined);
    lockQueues.set(k, tail);
    void tail.then(() => lockQueues.get(k) === tail && lockQueues.delete(k));
    return run;
  };

  /** Queues one check; `startNow` false when the caller queues many and pumps once (so the first batches are full, not of one). */
  const check = (chain: MinedCheckChain, subscriptionId: string, target: CheckTarget, startNow = true) => {
    if (abort.signal.aborted || known.has(subscriptionId)) return;
    known.add(subscriptionId);
    queue.push({ chain, subscriptionId, target });
    if (startNow) pump();
  };

  let batchesRunning = 0;
  const pump = () => {
    while (running.size < CONCURRENCY && queue.length > 0 && !abort.signal.aborted) {
      const head = queue.peek() as Check;
      const batched = head.target.transactionId !== undefined && head.chain.adapter.findTransactions !== undefined;
      if (batched && batchesRunning >= BATCHES_IN_FLIGHT) break;
      const group = batched ? takeBatch() : [queue.shift() as Check];
      if (batched) batchesRunning++;
      const p = runGroup(group).finally(() => {
        if (batched) batchesRunning--;
        running.delete(p);
        pump();
      });
      running.add(p);
    }
  };

  /** The transaction check at the head of the queue and those of the same chain right behind it, up to BATCH. */
  const takeBatch = (): Check[] => {
    const first = queue.shift() as Check;
    const group = [first];
    const { blockchain, network } = first.chain.key;
    for (let next = queue.peek(); group.length < BATCH && next; next = queue.peek()) {
      if (next.target.transactionId === undefined || next.chain.key.blockchain !== blockchain || next.chain.key.network !== network) break;
      group.push(queue.shift() as Check);
    }
    return group;
  };

  /** Where each check's transaction was mined (or its subscribed height), asked of the node in one request where it batches. */
  const locate = async (group: Check[]): Promise<(BlockLocation | undefined)[]> => {
    const { adapter } = (group[0] as Check).chain;
    const transactionIds = group.flatMap((c) => (c.target.transactionId === undefined ? [] : [c.target.transactionId]));
    const found =
      transactionIds.length === 0
        ? []
        : adapter.findTransactions
          ? await adapter.findTransactions(transactionIds)
          : adapter.findTransaction
            ? [await adapter.findTransaction(transactionIds[0] as string)]
            : transactionIds.map(() => undefined);
    if (found.length !== transactionIds.length) throw new Error(`the node answered ${found.length} lookups for ${transactionIds.length} transactions`);
    let i = 0;
    return group.map((c) => (c.target.transactionId === undefined ? { height: c.target.height, hash: null } : found[i++]));
  };

  /** Looks the group up, then finishes its checks one after the other (each parked, ended or retried on its own). */
  const runGroup = async (group: Check[]) => {
    let locations: (BlockLocation | undefined)[];
    try {
      locations = await locate(group);
    } catch (error) {
      if (group.length > 1)
        logger.warn({ err: error, subscriptions: group.length }, 'could not look up yet whether the subscribed transactions were already mined; retrying');
      for (const c of group) retryLater(c, error, group.length === 1);
      return;
    }
    for (const [i, next] of group.entries()) {
      if (abort.signal.aborted) return;
      await runCheck(next, locations[i])
        .then((park) => {
          if (park) {
            parked.set(next.subscriptionId, { ...next, ...park });
            scheduleSweep();
          } else known.delete(next.subscriptionId);
        })
        .catch((error) => retryLater(next, error, true));
    }
  };

  /** Never dropped: a node or database in trouble delays the check, with backoff. */
  const retryLater = (check: Check, error: unknown, log: boolean) => {
    const failures = (check.failures ?? 0) + 1;
    const retryInMs = backoffMs(failures, { firstMs: 500, maxMs: MAX_RETRY_MS });
    parked.set(check.subscriptionId, { ...check, height: 0, seen: undefined, failures, retryAt: Date.now() + retryInMs });
    scheduleSweep();
    if (log)
      logger.warn(
        { err: error, subscriptionId: check.subscriptionId, ...check.target, retryInMs },
        'could not check yet whether the subscribed transaction was already mined (or the height reached); retrying',
      );
  };

  /**
   * Where the follower stands on `location`'s block, read under the chain's lock by the caller. A
   * location without a hash (a subscribed height) stands for whatever block the window holds there.
   */
  const standing = async (
    tx: Queryable,
    chain: MinedCheckChain,
    location: { height: number; hash: string | null },
    known?: { cursor: ChainCursor | undefined },
  ) => {
    const cursor = known ? known.cursor : await getCursor(tx, chain.key);
    // undefined = the follower's: not applied yet, or our window holds another block there.
    if (!cursor || location.height > cursor.height) return { cursor, block: undefined };
    const ours = await windowBlockAt(tx, chain.key, location.height);
    // null = older than the window (deep enough not to change).
    if (!ours) return { cursor, block: null };
    return { cursor, block: location.hash === null || ours.hash === location.hash ? ours : undefined };
  };

  /**
   * Finishes one check whose transaction the node located (`location`: undefined when not mined); answers
   * where to park it when the block is left to the follower.
   */
  const runCheck = async ({ chain, subscriptionId, target }: Check, location: BlockLocation | undefined): Promise<Omit<Parked, keyof Check> | undefined> => {
    const { transactionId } = target;
    if (!location) return undefined;
    const { height } = location;
    const parkAt = (cursor: ChainCursor | undefined) => ({ height: location.height, seen: cursor && { height: cursor.height, hash: cursor.hash } });
    // A first look without the lock: "not applied yet" may be a block being applied right now with an
    // index read before this subscription arrived, so it parks the check rather than ends it.
    const first = await standing(db, chain, location, await firstLook(chain.key));
    if (first.block === undefined) return parkAt(first.cursor);
    // Older than the window: the node's own block, fetched outside any transaction.
    const ref = first.block ?? (await chain.adapter.getBlock(height));
    const [row] = await loadIndexableByIds(db, [subscriptionId]);
    if (!row?.isActive) return undefined;
    const single = new SubscriptionIndex(chain.key.blockchain, chain.key.network);
    single.add(row);
    return await underChainLock(chain.key, 'ingest:already-mined-enqueue', async (tx) => {
      // Checked again under the lock held until commit: a reorganisation in between parks it again.
      const now = await standing(tx, chain, location);
      if (now.block === undefined) return parkAt(now.cursor);
      // For a height, the block the window holds there now (a reorganisation may have replaced the first look's).
      const block = now.block ?? ref;
      const events = await buildBlockEvents(
        {
          index: single,
          block: {
            height: block.height,
            hash: block.hash,
            timestamp: block.timestamp,
            parentHash: '',
            transactionIds: transactionId === undefined ? [] : [transactionId],
            tokenTransfers: [],
            internalTransfers: [],
            coinMovements: [],
          },
          chain: chain.key,
          defaultConfirmations: chain.confirmations,
        },
        (ids) => loadCallbackTargets(tx, ids),
      );
      const enqueued = await enqueueCallbacks(tx, events.now, new Date(), { chain: chain.key });
      // In the window: recorded under its block, so a later reorganisation cancels it if unsent.
      if (now.block) {
        await recordBlockCallbacks(
          tx,
          chain.key,
          events.now.map((c) => ({ blockHeight: height, subscriptionId: c.subscriptionId, idempotencyKey: c.idempotencyKey })),
        );
      }
      if (enqueued > 0)
        logger.info(
          { ...chain.key, subscriptionId, transactionId, height },
          transactionId === undefined
            ? 'subscribed height was already reached: callback enqueued'
            : 'subscribed transaction was already mined: callback enqueued',
        );
      return undefined;
    });
  };

  const scheduleSweep = () => {
    if (sweepTimer || parked.size === 0 || abort.signal.aborted) return;
    sweepTimer = setTimeout(() => {
      sweepTimer = undefined;
      const p = sweepParked()
        .catch((error) => logger.warn({ err: error, parked: parked.size }, 'could not look at the parked already-mined checks; trying again'))
        .finally(() => {
          running.delete(p);
          scheduleSweep();
        });
      running.add(p);
    }, PARKED_SWEEP_MS);
    sweepTimer.unref();
  };

  /** Parked checks whose chain moved on: dropped when the subscription has a callback by now, else run again. */
  const sweepParked = async () => {
    const byChain = new Map<string, Parked[]>();
    for (const p of parked.values()) {
      const k = `${p.chain.key.blockchain}/${p.chain.key.network}`;
      byChain.set(k, [...(byChain.get(k) ?? []), p]);
    }
    for (const list of byChain.values()) {
      const cursor = await getCursor(db, (list[0] as Parked).chain.key);
      const now = Date.now();
      const moved = list.filter((p) =>
        p.retryAt !== undefined
          ? now >= p.retryAt
          : cursor !== undefined && cursor.height >= p.height && (cursor.height !== p.seen?.height || cursor.hash !== p.seen.hash),
      );
      if (moved.length === 0) continue;
      const called = await subscriptionsWithCallbacks(
        db,
        moved.map((p) => p.subscriptionId),
      );
      for (const p of moved) {
        parked.delete(p.subscriptionId);
        if (called.has(p.subscriptionId)) known.delete(p.subscriptionId);
        else queue.push({ chain: p.chain, subscriptionId: p.subscriptionId, target: p.target, failures: p.failures });
      }
    }
    pump();
  };

  return {
    check: (chain, subscriptionId, transactionId) => check(chain, subscriptionId, { transactionId }),
    checkHeight: (chain, subscriptionId, height) => check(chain, subscriptionId, { height }),
    async checkAllUncalled(chain) {
      const rows = await loadUncalledMinedSubscriptions(db, chain.key);
      for (const row of rows) {
        if (row.transactionId !== null) check(chain, row.id, { transactionId: row.transactionId }, false);
        else if (row.height !== null) check(chain, row.id, { height: row.height }, false);
      }
      pump();
      return rows.length;
    },
    async settled() {
      while (running.size > 0 || queue.length > 0) await Promise.allSettled([...running]);
    },
    async close() {
      abort.abort();
      clearTimeout(sweepTimer);
      queue.clear();
      while (running.size > 0) await Promise.allSettled([...running]);
    },
  };
}
