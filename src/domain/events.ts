/**
 * Events between matching and the outbox: what the follower keeps of a matched event until its
 * confirmations are reached, and what it needs of the subscription to build the callback. No I/O;
 * the store maps its rows to these (src/store/chain-state.ts).
 */
import type { CallbackEventType, EventType } from './chains.ts';
import { uuidV7 } from './ids.ts';

/**
 * A matched event whose block is not yet deep enough: the follower keeps it (with its callback body
 * built) until the chain reaches `dueHeight`, and a reorganisation deletes it with its block.
 */
export interface PendingEvent {
  subscriptionId: string;
  customerId: string;
  blockHeight: number;
  blockHash: string;
  dueHeight: number;
  idempotencyKey: string;
  body: string;
  /** null: a pull-only subscription's (docs/concepts/event-stream.md#pull-only-subscriptions). */
  callbackUrl: string | null;
  eventType: EventType;
}

/** A callback the follower enqueued, by the block its event was mined in. */
export interface BlockCallback {
  blockHeight: number;
  subscriptionId: string;
  idempotencyKey: string;
}

/** What the follower needs of a matched subscription to build its callback. */
export interface CallbackTargetRow {
  id: string;
  customerId: string;
  eventType: EventType;
  /** null: a pull-only subscription's (no callback is sent; its events are in the stream only). */
  callbackUrl: string | null;
  apiVersion: string;
  isActive: boolean;
  /** The transaction id or address as the customer spelled it when subscribing (callbacks echo it); null for threshold subscriptions. */
  subscribedAs: string | null;
}

/** A callback to add to the outbox (src/store/callbacks.ts enqueueCallbacks). */
export interface NewCallback<E extends CallbackEventType = EventType> {
  id: string;
  customerId: string;
  subscriptionId: string;
  eventType: E;
  idempotencyKey: string;
  body: string;
  /**
   * null: a pull-only subscription's event, stored already finished (cancelled, outcome pull_only) so
   * that the event stream reads it and delivery never does (docs/concepts/event-stream.md#pull-only-subscriptions).
   */
  callbackUrl: string | null;
}

/**
 * The callback of an event due now (a block's match, a mempool sighting, a pending event of chain following
 * or a block job) under a new id: every new callback's id is made here, time-ordered (domain/ids.ts).
 */
export function callbackOfEvent<E extends CallbackEventType = EventType>(e: Omit<NewCallback<E>, 'id'>): NewCallback<E> {
  return {
    id: uuidV7(),
    customerId: e.customerId,
    subscriptionId: e.subscriptionId,
    eventType: e.eventType,
    idempotencyKey: e.idempotencyKey,
    body: e.body,
    callbackUrl: e.callbackUrl,
  };
}
