/**
 * The `evicted` reason of the DROPPED events (docs/concepts/deposit-safety.md#evicted): an announced
 * transaction gone from the node's mempool and in no block. Run by the mempool loop (ingest/mempool.ts)
 * every half span, beside its rounds; a failed check (node slow or down, database) is logged and tried
 * again with backoff, and counts nothing: a node that does not answer is never taken for an empty mempool.
 *
 * Each check asks the node (the one whose mempool the loop reads) about every open announcement and
 * records the answer per announcement (store/dropped.ts recordMissingCheck: consecutive checks missing and
 * the first one's time). One missing at three consecutive checks spanning at least the chain's
 * mempoolEvictionSpanMs is a candidate; the node then proves it is not mined at one tip (MempoolReader
 * provenUnmined: Bitcoin family, an outpoint it spends still in the confirmed UTXO set; EVM, its sender's
 * nonce not past its own), and ONE transaction takes the chain's lock, compares that tip with the
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
import { openAnnounced, recordMissingCheck, takeEvicted } from '../store/dropped.ts';
import { droppedCallbacks } from './dropped.ts';

/** Ten minutes: longer than any node's restart or a pool's switch to another node. */
export const DEFAULT_EVICTION_SPAN_MS = 600_000;
/** Consecutive checks that must find the transaction missing. */
export const EVICTION_CHECKS = 3;
/** Open announced transactions checked per check (oldest first). */
const MAX_CHECKED = 5_000;

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
    const queued = await checkEvictions(deps, now, spanMs);
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

/** One check: the node's answers recorded, then the candidates proven and closed. Returns the callbacks queued. */
export async function checkEvictions(deps: EvictionDeps, at: Date, spanMs: number): Promise<number> {
  const { db, reader, chain } = deps;
  const missing = reader.missing as NonNullable<MempoolReader['missing']>;
  const provenUnmined = reader.provenUnmined as NonNullable<MempoolReader['provenUnmined']>;
  const open = await openAnnounced(db, chain, MAX_CHECKED);
  if (open.length === 0) return 0;
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
  if (due.size === 0) return 0;
  const proof = await provenUnmined(open.filter((o) => due.has(o.transactionId)));
  // The node's tip moved during the reads: nothing proven, the next check tries again.
  if (proof === undefined || proof.unmined.length === 0) return 0;
  return await db.transaction('mempool:evicted', async (tx) => {
    // Under the chain's lock the follower applies no block: its cursor is the tip herald has applied.
    await lockChain(tx, chain);
    const cursor = await getCursor(tx, chain);
    if (cursor === undefined || cursor.state !== 'following' || cursor.hash.toLowerCase() !== proof.tip) return 0;
    const evicted = await takeEvicted(tx, chain, proof.unmined, EVICTION_CHECKS);
    return await enqueueCallbacks(tx, await droppedCallbacks(tx, chain, evicted, 'evicted'), at, { chain });
  });
}
