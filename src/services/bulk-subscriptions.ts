/**
 * Bulk subscription creation (docs/guides/bulk-import.md): up to BULK_MAX_ITEMS items of one
 * event type, each validated and answered on its own. Items are written in chunks of BULK_CHUNK, one
 * transaction each: the chunk's rows, the customer's counters (triggers) and its charge commit
 * together (one statement inserts the rows and debits their price, both or neither), so a crash leaves
 * whole chunks, each paid for.
 *
 * The event loop is shared with other customers' requests: items are checked a slice at a time with
 * a yield between slices, and the next chunk is checked while the previous one is being written
 * (the database works while this process validates: the two overlap instead of taking turns).
 *
 * Answers, per item: created (charged the single create's price), duplicate (an active subscription
 * with the same identity exists, or an earlier item of the request made one: its referenceId; not
 * charged), or failed with the error a single create of the item would get. When the credits (or the
 * plan's cap on active subscriptions) run out, the new items from there on are not created and answer
 * insufficient_credits (blockchain_events_callbacks_limit_reached): what is created is always a prefix
 * of the request's new items, and only those are paid for.
 */

import { setImmediate as yieldToOthers } from 'node:timers/promises';
import type { Blockchain, EventType, Network } from '../domain/chains.ts';
import { ApiError, invalidData } from '../domain/errors.ts';
import type { NewSubscription, Subscription } from '../domain/subscriptions.ts';
import { creditBalance } from '../store/customers.ts';
import { DbError, type Queryable } from '../store/db.ts';
import { isDomainVerified } from '../store/domains.ts';
import * as store from '../store/subscriptions.ts';
import { bulkChunkTurns } from './bulk-turns.ts';
import { defaultPolicyFor } from './confirmation-policies.ts';
import type { Caller, Common } from './context.ts';
import { assertChainFollowed } from './followed-chains.ts';
import { watchAfterCommit } from './subscribed-addresses.ts';
import { assertMainnetAllowed, CREATE_COST, callbackUrlNotVerified, newSubscriptionOf, type SubscriptionItemInput } from './subscriptions.ts';

export const BULK_MAX_ITEMS = 10_000;
/** Items per transaction: short enough that other requests never wait long behind one. */
export const BULK_CHUNK = 1_000;
/** A chunk that lost a race (its debit with another charge, an insert with a twin made meanwhile) is tried again this often. */
const CHUNK_ATTEMPTS = 5;
/**
 * Items checked between two yields to the event loop: a slice takes a few milliseconds, so another
 * customer's request waits at most that long behind a bulk one (a whole chunk at once took tens).
 */
const SLICE = 200;

export type BulkItemResult =
  | { status: 'created'; subscription: Subscription }
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
 * Refuses a bulk request (402) when the customer cannot pay for even one item: checked before its body
 * is read and parsed, since the price per item is the endpoint's. (Items that turn out duplicates would
 * be free; a customer without credits sends them again once it has some.)
 */
export async function assertCanPayOneItem(common: Pick<Common, 'config' | 'db'>, caller: Caller, eventType: EventType): Promise<void> {
  const cost = BigInt(common.config.costs[CREATE_COST[eventType]]);
  if (cost === 0n) return;
  const available = await creditBalance(common.db, caller.owner.customerId);
  if (available < cost) {
    throw new ApiError(
      'insufficient_credits',
      `Each subscription of this endpoint costs ${cost} credits and the customer has ${available}, so none of the items could be created. Ask the operator to add credits (herald credits add), then send the request again.`,
    );
  }
}

/**
 * Creates the items. `validate` checks one raw item against its endpoint's schema (the ApiError that
 * check gives, or undefined): done here, chunk by chunk, rather than for the whole request up front.
 * `onChunk` is told how many items are done after each chunk (the CLI's progress). `onResults`, when
 * given, is handed each chunk's results (the items from `start` on, in order) as soon as they are final,
 * and awaited; the outcome's `results` are then left empty. The API answers that way: it turns them into
 * answer text at once, so a 10,000-item request does not keep 10,000 result objects alive until its end
 * (they outlived many young-generation collections, each copying them: pauses other requests wait behind).
 */
export async function createSubscriptionsInBulk(
  common: Pick<Common, 'config' | 'db' | 'lowPriorityDb'> & Partial<Pick<Common, 'logger'>>,
  caller: Caller,
  eventType: EventType,
  blockchain: Blockchain,
  network: Network,
  items: readonly unknown[],
  validate: (item: unknown) => ApiError | undefined,
  options: { onChunk?: (done: number) => void; onResults?: (start: number, results: BulkItemResult[]) => void | Promise<void> } = {},
): Promise<BulkOutcome> {
  assertMainnetAllowed(caller, network);
  await assertChainFollowed(common, blockchain, network);
  const customerId = caller.owner.customerId;
  // The customer's default confirmation policy for the chain, read once for the request.
  const defaultPolicy = await defaultPolicyFor(common, customerId, eventType, { blockchain, network }, items);
  const cost = BigInt(common.config.costs[CREATE_COST[eventType]]);
  const results: BulkItemResult[] = new Array(items.length);
  const verified = new Map<string, boolean>();
  /** Identities created by this request (or found active) so far: a later twin item answers with that id. */
  const known = new Map<string, string>();
  let stopped: ApiError | undefined;
  let consumed = 0n;
  let available: bigint | undefined;

  /** Checks the items of one chunk (no writes): the valid ones become candidates, the others failed results. */
  const check = async (start: number): Promise<Checked> => {
    const end = Math.min(items.length, start + BULK_CHUNK);
    const candidates: NewSubscription[] = [];
    const indexes: number[] = [];
    for (let i = start; i < end; i++) {
      if (i > start && (i - start) % SLICE === 0) await yieldToOthers();
      try {
        const invalid = validate(items[i]);
        if (invalid) throw invalid;
        const item = items[i] as SubscriptionItemInput;
        if (item.fromBlockHeight !== undefined) {
          // A backfill is a job per subscription: not something to start 10,000 of in one request.
          throw invalidData([
            { attribute: 'fromBlockHeight', message: 'A bulk create takes no fromBlockHeight: create a subscription to backfill with the single create.' },
          ]);
        }
        const { candidate, host } = newSubscriptionOf(common, caller, eventType, blockchain, network, item, defaultPolicy);
        // A pull-only item (no host) sends no callbacks: no domain to verify.
        if (host !== null) {
          let ok = verified.get(host);
          if (ok === undefined) {
            ok = await isDomainVerified(common.db, customerId, host);
            verified.set(host, ok);
          }
          if (!ok) throw callbackUrlNotVerified(host);
        }
        candidates.push(candidate);
        indexes.push(i);
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        results[i] = { status: 'failed', error };
      }
    }
    return { indexes, candidates };
  };

  let checking: Promise<Checked> | undefined = items.length > 0 ? check(0) : undefined;
  for (let start = 0; checking; start += BULK_CHUNK) {
    const { indexes, candidates } = await checking;
    // The next chunk is checked while this one is written. Its failure is seen when it is awaited.
    checking = start + BULK_CHUNK < items.length ? check(start + BULK_CHUNK) : undefined;
    checking?.catch(() => undefined);
    if (stopped) {
      for (const i of indexes) results[i] = { status: 'failed', error: stopped };
    } else if (indexes.length > 0) {
      // One chunk at a time in the whole process, with a rest after it (bulk-turns.ts): other customers' statements come first.
      const chunk = await bulkChunkTurns.run(() => writeChunk(common, caller, cost, indexes, candidates, known, start === 0 ? 1 : 0));
      for (const [i, result] of chunk.results) results[i] = result;
      // Outside the chunk's turn: it may wait for the chain's follower (services/subscribed-addresses.ts).
      const created = [...chunk.results.values()].flatMap((r) => (r.status === 'created' ? [r.subscription] : []));
      await watchAfterCommit(common, { blockchain, network }, customerId, created);
      consumed += chunk.consumed;
      available = chunk.available;
      stopped = chunk.stopped;
    }
    const end = Math.min(items.length, start + BULK_CHUNK);
    if (options.onResults) {
      await options.onResults(start, results.slice(start, end));
      results.fill(undefined as unknown as BulkItemResult, start, end);
    }
    options.onChunk?.(end);
  }
  return { results: options.onResults ? [] : results, consumed, available: available ?? (await creditBalance(common.db, customerId)) };
}

/** A checked chunk: the candidates of its valid items, `candidates[k]` made from the item at `indexes[k]`. */
interface Checked {
  indexes: number[];
  candidates: NewSubscription[];
}

interface ChunkOutcome {
  results: Map<number, BulkItemResult>;
  consumed: bigint;
  available: bigint;
  /** Set when the credits or the cap ran out in this chunk: the error of every later new item. */
  stopped?: ApiError;
}

/**
 * Writes one chunk: `candidates[k]` is the item at `indexes[k]`. Without a cap on active
 * subscriptions, two statements and no explicit transaction: one read (balance, twins), then one
 * statement that inserts the admitted rows and debits their price, both or neither. A read gone stale
 * (another charge lowered the balance: nothing is written; a twin committed meanwhile: the statement
 * fails on subscriptions_no_twins) is decided again. With a cap, the same two statements: the write
 * takes the customer's cap lock and counts under it (insertManyPaid), so a count grown since the read
 * is stale too.
 */
async function writeChunk(
  common: Pick<Common, 'config' | 'db' | 'lowPriorityDb'>,
  caller: Caller,
  cost: bigint,
  indexes: number[],
  candidates: NewSubscription[],
  known: Map<string, string>,
  /** The request counted in the credit usage: 1 for the request's first chunk, 0 for the others. */
  requests: number,
): Promise<ChunkOutcome> {
  for (let attempt = 1; ; attempt++) {
    try {
      // On the low-priority pool: the chunk's statements give way to other customers' (docs/guides/bulk-import.md "Sharing the service").
      const outcome = await decideAndWrite(common.lowPriorityDb ?? common.db, caller, cost, indexes, candidates, known, requests);
      if (outcome) {
        for (const [key, id] of outcome.seen) known.set(key, id);
        return outcome;
      }
    } catch (error) {
      // A twin committed since the read (unique violation), or a deadlock with a concurrent activation.
      const race = error instanceof DbError && (error.isUniqueViolation || error.sqlstate === '40P01');
      if (!race) throw error;
    }
    if (attempt >= CHUNK_ATTEMPTS) {
      throw new ApiError(
        'service_unavailable',
        `The customer's balance or subscriptions changed while a chunk of this request was written, ${CHUNK_ATTEMPTS} times in a row. Send the items again: those already created answer as duplicates and are not charged again.`,
      );
    }
  }
}

/** One attempt of writeChunk: undefined when the balance went lower than read (nothing written). */
async function decideAndWrite(
  q: Queryable,
  caller: Caller,
  cost: bigint,
  indexes: number[],
  candidates: NewSubscription[],
  known: Map<string, string>,
  requests: number,
): Promise<(ChunkOutcome & { seen: Map<string, string> }) | undefined> {
  const customerId = caller.owner.customerId;
  const cap = caller.owner.maxActiveSubscriptions;
  const read = await store.beforeBulkChunk(
    q,
    customerId,
    candidates.flatMap((c) => (c.allowDuplicates ? [] : [c.duplicateKey])),
  );
  const balance = read.credits;
  const affordable = cost === 0n ? Number.POSITIVE_INFINITY : Number(balance / cost);
  const room = cap === null ? Number.POSITIVE_INFINITY : Math.max(0, cap - read.active);
  const limit = Math.min(affordable, room);
  const results = new Map<number, BulkItemResult>();
  const seen = new Map<string, string>();
  const admitted: number[] = [];
  let stopped: ApiError | undefined;
  candidates.forEach((c, k) => {
    const i = indexes[k] as number;
    const key = c.duplicateKey.toString('hex');
    const twin = c.allowDuplicates ? undefined : (seen.get(key) ?? known.get(key) ?? read.twins.get(key));
    if (twin) {
      results.set(i, { status: 'duplicate', referenceId: twin });
      return;
    }
    if (!stopped && admitted.length >= limit)
      stopped = affordable <= room ? creditsRanOut(cost, balance - cost * BigInt(admitted.length)) : capReached(cap ?? 0);
    if (stopped) {
      results.set(i, { status: 'failed', error: stopped });
      return;
    }
    admitted.push(k);
    if (!c.allowDuplicates) seen.set(key, c.id);
  });
  const list = admitted.map((k) => candidates[k] as NewSubscription);
  const charge = cost * BigInt(list.length);
  let created: Map<string, Date>;
  let available = balance;
  // With a cap, the write counts under the cap lock itself (as a group of single creates does): the
  // chunk fits when at most cap - n were active; a count grown since the read writes nothing and the
  // chunk is decided again.
  const capBound = cap !== null && list.length > 0 ? { activeAtMost: cap - list.length } : undefined;
  if (charge > 0n || capBound) {
    const usage = charge > 0n ? [{ endpoint: caller.endpoint, requests, credits: charge }] : [];
    const paid = await store.insertManyPaid(q, customerId, list, { cost: charge, usage }, capBound);
    if (!paid) return undefined;
    created = paid.created;
    available = paid.available;
  } else {
    created = await store.insertMany(q, customerId, list, { twins: 'fail' });
  }
  for (const k of admitted) {
    const c = candidates[k] as NewSubscription;
    results.set(indexes[k] as number, { status: 'created', subscription: store.createdSubscription(customerId, c, created.get(c.id) as Date) });
  }
  return { results, consumed: charge, available, stopped, seen };
}
