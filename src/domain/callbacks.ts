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
 *
 * `itemTail`: JSON text of the item's last members, already serialised (`,"safety":{...}`), written after
 * the item's own: the same bytes as those members set last on the item, without walking them again for
 * each callback (the block pipeline gives every callback its safety verdict this way: docs/benchmarks.md).
 */
export function callbackBody(
  subscription: CallbackTarget,
  idempotencyKey: string,
  item: Record<string, unknown>,
  options: { isTest?: boolean; itemTail?: string } = {},
): string {
  const text = JSON.stringify({
    apiVersion: subscription.apiVersion,
    referenceId: subscription.id,
    idempotencyKey,
    data: { product: 'BLOCKCHAIN_EVENTS', event: subscription.eventType, ...(options.isTest && { isTest: true }), item },
  });
  const tail = options.itemTail;
  if (tail === undefined || tail === '') return text;
  // The item is data's last member and data the body's: the text ends with the item's closing brace and two
  // more. An empty item takes the tail without its leading comma.
  const empty = text.charCodeAt(text.length - 4) === 123;
  return `${text.slice(0, -3)}${empty ? tail.slice(1) : tail}}}}`;
}
