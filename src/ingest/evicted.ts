/**
 * The `evicted` reason of the DROPPED events (docs/concepts/deposit-safety.md#evicted): an announced
 * transaction gone from the node's mempool and in no block. Run by the mempool loop (ingest/mempool.ts)
 * every half span, beside its rounds; a failed check (node slow or down, database) is logged and tried
 * again with backoff, and counts nothing: a node that does not answer is never taken for an empty mempool.
 *
 * Each check asks the node (the one whose mempool the loop reads) about the open announcements (MAX_CHECKED
 * of them a check, taken in turn) and records the answer per announcement (store/dropped.ts
 * recordMissingCheck: consecutive checks missing and the first one's time). One missing at three
 * consecutive checks spanning at least the chain's mempoolEvictionSpanMs is a candidate; the node then
 * proves it is not mined at one tip (MempoolReader provenUnmined, PROOF_PART candidates at a time: Bitcoin
 * family, an outpoint it spends still in the confirmed UTXO set; EVM, its sender's nonce not past its own),
 * and ONE transaction per part takes the chain's lock, compares that tip with the
 * follower's cursor (the blocks herald applied, so no block up to it holds the transaction), closes the
 * announcements and queues their DROPPED callbacks, keyed by (subscription, transaction, 'dropped'): a
 * restart never sends one twice, and a block that mined the transaction, applied first, closed its
 * announcement already.
 */
import type { Logger } from 'pino';
import type { MempoolReader } from '../chains/types.ts';
import type { ChainKey } from '../domain/chains.ts';
import { Backoff } from '../lib/loop.ts';
import { enqueueCallbacks } from '../store/callbacks.ts';
import { getCursor, lockChain } from '../store/chain-state.ts';
import type { Db } from '../store/db.ts';
import { type AnnouncedPosition, openAnnounced, recordMissingCheck, takeEvicted } from '../store/dropped.ts';
import { droppedCallbacks } from './dropped.ts';

/** Ten minutes: longer than any node's restart or a pool's switch to another node. */
export const DEFAULT_EVICTION_SPAN_MS = 600_000;
/** Consecutive checks that must find the transaction missing. */
export const EVICTION_CHECKS = 3;
/**
 * Open announced transactions checked per check: the oldest first, then, when there are more, the next ones
 * at the next check, and so on round (the oldest may stay open a day, never provable: they would hold the
 * newer ones out of every check).
 */
export const MAX_CHECKED = 5_000;
/**
 * Candidates proven at once: each part between its own two reads of the node's tip and closed in its own
 * transaction, so that a proof's node calls (EVM: one per candidate) fit between two blocks (one proof of
 * every candidate could take longer than a block of a fast chain at every check, and prove nothing ever).
 */
export const PROOF_PART = 50;

export interface EvictionDeps {
  db: Db;
  reader: MempoolReader;
  chain: ChainKey;
  logger: Pick<Logger, 'warn'>;
  /** docs/reference/configuration.md#chains mempoolEvictionSpanMs; default DEFAULT_EVICTION_SPAN_MS. */
  spanMs?: number;
  now?: () => Date;
}

export interface EvictionState {
  /** Epoch ms before which no check runs (the next half span, or the backoff after a failure). */
  nextAt: number;
  backoff: Backoff;
  /** Callbacks queued so far. */
  evicted: number;
  /** Where the next check's list starts (after the last one the previous check asked about); none: the oldest. */
  after?: AnnouncedPosition;
}

export function newEvictionState(): EvictionState {
  return { nextAt: 0, backoff: new Backoff({ firstMs: 1_000, maxMs: 60_000 }), evicted: 0 };
}

/** One check when due (never throws: a failure is logged and the next check put off); returns the callbacks queued. */
export async function checkEvictionsWhenDue(deps: EvictionDeps, state: EvictionState): Promise<number> {
  if (!deps.reader.missing || !deps.reader.provenUnmined) return 0;
  const now = (deps.now ?? (() => new Date()))();
  if (now.getTime() < state.nextAt) return 0;
  const spanMs = deps.spanMs ?? DEFAULT_EVICTION_SPAN_MS;
  try {
    const queued = await checkEvictions(deps, now, spanMs, state);
    state.backoff.reset();
    state.nextAt = now.getTime() + Math.max(1, Math.floor(spanMs / 2));
    state.evicted += queued;
    return queued;
  } catch (error) {
    const wait = state.backoff.next();
    state.nextAt = now.getTime() + wait;
    deps.logger.warn(
      { err: error, blockchain: deps.chain.blockchain, network: deps.chain.network, retryInMs: wait },
      `eviction check failed; retrying: ${(error as Error).message}`,
    );
    return 0;
  }
}

/**
 * One check: the node's answers recorded, then the candidates proven and closed. Returns the callbacks queued.
 * With `state`, the check asks about the MAX_CHECKED open announced transactions after `state.after` and
 * moves it on (back to the oldest after the last); without, about the oldest MAX_CHECKED.
 */
export async function checkEvictions(deps: EvictionDeps, at: Date, spanMs: number, state?: Pick<EvictionState, 'after'>): Promise<number> {
  const { db, reader, chain } = deps;
  const missing = reader.missing as NonNullable<MempoolReader['missing']>;
  const provenUnmined = reader.provenUnmined as NonNullable<MempoolReader['provenUnmined']>;
  const open = await openAnnounced(db, chain, MAX_CHECKED, state?.after);
  // The next check's list starts after this one's once this one has counted (a failed check counts nothing).
  const next = open.length === MAX_CHECKED ? open[open.length - 1]?.position : undefined;
  if (open.length === 0) {
    if (state) state.after = next;
    return 0;
  }
  const gone = await missing(open.map((o) => o.transactionId));
  const due = new Set(
    await recordMissingCheck(
      db,
      chain,
      open.map((o) => o.transactionId),
      gone,
      at,
      EVICTION_CHECKS,
      spanMs,
    ),
  );
  if (state) state.after = next;
  if (due.size === 0) return 0;
  const candidates = open.filter((o) => due.has(o.transactionId));
  let queued = 0;
  for (let i = 0; i < candidates.length; i += PROOF_PART) {
    const proof = await provenUnmined(candidates.slice(i, i + PROOF_PART));
    // The node's tip moved during the reads: nothing of this part proven, the next check tries again.
    if (proof === undefined || proof.unmined.length === 0) continue;
    queued += await db.transaction('mempool:evicted', async (tx) => {
      // Under the chain's lock the follower applies no block: its cursor is the tip herald has applied.
      await lockChain(tx, chain);
      const cursor = await getCursor(tx, chain);
      if (cursor === undefined || cursor.state !== 'following' || cursor.hash.toLowerCase() !== proof.tip) return 0;
      const evicted = await takeEvicted(tx, chain, proof.unmined, EVICTION_CHECKS);
      return await enqueueCallbacks(tx, await droppedCallbacks(tx, chain, evicted, 'evicted'), at, { chain });
    });
  }
  return queued;
}
