/**
 * Chain following for one (blockchain, network), family-neutral: fetch the next block, detect a
 * reorganisation by parent hash, and apply each block in ONE transaction (window row, matches,
 * callbacks due now, confirmed events to wait for, due events promoted, cursor, pruning), so a crash
 * between or inside blocks neither loses nor doubles anything.
 *
 * One follower per chain: each block transaction takes pg_advisory_xact_lock on the chain and re-reads
 * the cursor under it. A session lock held by the loop would need a dedicated connection for the
 * loop's life, which the store wrapper (pooled transactions only) does not offer; the per-transaction
 * lock needs nothing more, and when a follower dies its lock is gone with its transaction, so another
 * takes over at once. Two live followers waste RPC calls but cannot apply a block twice: the second
 * sees that the cursor moved and drops its work.
 */
import type { Logger } from 'pino';
import type { ChainAdapter, NormalizedBlock } from '../chains/types.ts';
import type { ChainKey } from '../domain/chains.ts';
import type { BlockCallback } from '../domain/events.ts';
import { callbackOfEvent, type NewCallback } from '../domain/events.ts';
import { Alarm, Backoff, sleep } from '../lib/loop.ts';
import { type BlockEvents, type BlockEventsInput, blockEventsOf, buildBlockEvents, buildRevertedEvents, type TokenMetadataLookup } from '../matching/events.ts';
import { SubscriptionIndex } from '../matching/index.ts';
import { matchBlock } from '../matching/match.ts';
import type { SafetyPolicy } from '../matching/safety.ts';
import {
  type BlockDue,
  type BlockState,
  blockTransactionPrelude,
  readAndTakeBlock,
  readBlockState,
  takeBlockDue,
  takeFinalizedPending,
  writeBlock,
} from '../store/block-apply.ts';
import { enqueueCallbacks, insertCallbacks } from '../store/callbacks.ts';
import { type BreakerTrip, tripBreaker } from '../store/chain-holds.ts';
import {
  type ChainCursor,
  getCursor,
  loadCallbackTargets,
  loadIndexableByIds,
  lockChain,
  recordBlockCallbacks,
  rewindAbove,
  saveCursor,
  saveFinalizedHeight,
  saveNodeHead,
  stopChain,
  type WindowBlock,
  windowBlocks,
} from '../store/chain-state.ts';
import type { Db, Queryable } from '../store/db.ts';
import { recordReorganisation } from '../store/history.ts';
import { insertLedgerEntries } from '../store/ledger.ts';
import { clearKeyUsesAbove } from '../store/wallet-xpubs.ts';
import { keepKeyWindows } from '../wallets/key-windows.ts';
import * as ledger from '../wallets/ledger.ts';
import { WatchedAddressSet } from '../wallets/watched-set.ts';
import { settleAnnounced } from './dropped.ts';
import { type FinalityWatch, finalityWatchOf } from './finality.ts';
import type { FollowerGate } from './gate.ts';
import { BlockPrefetcher } from './prefetch.ts';
import { forgetXpubUsesAbove, keepXpubGaps } from './xpub-gaps.ts';

/** More than the largest receiveCallbackOn (100): a confirmed event's block stays in the window until it is due. */
export const DEFAULT_WINDOW = 128;
const DEFAULT_PREFETCH_DEPTH = 4;
const STOPPED_RECHECK_MS = 10_000;

export interface FollowerDeps {
  db: Db;
  adapter: ChainAdapter;
  /** The chain's active subscriptions; read at each block (whoever keeps it current may swap it). */
  index: () => SubscriptionIndex;
  /** Resolves once the subscription announcements received so far are in the index (bounded wait). */
  indexCurrent?: () => Promise<void>;
  logger: Pick<Logger, 'error' | 'warn' | 'info'>;
  /** Confirmations of confirmed events whose subscription asked for none (and of internal transfers). */
  defaultConfirmations: number;
  /**
   * The deep-reorganisation breaker (docs/concepts/confirmations-and-reorganisations.md#the-deep-reorganisation-breaker): a
   * reorganisation deeper than this, or one this deep claimed by a node no other confirms, holds the chain's
   * confirmed callbacks (store/chain-holds.ts) until an operator releases it. 0 or absent: off.
   */
  reorgBreakerDepth?: number;
  /** Blocks kept to find a common ancestor; a deeper reorganisation stops the chain. */
  window?: number;
  /** Where to begin when the chain has no cursor yet; the node's head when not given. */
  startHeight?: number;
  tokenMetadata?: TokenMetadataLookup;
  /** The chain's safety thresholds and list (src/matching/safety.ts); default: the shipped defaults. */
  safety?: SafetyPolicy;
  /** The node's head as last seen, kept between steps by whoever drives the follower. */
  lastHead?: { value?: number };
  /**
   * The block this follower applied last, kept between steps by whoever drives it: the next step starts
   * from it instead of reading the cursor (one statement less per block while catching up). Only a hint:
   * the block's transaction reads the cursor under the chain's lock and drops its work ('raced') when
   * another follower or an operator moved it, which forgets the hint.
   */
  lastApplied?: { value?: { height: number; hash: string } };
  /** Fetches the next blocks while one is applied (set by followChain). */
  prefetch?: BlockPrefetcher;
  /** The chain's watched addresses as this process knows them (wallets/watched-set.ts); made and loaded at the first block when not given. */
  watched?: WatchedAddressSet;
  /**
   * The chain's finalized height (finality.ts), where the adapter reads one: the callbacks waiting for
   * finality are taken with each block and, when caught up, as soon as it moves. Made by followChain; read
   * only while the index holds a finality subscription (no node call otherwise).
   */
  finality?: FinalityWatch;
}

export type StepResult =
  | { kind: 'applied'; height: number; hash: string; enqueued: number; pending: number }
  | { kind: 'caught-up'; head: number }
  | {
      kind: 'reorganised';
      ancestorHeight: number;
      depth: number;
      pendingDeleted: number;
      callbacksCancelled: number;
      revertedCallbacks: number;
      /** Deeper than the breaker: the chain is held (its confirmed callbacks too). */
      held: boolean;
    }
  | { kind: 'stopped'; reason: string }
  /** A deep reorganisation claimed by one node of several and confirmed by no other: not followed (that node is set aside). */
  | { kind: 'reorganisation-refused'; depth: number; reason: string }
  /** Another follower moved the cursor meanwhile: nothing done, try again. */
  | { kind: 'raced' };

/** Fetches and applies the block after the cursor, or handles the reorganisation it reveals. */
export async function applyNextBlock(deps: FollowerDeps, chain: ChainKey): Promise<StepResult> {
  const remembered = deps.lastApplied;
  if (!remembered) return await nextStep(deps, chain, undefined);
  const known = remembered.value;
  remembered.value = undefined;
  const result = await nextStep(deps, chain, known && { ...known, state: 'following', stopReason: null });
  if (result.kind === 'applied') remembered.value = { height: result.height, hash: result.hash };
  else if (result.kind === 'caught-up') remembered.value = known;
  return result;
}

async function nextStep(deps: FollowerDeps, chain: ChainKey, known: ChainCursor | undefined): Promise<StepResult> {
  const { db, adapter } = deps;
  const cursor = known ?? (await getCursor(db, chain));
  if (cursor?.state === 'stopped') return { kind: 'stopped', reason: cursor.stopReason ?? 'stopped' };
  // The head is asked again only once the follower has reached the last one seen: catching up does
  // not pay one extra call per block.
  let head = deps.lastHead?.value;
  if (head === undefined || !cursor || cursor.height + 1 > head) {
    head = await adapter.getHead();
    if (deps.lastHead) deps.lastHead.value = head;
  }
  const next = cursor ? cursor.height + 1 : (deps.startHeight ?? head);
  if (next > head) {
    if (cursor) {
      await saveNodeHead(db, chain, head);
      // A head replaced at the same height (EVM nodes switch heads of equal height; any chain between two
      // blocks of a race) is a reorganisation now, not when the next block arrives: compare the node's
      // hash at the cursor with ours. One cheap call per poll, only when caught up.
      if (cursor.height === head && (await nodeHashAt(adapter, head)) !== cursor.hash) return await reconcile(deps, chain, cursor);
      if (deps.finality && deps.index().hasFinality) await releaseFinalized(deps, chain, cursor);
    }
    return { kind: 'caught-up', head };
  }
  const block = await (deps.prefetch ? deps.prefetch.get(next, head) : adapter.getBlock(next));
  if (block.height !== next) throw new Error(`adapter returned block ${block.height} for height ${next}`);

  if (cursor && block.parentHash !== cursor.hash) return await reconcile(deps, chain, cursor);
  // Subscriptions announced before this block is matched are in the index it is matched with.
  await deps.indexCurrent?.();
  return await applyBlock(deps, chain, block, cursor ?? null, head);
}

async function applyBlock(
  deps: FollowerDeps,
  chain: ChainKey,
  block: NormalizedBlock,
  expected: { height: number; hash: string } | null,
  head: number,
): Promise<StepResult> {
  const window = deps.window ?? DEFAULT_WINDOW;
  deps.watched ??= new WatchedAddressSet();
  const watchedSet = deps.watched;
  if (!watchedSet.loaded) await watchedSet.load(deps.db, chain);
  // Read before the transaction (a node call), at most once a second (finality.ts), while a subscription waits for finality.
  const finalizedHeight = deps.index().hasFinality ? await deps.finality?.height() : undefined;
  // A few statements per block (store/block-apply.ts): BEGIN with the chain's lock, read, take what is due,
  // enqueue, write, COMMIT (one that does not wait for the disk: see blockTransactionPrelude).
  try {
    return await deps.db.transaction(
      'ingest:apply-block',
      async (tx) => {
        // Read under the lock, never before: an already-mined check that found this block not yet applied
        // (under the same lock) relies on its subscription being in the index this block is matched with.
        const index = deps.index();
        // UTXO spends of outputs the ledger recorded, resolved once: the ledger and the coin events read the same movements.
        const resolved = await ledger.resolveSpends(tx, chain, block);
        let matches = matchBlock(index, resolved, chain.blockchain);
        // Wallet keys: used addresses marked and their gap windows extended in this block's transaction, the
        // block matched again while they grow (ingest/xpub-gaps.ts).
        if (index.hasXpub) matches = await keepXpubGaps(tx, index, chain, resolved, matches, block.height);
        const touched = ledger.touchedAddresses(resolved);
        const wanted = {
          subscriptionIds: [...new Set(matches.map((m) => m.subscription.id))],
          candidates: watchedSet.candidates(touched),
          since: watchedSet.since,
        };
        // With one confirmation, this block's entries are confirmed now: in the table before they are taken.
        // Otherwise what is due is taken by the statement that reads the state (one round trip less).
        const confirmedHeight = block.height - deps.defaultConfirmations + 1;
        const confirmedNow = confirmedHeight >= block.height;
        const state: BlockState & Partial<BlockDue> = confirmedNow
          ? await readBlockState(tx, chain, wanted)
          : await readAndTakeBlock(tx, chain, { ...wanted, height: block.height, confirmedHeight, finalizedHeight });
        const { cursor, backfilling } = state;
        // Rolled back, not committed: the take may already have happened.
        if ((cursor?.height ?? null) !== (expected?.height ?? null) || (cursor?.hash ?? null) !== (expected?.hash ?? null))
          throw new Abandon({ kind: 'raced' });
        if (cursor?.state === 'stopped') throw new Abandon({ kind: 'stopped', reason: cursor.stopReason ?? 'stopped' });

        const input = {
          index,
          block: resolved,
          chain,
          defaultConfirmations: deps.defaultConfirmations,
          tokenMetadata: deps.tokenMetadata,
          safety: deps.safety,
        };
        const events = await blockEventsOf(matches, input, state.targets);
        // Subscriptions being backfilled (usually none, read with the cursor): matched even before this
        // process's index has heard of them, and their events held back (pending, due now) until their
        // backfill has queued its own.
        if (backfilling.length > 0) await holdForBackfills(tx, input, events, backfilling);
        const watched = watchedSet.watchedOf(state.watched, touched);
        const entriesOf = (rows: typeof watched) => ledger.blockEntries(resolved, rows, deps.adapter, (address) => index.hasCoinAddress(address));
        let blockLedger = await entriesOf(watched);
        // Extended keys held by wallets: the derived addresses this block moves first are marked used and their
        // windows extended, the block's entries computed again while they grow (wallets/key-windows.ts).
        if (blockLedger.entries.length > 0 && watched.some((w) => w.derived)) {
          blockLedger = (await keepKeyWindows(tx, chain, block, touched, watched, blockLedger, entriesOf)).ledger;
        }
        const { entries, outputs } = blockLedger;
        if (confirmedNow) await insertLedgerEntries(tx, chain, block.height, entries);
        const { due, confirmed } =
          state.due && state.confirmed
            ? { due: state.due, confirmed: state.confirmed }
            : await takeBlockDue(tx, chain, { height: block.height, confirmedHeight, except: backfilling, finalizedHeight });
        // Events of earlier blocks that are due now go first, then this block's: enqueueCallbacks numbers
        // each subscription's callbacks (x-callback-sequence) in this order, which is then the block order.
        const callbacks: NewCallback[] = [];
        const records: BlockCallback[] = [];
        for (const e of due) {
          callbacks.push(callbackOfEvent(e));
          records.push({ blockHeight: e.blockHeight, subscriptionId: e.subscriptionId, idempotencyKey: e.idempotencyKey });
        }
        callbacks.push(...events.now);
        for (const c of events.now) records.push({ blockHeight: block.height, subscriptionId: c.subscriptionId, idempotencyKey: c.idempotencyKey });
        // Numbered, and the workers woken, by writeBlock's statement.
        const { inserted: enqueued, numbering } = await insertCallbacks(tx, callbacks, new Date(), chain);
        const changes = await ledger.confirmedChanges(confirmed, deps.adapter);
        await writeBlock(tx, chain, {
          block,
          nodeHead: head,
          pruneBelow: block.height - window + 1,
          pending: events.pending,
          blockCallbacks: records,
          numbering,
          entries: confirmedNow ? [] : entries,
          outputs,
          ...changes,
          notify: callbacks.length > 0,
        });
        // Announced unconfirmed transactions this block settles (docs/reference/events/address-coins-transaction-unconfirmed-dropped.md):
        // mined ones closed, those whose outpoints it spends dropped as conflicted. Only while an unconfirmed subscription exists.
        const dropped = index.hasUnconfirmed ? await settleAnnounced(tx, chain, block) : 0;
        return { kind: 'applied' as const, height: block.height, hash: block.hash, enqueued: enqueued + dropped, pending: events.pending.length };
      },
      { prelude: blockTransactionPrelude(chain) },
    );
  } catch (error) {
    if (error instanceof Abandon) return error.result;
    throw error;
  }
}

/**
 * Caught up, between blocks: sends the callbacks waiting for finality whose blocks the chain's finalized
 * height now covers (a ChainLock or a solidified block arriving after its block), when that height moved
 * since the last sweep. Under the chain's lock, at the cursor the step saw (else left to the next step),
 * recorded under their blocks as the block path's are, so a reorganisation still finds them.
 */
async function releaseFinalized(deps: FollowerDeps, chain: ChainKey, cursor: { height: number; hash: string }): Promise<void> {
  const watch = deps.finality as FinalityWatch;
  const finalized = await watch.height();
  if (finalized === undefined || finalized === watch.swept) return;
  await deps.db.transaction('ingest:release-finalized', async (tx) => {
    await lockChain(tx, chain);
    const now = await getCursor(tx, chain);
    if (now?.height !== cursor.height || now.hash !== cursor.hash) return;
    await saveFinalizedHeight(tx, chain, Math.min(finalized, cursor.height));
    const due = await takeFinalizedPending(tx, chain, Math.min(finalized, cursor.height));
    if (due.length > 0) {
      // With the chain named: a chain held by the deep-reorganisation breaker holds these too (store/callbacks.ts insertCallbacks).
      await enqueueCallbacks(tx, due.map(callbackOfEvent), new Date(), { chain });
      await recordBlockCallbacks(
        tx,
        chain,
        due.map((e) => ({ blockHeight: e.blockHeight, subscriptionId: e.subscriptionId, idempotencyKey: e.idempotencyKey })),
      );
    }
  });
  watch.swept = finalized;
}

/** Thrown inside a block's transaction to roll it back and end the step with `result`. */
class Abandon extends Error {
  constructor(readonly result: StepResult) {
    super(`block transaction abandoned: ${result.kind}`);
  }
}

/**
 * Block-to-backfill hand-over (store/block-jobs.ts): a subscription created with fromBlockHeight has its
 * backfill cover blocks up to the chain's height at its creation, and every block applied after that
 * creation committed is live following's. This block transaction sees the backfill's row (read under the
 * chain's lock, after the create took the same lock), so it matches the subscription here even when this
 * process's index has not received it yet (another ingest process, an announcement in flight): no block
 * falls between the two. Its callbacks are held back as pending events due now, so the subscription's
 * numbering (x-callback-sequence) follows block order across the hand-over.
 */
async function holdForBackfills(tx: Queryable, input: BlockEventsInput, events: BlockEvents, backfilling: string[]): Promise<void> {
  const missing = backfilling.filter((id) => !input.index.has(id));
  if (missing.length > 0) {
    const extra = new SubscriptionIndex(input.chain.blockchain, input.chain.network);
    for (const row of await loadIndexableByIds(tx, missing)) extra.add(row);
    if (extra.size > 0) {
      const more = await buildBlockEvents({ ...input, index: extra }, (ids) => loadCallbackTargets(tx, ids));
      events.now.push(...more.now);
      events.pending.push(...more.pending);
    }
  }
  const held = new Set(backfilling);
  const block = input.block;
  const live = events.now.filter((c) => !held.has(c.subscriptionId));
  for (const c of events.now) {
    if (!held.has(c.subscriptionId)) continue;
    events.pending.push({ ...c, blockHeight: block.height, blockHash: block.hash, dueHeight: block.height });
  }
  events.now = live;
}

/**
 * The node's block after the cursor does not link to the cursor's block: walk back through the window,
 * fetching the node's blocks, to the highest height where the node and the window agree (the common
 * ancestor), then forget everything above it, and queue the BLOCK_REVERTED callbacks of the dropped
 * blocks in the same transaction (so before any callback of the replacement blocks). No ancestor within
 * the window: stop the chain, loudly; skipping would lose or invent events.
 */
async function reconcile(deps: FollowerDeps, chain: ChainKey, cursor: { height: number; hash: string }): Promise<StepResult> {
  const window = deps.window ?? DEFAULT_WINDOW;
  const stored = await windowBlocks(deps.db, chain, cursor.height - window + 1);
  let ancestor: number | undefined;
  // The node's hash at each height walked: the blocks involved, should the breaker trip.
  const nodeHashes = new Map<number, string>();
  for (const ours of stored) {
    const theirs = await nodeHashAt(deps.adapter, ours.height);
    nodeHashes.set(ours.height, theirs);
    if (theirs === ours.hash) {
      ancestor = ours.height;
      break;
    }
  }
  const breaker = deps.reorgBreakerDepth ?? 0;
  const tripOf = (reason: BreakerTrip['reason'], depth: number, ancestorHeight: number, detail: string | null): BreakerTrip => ({
    at: new Date().toISOString(),
    reason,
    depth,
    ancestorHeight,
    ancestorHash: stored.find((b) => b.height === ancestorHeight)?.hash ?? null,
    blocks: stored
      .filter((b) => b.height > ancestorHeight)
      .map((b) => ({ height: b.height, orphanedHash: b.hash, newHash: nodeHashes.get(b.height) ?? null }))
      .reverse(),
    detail,
  });

  // The node agrees with our last block, yet the block it gave after it names another parent: no
  // reorganisation (nothing of ours is replaced), the node contradicts itself (or changed its chain twice
  // between two calls). Rewinding to our own cursor would "reorganise" at every step: a node serving
  // inconsistent parent hashes made thousands of depth-0 reorganisations a minute. It counts against the
  // node's health, and the step fails: followChain retries with its doubling backoff.
  if (ancestor === cursor.height) {
    const reason = `its block ${cursor.height + 1} does not link to its own block ${cursor.height} (${cursor.hash}): the node serves inconsistent parent hashes`;
    deps.adapter.reportInconsistency?.(reason);
    throw new InconsistentNodeError(reason);
  }

  // Several nodes: a deep reorganisation (or one past the window) is followed only when a second node agrees.
  const lowestStored = stored.at(-1);
  const claim =
    ancestor !== undefined
      ? { ancestorHeight: ancestor, depth: cursor.height - ancestor, ourHash: stored.find((b) => b.height === (ancestor as number) + 1)?.hash ?? cursor.hash }
      : lowestStored && { ancestorHeight: lowestStored.height - 1, depth: cursor.height - lowestStored.height + 1, ourHash: lowestStored.hash };
  if (claim && deps.adapter.checkReorganisation) {
    const verdict = await deps.adapter.checkReorganisation(claim);
    if (!verdict.act) {
      deps.logger.warn(
        { blockchain: chain.blockchain, network: chain.network, cursorHeight: cursor.height, depth: claim.depth, reason: verdict.reason },
        'reorganisation not followed: no second node confirms it',
      );
      // Nodes that disagree deeper than the breaker: which chain is right is the operator's call.
      if (breaker > 0 && claim.depth > breaker) {
        const trip = tripOf('disagreement', claim.depth, claim.ancestorHeight, verdict.reason);
        await deps.db.transaction('ingest:trip-breaker', async (tx) => {
          await lockChain(tx, chain);
          const { held } = await tripBreaker(tx, chain, trip, breaker);
          deps.logger.error(
            { blockchain: chain.blockchain, network: chain.network, depth: claim.depth, breakerDepth: breaker, heldNow: held },
            `chain held: its nodes disagree ${claim.depth} blocks deep (more than reorgBreakerDepth ${breaker}); confirmed callbacks wait for herald chains release`,
          );
        });
      }
      return { kind: 'reorganisation-refused', depth: claim.depth, reason: verdict.reason };
    }
  }

  if (ancestor === undefined) {
    const lowest = stored.at(-1)?.height ?? cursor.height;
    const reason = `reorganisation deeper than the window of ${window} blocks: no common ancestor at heights ${lowest}..${cursor.height}`;
    deps.logger.error({ blockchain: chain.blockchain, network: chain.network, cursorHeight: cursor.height, window }, `chain following stopped: ${reason}`);
    return await deps.db.transaction('ingest:stop-chain', async (tx) => {
      await lockChain(tx, chain);
      const now = await getCursor(tx, chain);
      if (now?.height !== cursor.height || now.hash !== cursor.hash) return { kind: 'raced' as const };
      await stopChain(tx, chain, reason);
      return { kind: 'stopped' as const, reason };
    });
  }

  const ancestorHeight = ancestor;
  const ancestorHash = stored.find((b) => b.height === ancestorHeight)?.hash as string;
  return await deps.db.transaction('ingest:rewind', async (tx) => {
    await lockChain(tx, chain);
    const now = await getCursor(tx, chain);
    if (now?.height !== cursor.height || now.hash !== cursor.hash) return { kind: 'raced' as const };
    const removed = await rewindAbove(tx, chain, ancestorHeight);
    // The window's blocks above the ancestor, highest first: unchanged since read, as the cursor is.
    const dropped = stored.filter((b) => b.height > ancestorHeight);
    const reverted = await buildRevertedEvents({ index: deps.index(), blocks: dropped, chain }, (ids) => loadCallbackTargets(tx, ids));
    const revertedCallbacks = await enqueueCallbacks(tx, reverted);
    const ledgerReversed = await ledger.rewind(tx, chain, ancestorHeight);
    await forgetXpubUsesAbove(tx, chain, ancestorHeight);
    await clearKeyUsesAbove(tx, chain, ancestorHeight);
    const ancestorBlock = stored.find((b) => b.height === ancestorHeight) as WindowBlock;
    await saveCursor(tx, chain, { height: ancestorHeight, hash: ancestorHash, timestamp: ancestorBlock.timestamp });
    const depth = cursor.height - ancestorHeight;
    await recordReorganisation(tx, chain, depth);
    // Deeper than the breaker: the chain's confirmed callbacks are held from this transaction on.
    const held = breaker > 0 && depth > breaker;
    if (held) {
      const { held: heldNow } = await tripBreaker(tx, chain, tripOf('reorganisation', depth, ancestorHeight, null), breaker);
      deps.logger.error(
        { blockchain: chain.blockchain, network: chain.network, ancestorHeight, depth, breakerDepth: breaker, heldNow },
        `chain held: a reorganisation of ${depth} blocks (more than reorgBreakerDepth ${breaker}); confirmed callbacks wait for herald chains release`,
      );
    }
    deps.logger.warn(
      {
        blockchain: chain.blockchain,
        network: chain.network,
        ancestorHeight,
        depth: cursor.height - ancestorHeight,
        ledgerReversed,
        revertedCallbacks,
        ...removed,
      },
      'chain reorganisation: rewound to the common ancestor',
    );
    return { kind: 'reorganised' as const, ancestorHeight, depth, revertedCallbacks, held, ...removed };
  });
}

/** The node's answers contradict each other (see reconcile): no reorganisation, a failed step. */
export class InconsistentNodeError extends Error {
  override name = 'InconsistentNodeError';
}

/** The node's block hash at `height`: by the adapter's cheap call when it has one, else from the whole block. */
async function nodeHashAt(adapter: ChainAdapter, height: number): Promise<string> {
  if (adapter.getBlockHash) return await adapter.getBlockHash(height);
  return (await adapter.getBlock(height)).hash;
}

export interface FollowOptions {
  signal: AbortSignal;
  /** Wait between polls of the head when caught up. */
  pollMs?: number;
  /** Backoff after a failure (node or database): doubles from min to max, reset by a success. */
  backoffMinMs?: number;
  backoffMaxMs?: number;
  /** Blocks fetched at once while catching up (the next one included); default 4. */
  prefetchDepth?: number;
  /** Told of every step's result (metrics). */
  onStep?: (result: StepResult) => void;
  /** Marked busy during each step: the chain's backfill and replay runner waits for the step to end (gate.ts). */
  gate?: FollowerGate;
}

/**
 * Follows the chain until `signal` aborts (a stopped chain is looked at again every 10 s). A failing step (node error, lost
 * connection) is retried from the same height with backoff: a height is never skipped.
 */
export async function followChain(deps: FollowerDeps, chain: ChainKey, options: FollowOptions): Promise<StepResult | undefined> {
  const pollMs = options.pollMs ?? 2_000;
  const min = options.backoffMinMs ?? 500;
  // At most 10 s between tries: a node (or database) back after an outage is followed again within
  // seconds, as a customer waiting for a callback expects; one request per 10 s is nothing to a node.
  const max = options.backoffMaxMs ?? 10_000;
  deps.lastHead ??= {};
  const lastHead = deps.lastHead;
  deps.lastApplied ??= {};
  deps.prefetch ??= new BlockPrefetcher(deps.adapter, options.prefetchDepth ?? DEFAULT_PREFETCH_DEPTH);
  deps.finality ??= finalityWatchOf(deps.adapter, chain, deps.logger);
  const prefetch = deps.prefetch;
  // A head announced by the node (WebSocket newHeads) ends the wait at once; polling stays the
  // fallback, so a silent or dropped subscription only costs latency, never a block. Woken early, the
  // wait ends its sleep (timer and abort listener) too: every chain's follower listens on the ingest
  // service's one signal, and a sleep left running after each announced head kept a listener there for
  // up to pollMs (Node warned of 11 listeners on a service of many chains).
  const announced = new Alarm();
  const unwatch = deps.adapter.watchHeads?.((height) => {
    if (lastHead.value === undefined || height > lastHead.value) lastHead.value = height;
    announced.ring();
  });
  try {
    const backoff = new Backoff({ firstMs: min, maxMs: max });
    while (!options.signal.aborted) {
      try {
        announced.reset();
        options.gate?.enter();
        let result: StepResult | undefined;
        try {
          result = await applyNextBlock(deps, chain);
        } finally {
          options.gate?.leave(result?.kind === 'applied');
        }
        options.onStep?.(result);
        if (result.kind === 'reorganised' || result.kind === 'raced' || result.kind === 'reorganisation-refused') prefetch.clear();
        // The head came from the node set aside: ask the eligible ones again.
        if (result.kind === 'reorganisation-refused') lastHead.value = undefined;
        backoff.reset();
        // Stopped (a reorganisation deeper than the window): look again now and then, so that an
        // operator's `herald chains reset` resumes following without restarting the process.
        if (result.kind === 'stopped') await sleep(Math.max(pollMs, STOPPED_RECHECK_MS), options.signal);
        if (result.kind === 'caught-up') await announced.sleep(pollMs, options.signal);
      } catch (error) {
        lastHead.value = undefined;
        prefetch.clear();
        const delay = backoff.next();
        deps.logger.warn(
          { err: error, blockchain: chain.blockchain, network: chain.network, retryInMs: delay },
          `chain following step failed; retrying: ${(error as Error).message}`,
        );
        await sleep(delay, options.signal);
      }
    }
    return undefined;
  } finally {
    unwatch?.();
  }
}
