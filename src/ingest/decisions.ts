/**
 * The ingest role's decisions (service.ts), as pure functions: which announced change supersedes which,
 * what an announced row does to the matching index, what a follower's step sets off, how long the
 * opening balances wait, how often the mempool is read. service.ts keeps the loops, timers and I/O.
 */
import type { ChainKey } from '../domain/chains.ts';
import type { IndexableSubscription } from '../domain/subscriptions.ts';
import type { SubscriptionChange, SubscriptionRangeChange } from '../store/changes.ts';
import type { StepResult } from './follower.ts';

export type AnnouncedChange = SubscriptionChange | SubscriptionRangeChange;

/** Between two runs of a chain's opening balances while blocks keep coming (catching up; none once caught up). */
export const OPENINGS_MIN_GAP_MS = 1_000;
/** The mempool's round without a poll interval configured. */
const DEFAULT_MEMPOOL_POLL_MS = 1_000;

/** The followed chain an announcement is about ('ethereum/mainnet'). */
export function chainIdOf(chain: Pick<ChainKey, 'blockchain' | 'network'> | Pick<AnnouncedChange, 'blockchain' | 'network'>): string {
  return `${chain.blockchain}/${chain.network}`;
}

/**
 * What identifies an announced change while it waits: the subscription (its row is read afresh, so the
 * last announcement of it is enough), or the bulk-created range itself.
 */
export function changeKey(change: AnnouncedChange): string {
  return change.op === 'INSERT_RANGE' ? `range:${change.customerId}/${change.blockchain}/${change.network}/${change.from}/${change.to}` : change.id;
}

/** A batch of announcements split into single rows (read in one query) and bulk ranges (one query each). */
export function splitChanges(batch: readonly AnnouncedChange[]): { single: SubscriptionChange[]; ranges: SubscriptionRangeChange[] } {
  return {
    single: batch.filter((c): c is SubscriptionChange => c.op !== 'INSERT_RANGE'),
    ranges: batch.filter((c): c is SubscriptionRangeChange => c.op === 'INSERT_RANGE'),
  };
}

/**
 * The changes of a failed batch put back to wait, except where a newer announcement of the same key
 * arrived meanwhile (it is the one to apply).
 */
export function requeueFailed(pending: Map<string, AnnouncedChange>, batch: readonly AnnouncedChange[]): void {
  for (const change of batch) if (!pending.has(changeKey(change))) pending.set(changeKey(change), change);
}

/**
 * What an announced row, read afresh, does to the matching index: removed when gone or inactive, else
 * indexed, and for the kinds an already-mined transaction or a reached height would satisfy at once,
 * checked (ingest/already-mined.ts).
 */
export type IndexUpdate = { kind: 'remove' } | { kind: 'add'; check?: { kind: 'transaction'; transactionId: string } | { kind: 'height'; height: number } };

export function indexUpdateOf(row: IndexableSubscription | undefined): IndexUpdate {
  if (!row?.isActive) return { kind: 'remove' };
  if (row.eventType === 'TRANSACTION_MINED' && row.target) return { kind: 'add', check: { kind: 'transaction', transactionId: row.target } };
  if (row.eventType === 'BLOCK_HEIGHT_REACHED' && typeof row.blockHeight === 'number')
    return { kind: 'add', check: { kind: 'height', height: row.blockHeight } };
  return { kind: 'add' };
}

/** What a follower's step sets off beside it (besides counting and logging an applied block). */
export interface StepEffects {
  /** Counted in the chain's reorganisations. */
  reorganised: boolean;
  /** The opening balances run again; `caughtUp`: at once, not after OPENINGS_MIN_GAP_MS. */
  openings?: { caughtUp: boolean };
  /** The follower has reached the head, or found its chain stopped: the start-up look-back may run. */
  headReached: boolean;
}

export function stepEffectsOf(result: StepResult): StepEffects {
  return {
    reorganised: result.kind === 'reorganised',
    openings: result.kind === 'applied' || result.kind === 'caught-up' ? { caughtUp: result.kind === 'caught-up' } : undefined,
    headReached: result.kind === 'caught-up' || result.kind === 'stopped',
  };
}

/**
 * How long the next run of a chain's opening balances waits: none once the follower is caught up (an
 * opening is not left pending at the head of the chain), else until OPENINGS_MIN_GAP_MS after the last
 * run started (one run a second at most while catching up).
 */
export function openingsWaitMs(lastRunAt: number | undefined, now: number, caughtUp: boolean): number {
  return caughtUp ? 0 : Math.max(0, (lastRunAt ?? 0) + OPENINGS_MIN_GAP_MS - now);
}

/**
 * The mempool loop's round. A push reader (ZMQ, WebSocket) decides itself when to poll its node
 * (mempoolPollIntervalMs, 30 s by default there) and its news wakes the loop at once; a round at least
 * every second lets it see a gap. A polling reader polls at the configured interval.
 */
export function mempoolRoundMs(configuredMs: number | undefined, pushes: boolean): number {
  const ms = configuredMs ?? DEFAULT_MEMPOOL_POLL_MS;
  return pushes ? Math.min(ms, DEFAULT_MEMPOOL_POLL_MS) : ms;
}
