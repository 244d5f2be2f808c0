/**
 * Bulk recovery (extension, docs/guides/recover-and-replay.md "Recovering callbacks"): start a job that queues again the failed
 * callbacks of a time window (of one subscription, or of every subscription with a callbackUrl), and
 * read its progress. The job itself runs in the delivery role (src/delivery/recovery.ts), which charges
 * costs.recoverPerCallback per callback as it queues each chunk.
 */
import { randomUUID } from 'node:crypto';
import type { EventType } from '../domain/chains.ts';
import { ApiError, invalidData, notFound, pullOnlySubscription } from '../domain/errors.ts';
import { isUuid } from '../domain/ids.ts';
import { creditBalance } from '../store/customers.ts';
import type { Queryable } from '../store/db.ts';
import * as store from '../store/recoveries.ts';
import { getSubscription } from '../store/subscriptions.ts';
import type { Caller, Charged, Common } from './context.ts';

export interface RecoverWindow {
  /** Unix seconds: callbacks created at or after this... */
  since: number;
  /** ...and before this (default: now). */
  until?: number;
  includeCancelled?: boolean;
}

/** since/until as dates; until defaults to now and is never later than now (the window is closed when the job starts). */
function windowOf(input: RecoverWindow, now: Date, attribute = 'since'): { since: Date; until: Date } {
  const nowSeconds = now.getTime() / 1000;
  const details = [];
  if (input.since > nowSeconds) details.push({ attribute, message: `${attribute} is in the future; give a Unix time in seconds, at most now.` });
  if (input.until !== undefined && input.until <= input.since) details.push({ attribute: 'until', message: 'until must be later than since.' });
  if (details.length > 0) throw invalidData(details);
  const until = input.until === undefined || input.until > nowSeconds ? now : new Date(input.until * 1000);
  return { since: new Date(input.since * 1000), until };
}

/**
 * Creates the job in the caller's transaction. It needs at least the price of one callback in credits
 * to start (402 otherwise): the job charges as it goes, and a job that could queue nothing is a
 * mistake better answered at once. Nothing is charged here.
 */
export async function startRecoveryIn(
  tx: Queryable,
  common: Common,
  customerId: string,
  scope: store.RecoveryScope,
  filtered = false,
): Promise<store.Recovery> {
  const per = BigInt(common.config.costs.recoverPerCallback);
  const available = await creditBalance(tx, customerId);
  if (available < per) {
    throw new ApiError(
      'insufficient_credits',
      `A recovery costs ${per} credits per callback queued again and the customer has ${available}. Ask the operator to add credits (herald credits add).`,
    );
  }
  return await store.createRecovery(tx, randomUUID(), customerId, scope, filtered);
}

/** The scope of activate's recoverSince: that subscription's callbacks since then. */
export function activationScope(subscriptionId: string, recoverSince: number, now: Date): store.RecoveryScope {
  return { subscriptionId, ...windowOf({ since: recoverSince }, now, 'recoverSince'), includeCancelled: false };
}

async function balance(common: Common, customerId: string) {
  return { consumed: 0n, available: await creditBalance(common.db, customerId) };
}

export async function recoverSubscription(common: Common, caller: Caller, id: string, input: RecoverWindow): Promise<Charged<store.Recovery>> {
  if (!isUuid(id)) throw notFound('subscription', id);
  const customerId = caller.owner.customerId;
  const now = new Date();
  const window = windowOf(input, now);
  const recovery = await common.db.transaction('recoveries:start-subscription', async (tx) => {
    const s = await getSubscription(tx, customerId, id);
    if (!s) throw notFound('subscription', id);
    if (s.callbackUrl === null) throw pullOnlySubscription(id, 'a recovery');
    if (!s.isActive) {
      throw new ApiError(
        'invalid_data',
        `Subscription '${id}' is not active, so callbacks queued again would not be sent. Activate it with recoverSince (POST /blockchain-events/subscriptions/${id}/activate?recoverSince=...) to do both at once.`,
        [{ attribute: 'referenceId', message: 'The subscription is inactive.' }],
      );
    }
    return await startRecoveryIn(tx, common, customerId, { subscriptionId: id, ...window, includeCancelled: input.includeCancelled ?? false });
  });
  return { value: recovery, ...(await balance(common, customerId)) };
}

/** The schema has checked eventType, blockchain and network against their lists. */
export type RecoverCallbacksInput = RecoverWindow & {
  callbackUrl?: string;
  referenceId?: string;
  eventType?: EventType;
  blockchain?: string;
  network?: string;
  dryRun?: boolean;
};
/**
 * Jobs started by POST /blockchain-events/callbacks/recover that one customer may have unfinished (queued or
 * running) at once: one more is refused with 429 until one is done (docs/reference/api.md#recover-callbacks-by-filter).
 * A job's size is bounded by the customer's credits (charged as it queues); this bounds how many of them
 * one customer puts ahead of the others' in the delivery role's runner, which gives each customer's jobs
 * turns (src/delivery/recovery.ts).
 */
export const MAX_UNFINISHED_RECOVERIES_PER_CUSTOMER = 3;

export interface RecoverableCount {
  found: number;
  inactive: number;
  inactiveSubscriptions: number;
}

/**
 * The failed callbacks of the customer's active subscriptions matching the Deliveries page's filters
 * (subscription, callbackUrl, event type, chain, creation window), queued again as one background job;
 * or, with dryRun, how many that would be and how many of the same filters it leaves because their
 * subscription is inactive (nothing started, nothing charged).
 */
export async function recoverCallbacks(
  common: Common,
  caller: Caller,
  input: RecoverCallbacksInput,
): Promise<Charged<{ job: store.Recovery } | { count: RecoverableCount }>> {
  // Matched exactly against the subscriptions' callbackUrl; a value that is not even an https URL is a mistake to say so.
  if (input.callbackUrl !== undefined && (!URL.canParse(input.callbackUrl) || new URL(input.callbackUrl).protocol !== 'https:')) {
    throw invalidData([{ attribute: 'callbackUrl', message: 'Give the https callbackUrl of the subscriptions, exactly as they were created with it.' }]);
  }
  if (input.callbackUrl !== undefined && input.referenceId !== undefined) {
    throw invalidData([{ attribute: 'referenceId', message: 'Give referenceId or callbackUrl, not both: a subscription has one callbackUrl.' }]);
  }
  const customerId = caller.owner.customerId;
  if (input.referenceId !== undefined && !isUuid(input.referenceId)) throw notFound('subscription', input.referenceId);
  const window = windowOf(input, new Date());
  const scope: store.RecoveryScope = {
    ...(input.referenceId !== undefined && { subscriptionId: input.referenceId }),
    ...(input.callbackUrl !== undefined && { callbackUrl: input.callbackUrl }),
    ...(input.eventType !== undefined && { eventType: input.eventType }),
    ...(input.blockchain !== undefined && { blockchain: input.blockchain }),
    ...(input.network !== undefined && { network: input.network }),
    ...window,
    includeCancelled: input.includeCancelled ?? false,
  };
  if (input.dryRun) {
    const count = await store.countRecoverable(common.db, customerId, scope);
    return { value: { count }, ...(await balance(common, customerId)) };
  }
  const recovery = await common.db.transaction('recoveries:start-filtered', async (tx) => {
    // The customer's row is locked so that two starts at once cannot both pass the cap.
    await tx.query('recoveries:lock-customer', 'SELECT 1 FROM customers WHERE id = $1 FOR UPDATE', [customerId]);
    const unfinished = await store.countUnfinishedFilteredRecoveries(tx, customerId);
    if (unfinished >= MAX_UNFINISHED_RECOVERIES_PER_CUSTOMER) {
      throw new ApiError(
        'request_limit_reached',
        `This customer has ${unfinished} recoveries started here still running, the most it may have at once (${MAX_UNFINISHED_RECOVERIES_PER_CUSTOMER}). Start this one when one of them is done (GET /blockchain-events/recoveries/{recoveryId}).`,
      );
    }
    return await startRecoveryIn(tx, common, customerId, scope, true);
  });
  return { value: { job: recovery }, ...(await balance(common, customerId)) };
}

export async function getRecovery(common: Common, caller: Caller, id: string): Promise<Charged<store.RecoveryProgress>> {
  const found = isUuid(id) ? await store.getRecovery(common.db, caller.owner.customerId, id) : undefined;
  if (!found) throw notFound('recovery', id);
  return { value: found, ...(await common.credits.charge(caller.owner.customerId, BigInt(common.config.costs.getSubscription), caller.endpoint)) };
}
