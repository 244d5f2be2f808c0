/**
 * Bulk subscription creation (README "Bulk subscription creation"): up to BULK_MAX_ITEMS items of one
 * event type, each validated and answered on its own. Items are written in chunks of BULK_CHUNK, one
 * transaction each: the chunk's rows, the customer's counters (triggers) and its charge commit
 * together, so a crash leaves whole chunks, each paid for.
 *
 * Answers, per item: created (charged the single create's price), duplicate (an active subscription
 * with the same identity exists, or an earlier item of the request made one: its referenceId; not
 * charged), or failed with the error a single create of the item would get. When the credits (or the
 * plan's cap on active subscriptions) run out, the new items from there on are not created and answer
 * insufficient_credits (blockchain_events_callbacks_limit_reached): what is created is always a prefix
 * of the request's new items, and only those are paid for.
 */
import type { Blockchain, EventType, Network } from '../domain/chains.ts';
import { ApiError, invalidData } from '../domain/errors.ts';
import { creditBalance, debitCredits } from '../store/customers.ts';
import type { Queryable } from '../store/db.ts';
import { isDomainVerified } from '../store/domains.ts';
import * as store from '../store/subscriptions.ts';
import type { Caller, Common } from './context.ts';
import { assertMainnetAllowed, CREATE_COST, callbackUrlNotVerified, newSubscriptionOf, type SubscriptionItemInput } from './subscriptions.ts';

export const BULK_MAX_ITEMS = 10_000;
/** Items per transaction: short enough that other requests never wait long behind one. */
export const BULK_CHUNK = 1_000;
/** A chunk that lost a race (its debit with another charge, an insert with a twin made meanwhile) is tried again this often. */
const CHUNK_ATTEMPTS = 5;

export type BulkItemResult =
  | { status: 'created'; subscription: store.Subscription }
  | { status: 'duplicate'; referenceId: string }
  | { status: 'failed'; error: ApiError };

export interface BulkOutcome {
  results: BulkItemResult[];
  consumed: bigint;
  available: bigint;
}

function capReached(cap: number): ApiError {
  return new ApiError(
    'blockchain_events_callbacks_limit_reached',
    `The plan allows ${cap} active subscriptions and that many are active: this item and the new ones after it were not created. Delete some, or ask the operator to raise the cap.`,
  );
}

function creditsRanOut(cost: bigint, available: bigint): ApiError {
  return new ApiError(
    'insufficient_credits',
    `Each subscription costs ${cost} credits and the customer has ${available} left: this item and the new ones after it were not created. Ask the operator to add credits (herald credits add), then send them again.`,
  );
}

/**
 * Creates the items (each one already checked against its endpoint's schema, or the ApiError that
 * check gave). `onChunk` is told how many items are done after each chunk (the CLI's progress).
 */
export async function createSubscriptionsInBulk(
  common: Pick<Common, 'config' | 'db'>,
  caller: Caller,
  eventType: EventType,
  blockchain: Blockchain,
  network: Network,
  items: (SubscriptionItemInput | ApiError)[],
  options: { onChunk?: (done: number) => void } = {},
): Promise<BulkOutcome> {
  assertMainnetAllowed(caller, network);
  const customerId = caller.owner.customerId;
  const cost = BigInt(common.config.costs[CREATE_COST[eventType]]);
  const results: BulkItemResult[] = new Array(items.length);
  const candidates: (store.NewSubscription | undefined)[] = new Array(items.length);
  const verified = new Map<string, boolean>();
  /** Identities created by this request (or found active) so far: a later twin item answers with that id. */
  const known = new Map<string, string>();
  let stopped: ApiError | undefined;
  let consumed = 0n;
  let available: bigint | undefined;
  for (let start = 0; start < items.length; start += BULK_CHUNK) {
    const end = Math.min(items.length, start + BULK_CHUNK);
    // Validated chunk by chunk, between the chunks' database round trips: a whole request's worth of
    // address checks and hashing at once would hold the event loop from other requests for too long.
    const indexes: number[] = [];
    for (let i = start; i < end; i++) {
      const item = items[i] as SubscriptionItemInput | ApiError;
      if (item instanceof ApiError) {
        results[i] = { status: 'failed', error: item };
        continue;
      }
      try {
        if (item.fromBlockHeight !== undefined) {
          // A backfill is a job per subscription: not something to start 10,000 of in one request.
          throw invalidData([
            { attribute: 'fromBlockHeight', message: 'A bulk create takes no fromBlockHeight: create a subscription to backfill with the single create.' },
          ]);
        }
        const { candidate, host } = newSubscriptionOf(common, caller, eventType, blockchain, network, item);
        let ok = verified.get(host);
        if (ok === undefined) {
          ok = await isDomainVerified(common.db, customerId, host);
          verified.set(host, ok);
        }
        if (!ok) throw callbackUrlNotVerified(host);
        candidates[i] = candidate;
        indexes.push(i);
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        results[i] = { status: 'failed', error };
      }
    }
    if (stopped) {
      for (const i of indexes) results[i] = { status: 'failed', error: stopped };
    } else if (indexes.length > 0) {
      const chunk = await writeChunk(common, caller, cost, indexes, candidates as store.NewSubscription[], known, start === 0 ? 1 : 0);
      for (const [i, result] of chunk.results) results[i] = result;
      consumed += chunk.consumed;
      available = chunk.available;
      stopped = chunk.stopped;
    }
    for (let i = start; i < end; i++) candidates[i] = undefined; // written: the rows live on in the results
    options.onChunk?.(end);
  }
  return { results, consumed, available: available ?? (await creditBalance(common.db, customerId)) };
}

interface ChunkOutcome {
  results: Map<number, BulkItemResult>;
  consumed: bigint;
  available: bigint;
  /** Set when the credits or the cap ran out in this chunk: the error of every later new item. */
  stopped?: ApiError;
}

async function writeChunk(
  common: Pick<Common, 'config' | 'db'>,
  caller: Caller,
  cost: bigint,
  indexes: number[],
  candidates: store.NewSubscription[],
  known: Map<string, string>,
  /** The request counted in the credit usage: 1 for the request's first chunk, 0 for the others. */
  requests: number,
): Promise<ChunkOutcome> {
  const customerId = caller.owner.customerId;
  for (let attempt = 1; ; attempt++) {
    // The balance is read, not locked: the debit at the end checks it again, and a chunk whose debit
    // finds less (another request of the customer was charged meanwhile) is rolled back and redone.
    // Locking the customer row first would make this chunk's inserts wait, holding it, behind an
    // activation that holds a twin's index entry and waits for the same row.
    const outcome = await common.db
      .transaction('subscriptions:bulk-chunk', async (tx) => {
        const balance = await creditBalance(tx, customerId);
        const affordable = cost === 0n ? Number.POSITIVE_INFINITY : Number(balance / cost);
        const room = await capRoom(tx, caller);
        const limit = Math.min(affordable, room);
        const results = new Map<number, BulkItemResult>();
        const seen = new Map(known);
        const existing = await store.activeByDuplicateKeys(
          tx,
          customerId,
          indexes.flatMap((i) => (candidates[i]?.allowDuplicates ? [] : [(candidates[i] as store.NewSubscription).duplicateKey])),
        );
        const admitted: number[] = [];
        let stopped: ApiError | undefined;
        for (const i of indexes) {
          const c = candidates[i] as store.NewSubscription;
          const key = c.duplicateKey.toString('hex');
          const twin = c.allowDuplicates ? undefined : (seen.get(key) ?? existing.get(key));
          if (twin) {
            results.set(i, { status: 'duplicate', referenceId: twin });
            continue;
          }
          if (!stopped && admitted.length >= limit)
            stopped = affordable <= room ? creditsRanOut(cost, balance - cost * BigInt(admitted.length)) : capReached(caller.owner.maxActiveSubscriptions ?? 0);
          if (stopped) {
            results.set(i, { status: 'failed', error: stopped });
            continue;
          }
          admitted.push(i);
          if (!c.allowDuplicates) seen.set(key, c.id);
        }
        const list = admitted.map((i) => candidates[i] as store.NewSubscription);
        // Twins were looked for above; one made by another request since then fails the statement
        // (unique violation) and the chunk is tried again, finding it.
        const created = await store.insertMany(tx, customerId, list, { twins: 'fail' });
        for (const i of admitted) {
          const c = candidates[i] as store.NewSubscription;
          results.set(i, { status: 'created', subscription: store.createdSubscription(customerId, c, created.get(c.id) as Date) });
        }
        const charge = cost * BigInt(created.size);
        const debit =
          charge === 0n
            ? { ok: true, available: balance }
            : await debitCredits(tx, customerId, charge, [{ endpoint: caller.endpoint, requests, credits: charge }]);
        if (!debit.ok) throw new DebitRace();
        return { results, consumed: charge, available: debit.available, stopped, seen };
      })
      .catch((error) => {
        if (!(error instanceof DebitRace)) throw error;
        if (attempt < CHUNK_ATTEMPTS) return undefined;
        throw new ApiError(
          'service_unavailable',
          `The customer's balance changed while a chunk of this request was written, ${CHUNK_ATTEMPTS} times in a row. Send the items again: those already created answer as duplicates and are not charged again.`,
        );
      });
    if (!outcome) continue;
    for (const [key, id] of outcome.seen) known.set(key, id);
    return outcome;
  }
}

/** Thrown inside a chunk's transaction to roll it back when its debit found the balance lower than read. */
class DebitRace extends Error {}

/** How many more active subscriptions the plan allows (unbounded without a cap); holds the cap lock until the transaction ends. */
async function capRoom(tx: Queryable, caller: Caller): Promise<number> {
  const cap = caller.owner.maxActiveSubscriptions;
  if (cap === null) return Number.POSITIVE_INFINITY;
  await store.lockActiveCap(tx, caller.owner.customerId);
  return Math.max(0, cap - (await store.countActive(tx, caller.owner.customerId)));
}
