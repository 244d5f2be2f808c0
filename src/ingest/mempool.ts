/**
 * Unconfirmed events (docs/reference/api.md#address-coins-transactions-unconfirmed and #address-tokens-transactions-unconfirmed): one loop per chain beside the block follower,
 * never inside it (its own timer and its own short transactions, so a 300,000-transaction mempool costs
 * the follower nothing but shared database connections).
 *
 * Each round asks the node's MempoolReader for the transactions that entered its mempool, skips those in
 * the seen-set, reads the others in batches and, per batch, in ONE transaction: queues the callbacks of
 * their matches and records the batch as seen. So a crash before the commit reads the batch again (and
 * fires it once), and after it finds the batch seen. Keys come from (subscription, transaction) only
 * (matching/pending.ts): a transaction seen again (a restart, a second source) cannot fire twice while
 * its callback row lives. A transaction mined before it was read, or evicted, fires nothing here; nor
 * does a transaction that replaces one seen before (RBF: it spends an outpoint the earlier one spent; EVM:
 * the same sender and nonce), and the replaced one fires nothing more but its DROPPED callback (reason
 * `replaced`, src/ingest/dropped.ts) to the subscriptions it was announced to. Their confirmed events are
 * the confirmed subscriptions' business.
 *
 * The seen-set is bounded by age and count, in memory and in the store (mempool_seen), pruned once a
 * minute. Without any unconfirmed subscription on the chain the node is not read at all: a transaction
 * is first seen when some subscription could want it.
 */
import { setImmediate } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { MempoolReader, NormalizedBlock, PendingTransactions } from '../chains/types.ts';
import { callbackBody } from '../domain/callbacks.ts';
import type { ChainKey } from '../domain/chains.ts';
import { callbackOfEvent, type NewCallback } from '../domain/events.ts';
import { Alarm, Backoff, sleep } from '../lib/loop.ts';
import type { TokenMetadataLookup } from '../matching/events.ts';
import type { SubscriptionIndex } from '../matching/index.ts';
import { matchPending, matchPendingXpub, type PendingMatch, pendingIdempotencyKey, pendingItem } from '../matching/pending.ts';
import { type SafetyFacts, type SafetyPolicy, safetyPolicy, safetyVerdict } from '../matching/safety.ts';
import { smallestReceived } from '../matching/xpub.ts';
import { enqueueCallbacks } from '../store/callbacks.ts';
import { loadCallbackTargets } from '../store/chain-state.ts';
import type { Db } from '../store/db.ts';
import { type Announcement, pruneAnnounced, recordAnnounced, takeReplaced } from '../store/dropped.ts';
import { claimConflicts, loadSeen, pruneSeen, recordSeen, saveMempoolStatus } from '../store/mempool.ts';
import * as ledger from '../wallets/ledger.ts';
import { droppedCallbacks } from './dropped.ts';
import { checkEvictionsWhenDue, type EvictionState, newEvictionState } from './evicted.ts';
import type { FollowerGate } from './gate.ts';
import { extendForPending } from './xpub-gaps.ts';

export const DEFAULT_MAX_SEEN = 500_000;
/** A day: far longer than a transaction waits for its first block on any followed chain in normal times. */
export const DEFAULT_MAX_SEEN_AGE_MS = 24 * 3600_000;
const DEFAULT_BATCH = 500;
/**
 * While the follower catches up (steps back to back), a batch is read at most this often (gate.quiet):
 * about a twentieth of a core for the mempool then, the rest for the blocks. Between live blocks the
 * mempool runs at full speed.
 */
export const DEFAULT_CATCH_UP_YIELD_MS = 500;
const PRUNE_EVERY_MS = 60_000;

export interface MempoolDeps {
  db: Db;
  reader: MempoolReader;
  chain: ChainKey;
  /** The chain's active subscriptions (shared with the follower; whoever keeps it current may swap it). */
  index: () => SubscriptionIndex;
  logger: Pick<Logger, 'error' | 'warn' | 'info'>;
  tokenMetadata?: TokenMetadataLookup;
  /** The chain's safety thresholds and list (src/matching/safety.ts); default: the shipped defaults. */
  safety?: SafetyPolicy;
  maxSeen?: number;
  maxSeenAgeMs?: number;
  /** Transactions read and committed together. */
  batchSize?: number;
  /** The chain's follower gate (gate.ts): each batch starts between two of the follower's blocks, which go first. */
  gate?: FollowerGate;
  /** While the follower catches up, one batch per this many ms at most; default DEFAULT_CATCH_UP_YIELD_MS. */
  catchUpYieldMs?: number;
  /** docs/concepts/deposit-safety.md#evicted: the span of the three checks that find an announced transaction gone (src/ingest/evicted.ts). */
  evictionSpanMs?: number;
  now?: () => Date;
}

/** What one loop keeps between rounds (also what the status reports). */
export interface MempoolState {
  /** Transaction id -> first seen (Unix seconds), oldest first. Loaded from the store at the first round. */
  seen: Map<string, number>;
  loaded: boolean;
  /** Listed by the node, not yet read and committed (kept across failures: a failed round loses nothing). */
  backlog: string[];
  transactionsSeen: number;
  callbacksFired: number;
  lastPolledAt: Date | null;
  lastPrunedAt: number;
  error: string | null;
  /** The last round found no unconfirmed subscription and did not read the node. */
  idle: boolean;
  /** The eviction checks' timing (src/ingest/evicted.ts). */
  eviction: EvictionState;
}

export function newMempoolState(): MempoolState {
  return {
    seen: new Map(),
    loaded: false,
    backlog: [],
    transactionsSeen: 0,
    callbacksFired: 0,
    lastPolledAt: null,
    lastPrunedAt: 0,
    error: null,
    idle: false,
    eviction: newEvictionState(),
  };
}

export interface RoundResult {
  /** Transactions new to herald in this round. */
  read: number;
  fired: number;
}

/** One round: the node's new transactions, then the backlog, batch by batch. */
export async function pollMempool(deps: MempoolDeps, state: MempoolState): Promise<RoundResult> {
  const now = deps.now ?? (() => new Date());
  const maxSeen = deps.maxSeen ?? DEFAULT_MAX_SEEN;
  if (!state.loaded) {
    const stored = await loadSeen(deps.db, deps.chain, maxSeen);
    // Newest first from the store: inserted oldest first, so the Map's order is the age order pruning relies on.
    for (const [id, at] of [...stored].reverse()) state.seen.set(id, at);
    state.loaded = true;
  }
  // No unconfirmed subscription on the chain: the node is not asked at all (no RPC, no filter kept alive).
  state.idle = !deps.index().hasUnconfirmed && state.backlog.length === 0;
  if (state.idle) return { read: 0, fired: 0 };
  const queued = new Set(state.backlog);
  for (const id of await deps.reader.newTransactionIds()) {
    if (state.seen.has(id) || queued.has(id)) continue;
    queued.add(id);
    state.backlog.push(id);
  }
  state.lastPolledAt = now();
  const result: RoundResult = { read: 0, fired: 0 };
  const size = deps.batchSize ?? DEFAULT_BATCH;
  // Two batches in flight: the next one is read from the node (and matched) while this one commits, so the
  // node's and the database's round trips overlap. Commits stay in backlog order, one at a time.
  // The follower has priority (a burst of pending transactions must not slow the blocks): each batch's
  // read and commit wait for the block in progress, if any, to be applied, and while the follower catches
  // up (one block after another) a batch is read only now and then (gate.quiet): slower, never stopped.
  const yieldMs = deps.catchUpYieldMs ?? DEFAULT_CATCH_UP_YIELD_MS;
  const read = async (batch: string[]) => {
    await deps.gate?.quiet(yieldMs);
    return prepareBatch(deps, batch, now());
  };
  let next: Promise<PreparedBatch> | undefined = state.backlog.length > 0 ? read(state.backlog.slice(0, size)) : undefined;
  while (next !== undefined) {
    const prepared: PreparedBatch = await next;
    const following = state.backlog.slice(prepared.batch.length, prepared.batch.length + size);
    next = following.length > 0 ? read(following) : undefined;
    // Failing here abandons the read ahead: its failure must not go unhandled (the round fails once, here).
    next?.catch(() => undefined);
    await deps.gate?.idle();
    result.fired += await commitBatch(deps, state, prepared);
    result.read += prepared.batch.length;
    state.backlog.splice(0, prepared.batch.length);
    // The block follower first: its I/O callbacks that arrived during this batch run before the next one's work.
    await setImmediate();
  }
  // Announced transactions gone from the node's mempool and in no block (docs/concepts/deposit-safety.md#evicted):
  // every half span, between two of the follower's blocks; a failed check is retried with its own backoff.
  if (deps.reader.missing && now().getTime() >= state.eviction.nextAt) {
    await deps.gate?.idle();
    result.fired += await checkEvictionsWhenDue({ ...deps, spanMs: deps.evictionSpanMs }, state.eviction);
  }
  if (now().getTime() - state.lastPrunedAt >= PRUNE_EVERY_MS) await prune(deps, state, now());
  state.transactionsSeen += result.read;
  state.callbacksFired += result.fired;
  return result;
}

/** A batch read from the node and matched, not yet committed (nothing written). */
interface PreparedBatch {
  batch: string[];
  at: Date;
  /** Undefined when no unconfirmed subscription was left: the batch is only marked seen in memory. */
  pending?: PendingTransactions;
  matches: PendingMatch[];
  tokens: Map<PendingMatch, Awaited<ReturnType<TokenMetadataLookup>>>;
  /** The batch's transactions that signal BIP125 replaceability. */
  replaceable?: ReadonlySet<string>;
}

/** Reads and matches one batch (node and database reads only). */
async function prepareBatch(deps: MempoolDeps, batch: string[], at: Date): Promise<PreparedBatch> {
  const index = deps.index();
  const tokens = new Map<PendingMatch, Awaited<ReturnType<TokenMetadataLookup>>>();
  if (!index.hasUnconfirmed) return { batch, at, matches: [], tokens };
  const read = await deps.reader.readPending(batch);
  // UTXO inputs spending outputs the ledger recorded (outputs of watched addresses) become outgoing
  // movements, exactly as for a block.
  const pending: PendingTransactions = { ...(await ledger.resolveSpends(deps.db, deps.chain, asBlock(read))), conflicts: read.conflicts };
  const matches = matchPending(index, pending, deps.chain.blockchain);
  for (const m of matches) if (m.eventType === 'ADDRESS_TOKENS_TRANSACTION_UNCONFIRMED') tokens.set(m, await deps.tokenMetadata?.(m.transfer));
  return { batch, at, pending, matches, tokens, replaceable: new Set(read.replaceableTransactionIds) };
}

/** Commits one prepared batch (its callbacks and its seen rows, in one transaction); returns the callbacks queued. */
async function commitBatch(deps: MempoolDeps, state: MempoolState, prepared: PreparedBatch): Promise<number> {
  const { batch, at, pending, tokens, replaceable } = prepared;
  let matches = prepared.matches;
  const policy = deps.safety ?? safetyPolicy(deps.chain);
  const firstSeen = Math.floor(at.getTime() / 1000);
  if (pending === undefined) {
    for (const id of batch) state.seen.set(id, firstSeen);
    return 0;
  }
  const fired = await deps.db.transaction('mempool:apply-batch', async (tx) => {
    // Replacements (RBF, same nonce) of transactions seen before fire nothing: the replaced one was reported.
    const replacements = await claimConflicts(tx, deps.chain, pending.conflicts, at);
    // Announced transactions these replace (docs/reference/events/address-coins-transaction-unconfirmed-dropped.md): closed, and their DROPPED callbacks queued below.
    const replaced = await droppedCallbacks(tx, deps.chain, await takeReplaced(tx, deps.chain, pending.conflicts), 'replaced');
    // Wallet keys (docs/concepts/wallet-keys.md): a payment to a derived address widens its window, and the batch
    // is matched again against the wider one until it stops growing (a payment to index 19 and one to 38).
    const xpubMatches = (list: PendingMatch[]) => list.filter((m) => m.eventType === 'XPUB_COINS_TRANSACTION_UNCONFIRMED');
    for (let round = 0; round < 1_000 && (await extendForPending(tx, deps.index(), deps.chain, xpubMatches(matches))) > 0; round++) {
      matches = [...matches.filter((m) => m.eventType !== 'XPUB_COINS_TRANSACTION_UNCONFIRMED'), ...matchPendingXpub(deps.index(), pending)];
    }
    const announced: Announcement[] = [];
    const kept = matches.filter((m) => !replacements.has(m.transactionId));
    const targets = await loadCallbackTargets(tx, [...new Set(kept.map((m) => m.subscription.id))]);
    const callbacks: NewCallback[] = [];
    for (const m of kept) {
      const target = targets.get(m.subscription.id);
      // Deleted or deactivated since the index was built.
      if (!target?.isActive) continue;
      const key = pendingIdempotencyKey(m, deps.chain);
      const item = pendingItem(m, deps.chain, firstSeen, tokens.get(m), target.subscribedAs);
      const facts: SafetyFacts = { replaceable: replaceable?.has(m.transactionId) ?? false };
      if (m.eventType === 'ADDRESS_TOKENS_TRANSACTION_UNCONFIRMED') facts.token = { transfer: m.transfer, metadata: tokens.get(m) };
      else if (m.eventType === 'XPUB_COINS_TRANSACTION_UNCONFIRMED') facts.received = smallestReceived(m);
      else if (m.direction === 'incoming') facts.received = { address: m.address, amount: m.amount };
      item.safety = safetyVerdict(facts, policy);
      const { safety: _safety, ...announcedItem } = item;
      announced.push({ transactionId: m.transactionId, subscriptionId: target.id, eventType: m.eventType, item: announcedItem });
      callbacks.push(
        callbackOfEvent({
          customerId: target.customerId,
          subscriptionId: target.id,
          eventType: m.eventType,
          idempotencyKey: key,
          body: callbackBody({ id: target.id, eventType: m.eventType, apiVersion: target.apiVersion }, key, item),
          callbackUrl: target.callbackUrl,
        }),
      );
    }
    const queued = await enqueueCallbacks(tx, [...replaced, ...callbacks]);
    await recordAnnounced(tx, deps.chain, announced, pending.conflicts, at);
    await recordSeen(tx, deps.chain, batch, at);
    return queued;
  });
  for (const id of batch) state.seen.set(id, firstSeen);
  return fired;
}

/** matching and the ledger read blocks: pending transactions stand in for one (the header is never read). */
function asBlock(pending: PendingTransactions): NormalizedBlock {
  return { ...pending, height: 0, hash: '', parentHash: '', timestamp: 0, internalTransfers: [] };
}

/** Bounds the seen-set, in memory and in the store, by age and count. */
async function prune(deps: MempoolDeps, state: MempoolState, at: Date): Promise<void> {
  const maxSeen = deps.maxSeen ?? DEFAULT_MAX_SEEN;
  const oldest = new Date(at.getTime() - (deps.maxSeenAgeMs ?? DEFAULT_MAX_SEEN_AGE_MS));
  const oldestSeconds = Math.floor(oldest.getTime() / 1000);
  // The Map is in age order: drop from the front.
  for (const [id, seen] of state.seen) {
    if (seen >= oldestSeconds && state.seen.size <= maxSeen) break;
    state.seen.delete(id);
  }
  await pruneSeen(deps.db, deps.chain, oldest, maxSeen);
  await pruneAnnounced(deps.db, deps.chain, oldest);
  state.lastPrunedAt = at.getTime();
}

export interface MempoolLoopOptions {
  signal: AbortSignal;
  pollMs: number;
  backoffMinMs?: number;
  backoffMaxMs?: number;
  onRound?: (result: RoundResult) => void;
}

/** Runs rounds until `signal` aborts; a failed round (node, database) is retried with backoff, its backlog kept. */
export async function followMempool(deps: MempoolDeps, state: MempoolState, options: MempoolLoopOptions): Promise<void> {
  const backoff = new Backoff({ firstMs: options.backoffMinMs ?? 500, maxMs: options.backoffMaxMs ?? 10_000 });
  let lastStatus = 0;
  // A push reader's news (ZMQ rawtx, WebSocket newPendingTransactions) ends the sleep, or the next one when
  // it comes during a round.
  const news = new Alarm();
  const stopWatching = deps.reader.watch?.(() => news.ring());
  while (!options.signal.aborted) {
    let failed = false;
    let changed = false;
    news.reset();
    try {
      const result = await pollMempool(deps, state);
      options.onRound?.(result);
      changed = result.read > 0 || state.error !== null;
      state.error = null;
      backoff.reset();
    } catch (error) {
      if (options.signal.aborted) break;
      failed = true;
      state.error = (error as Error).message;
      deps.logger.warn(
        { err: error, blockchain: deps.chain.blockchain, network: deps.chain.network, retryInMs: backoff.next() },
        `mempool round failed; retrying: ${(error as Error).message}`,
      );
    }
    // The status row after a round that read something or failed, else once a second (its lag).
    if (failed || changed || Date.now() - lastStatus >= 1000) {
      lastStatus = Date.now();
      await saveStatus(deps, state).catch(() => undefined);
    }
    if (failed) await sleep(backoff.current(), options.signal);
    else await news.sleep(options.pollMs, options.signal);
  }
  stopWatching?.();
}

async function saveStatus(deps: MempoolDeps, state: MempoolState): Promise<void> {
  await saveMempoolStatus(deps.db, {
    ...deps.chain,
    method: deps.reader.method,
    state: state.error ? 'failing' : state.idle ? 'idle' : 'following',
    lastPolledAt: state.lastPolledAt,
    backlog: state.backlog.length,
    transactionsSeen: state.transactionsSeen,
    callbacksFired: state.callbacksFired,
    error: state.error,
    updatedAt: new Date(),
  });
}
