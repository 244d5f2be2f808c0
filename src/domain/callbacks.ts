/**
 * The callback payload (docs/reference/events/README.md#body), built once into the exact text that is POSTed and
 * signed. Producers (chain following) and test callbacks both use this.
 */
import type { CallbackEventType } from './chains.ts';

export interface CallbackTarget {
  id: string;
  eventType: CallbackEventType;
  apiVersion: string;
}

/**
 * `isTest` marks a test callback inside the signed body (`data.isTest: true`), so that a receiver that
 * verifies the signature can also trust the marker; real callbacks leave the field out.
 */
export function callbackBody(subscription: CallbackTarget, idempotencyKey: string, item: Record<string, unknown>, options: { isTest?: boolean } = {}): string {
  return JSON.stringify({
    apiVersion: subscription.apiVersion,
    referenceId: subscription.id,
    idempotencyKey,
    data: { product: 'BLOCKCHAIN_EVENTS', event: subscription.eventType, ...(options.isTest && { isTest: true }), item },
  });
}
