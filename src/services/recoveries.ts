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
export async function startRecoveryIn(tx: Queryable, common: Common, customerId: string, scope: store.RecoveryScope): Promise<store.Recovery> {
  const per = BigInt(common.config.costs.recoverPerCallback);
  const available = await creditBalance(tx, customerId);
  if (available < per) {
    throw new ApiError(
      'insufficient_credits',
      `A recovery costs ${per} credits per callback queued again and the customer has ${available}. Ask the operator to add credits (herald credits add).`,
    );
  }
  return await store.createRecovery(tx, randomUUID(), customerId, scope);
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

/** The schema has checked eventType against the event types. */
export type RecoverByUrlInput = RecoverWindow & { callbackUrl: string; eventType?: EventType };

export async function recoverByUrl(common: Common, caller: Caller, input: RecoverByUrlInput): Promise<Charged<store.Recovery>> {
  // Matched exactly against the subscriptions' callbackUrl; a value that is not even an https URL is a mistake to say so.
  if (!URL.canParse(input.callbackUrl) || new URL(input.callbackUrl).protocol !== 'https:') {
    throw invalidData([{ attribute: 'callbackUrl', message: 'Give the https callbackUrl of the subscriptions, exactly as they were created with it.' }]);
  }
  const customerId = caller.owner.customerId;
  const window = windowOf(input, new Date());
  const recovery = await common.db.transaction('recoveries:start-url', (tx) =>
    startRecoveryIn(tx, common, customerId, {
      callbackUrl: input.callbackUrl,
      ...(input.eventType !== undefined && { eventType: input.eventType }),
      ...window,
      includeCancelled: input.includeCancelled ?? false,
    }),
  );
  return { value: recovery, ...(await balance(common, customerId)) };
}

export async function getRecovery(common: Common, caller: Caller, id: string): Promise<Charged<store.RecoveryProgress>> {
  const found = isUuid(id) ? await store.getRecovery(common.db, caller.owner.customerId, id) : undefined;
  if (!found) throw notFound('recovery', id);
  return { value: found, ...(await common.credits.charge(caller.owner.customerId, BigInt(common.config.costs.getSubscription), caller.endpoint)) };
}
