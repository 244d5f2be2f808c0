/** The callback log and tools (extension): list, resend, test. */

import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { BLOCKCHAINS, EVENT_TYPES, type EventType, NETWORKS } from '../../domain/chains.ts';
import { unixSeconds } from '../../domain/time.ts';
import * as service from '../../services/callbacks.ts';
import type { Common } from '../../services/context.ts';
import type { CallbackLogEntry } from '../../store/callbacks.ts';
import { sendData, sendJsonText } from '../envelope.ts';
import { ContextQuery, envelope, PageQuery, page } from '../schemas.ts';

const Attempt = Type.Object({
  attempt: Type.Integer(),
  timestamp: Type.Integer({ description: 'When the attempt started (Unix seconds).' }),
  durationMs: Type.Integer(),
  httpStatus: Type.Union([Type.Integer(), Type.Null()]),
  error: Type.Union([Type.Object({ class: Type.String(), message: Type.String() }), Type.Null()]),
});
function attemptItem(a: CallbackLogEntry['attempts'][number]) {
  return {
    attempt: a.attempt,
    timestamp: unixSeconds(a.startedAt),
    durationMs: a.durationMs,
    httpStatus: a.httpStatus,
    error: a.errorClass ? { class: a.errorClass, message: a.errorMessage ?? '' } : null,
  };
}

/** What each callback item shows of its callback, before the route's own fields and the attempts. */
function callbackFields(c: CallbackLogEntry) {
  return {
    callbackId: c.id,
    idempotencyKey: c.idempotencyKey,
    event: c.eventType,
    status: c.status,
    outcome: c.outcome,
    sequence: c.sequence,
    createdTimestamp: unixSeconds(c.createdAt),
    nextAttemptTimestamp: c.status === 'pending' && c.nextAttemptAt ? unixSeconds(c.nextAttemptAt) : null,
  };
}

const CallbackItem = Type.Object({
  callbackId: Type.String(),
  idempotencyKey: Type.String(),
  event: Type.String(),
  status: Type.String({ description: 'pending, delivered, failed or cancelled' }),
  outcome: Type.Union([Type.String(), Type.Null()], { description: 'Why it failed or was cancelled, e.g. callback_url_gone.' }),
  sequence: Type.Union([Type.Integer(), Type.Null()], {
    description:
      'Its x-callback-sequence: 1, 2, 3, ... per subscription in event order. A number whose callback is cancelled (reorganised) is never sent. Null for callbacks older than the numbering.',
  }),
  createdTimestamp: Type.Integer(),
  nextAttemptTimestamp: Type.Union([Type.Integer(), Type.Null()], {
    description:
      "When a pending callback is tried next (Unix seconds); null when it is not pending, or when it is held because its chain's deep-reorganisation breaker tripped (sent once the operator releases the chain: docs/concepts/confirmations-and-reorganisations.md#the-deep-reorganisation-breaker).",
  }),
  attempts: Type.Array(Attempt),
});

const DELIVERY_STATUSES = ['delivered', 'failed', 'retrying', 'pending', 'cancelled'] as const;
const DeliveriesQuery = Type.Object(
  {
    ...PageQuery.properties,
    status: Type.Optional(
      Type.String({
        enum: [...DELIVERY_STATUSES],
        description: 'Only callbacks in this state; retrying: pending and tried at least once (pending: every pending one).',
      }),
    ),
    eventType: Type.Optional(Type.String({ enum: [...EVENT_TYPES], description: 'Only callbacks of this event type.' })),
    blockchain: Type.Optional(Type.String({ enum: [...BLOCKCHAINS], description: 'Only callbacks of subscriptions on this blockchain.' })),
    network: Type.Optional(Type.String({ enum: [...NETWORKS], description: 'Only callbacks of subscriptions on this network.' })),
    referenceId: Type.Optional(Type.String({ maxLength: 100, description: "Only this subscription's callbacks." })),
    since: Type.Optional(Type.Integer({ minimum: 0, description: 'Created at or after (Unix seconds); default: 7 days before until.' })),
    until: Type.Optional(Type.Integer({ minimum: 0, description: 'Created before (Unix seconds); default: now.' })),
  },
  { additionalProperties: false },
);
type DeliveriesQueryT = {
  limit: number;
  offset: number;
  status?: (typeof DELIVERY_STATUSES)[number];
  eventType?: EventType;
  blockchain?: string;
  network?: string;
  referenceId?: string;
  since?: number;
  until?: number;
};

const DeliveryItem = Type.Composite([
  Type.Object({
    referenceId: Type.String({ description: 'The subscription the callback belongs to.' }),
    blockchain: Type.String(),
    network: Type.String(),
  }),
  CallbackItem,
]);

const CallbackDetail = Type.Composite([
  Type.Omit(CallbackItem, ['attempts']),
  Type.Object({
    referenceId: Type.String({ description: 'The subscription the callback belongs to.' }),
    payload: Type.Object({}, { additionalProperties: true, description: 'The JSON body exactly as sent (or to be sent), byte for byte.' }),
    attempts: Type.Array(
      Type.Composite([
        Attempt,
        Type.Object({
          responseExcerpt: Type.Union([Type.String(), Type.Null()], { description: "The first 4 KiB of the receiver's answer; null when there was none." }),
        }),
      ]),
    ),
  }),
]);

export function callbackRoutes(app: FastifyInstance, common: Common): void {
  app.get<{ Params: { callbackId: string } }>(
    '/blockchain-events/callbacks/:callbackId',
    {
      config: { endpoint: 'callbacks', errors: ['resource_not_found'] },
      schema: {
        tags: ['callbacks'],
        summary: 'One callback: its state, the payload as sent, and every attempt with the start of the response. Free (the console).',
        params: Type.Object({ callbackId: Type.String({ maxLength: 100 }) }),
        querystring: ContextQuery,
        response: { 200: envelope(Type.Object({ item: CallbackDetail })) },
      },
    },
    async (request, reply) => {
      const result = await service.getCallback(common, request.caller, request.params.callbackId);
      const c = result.value;
      const item = {
        ...callbackFields(c),
        referenceId: c.subscriptionId,
        attempts: c.attempts.map((a) => ({ ...attemptItem(a), responseExcerpt: a.responseExcerpt })),
      };
      // The body is spliced in as stored: re-serialising it could change what the receiver got.
      const itemJson = JSON.stringify(item);
      return sendJsonText(request, reply, 200, `{"item":${itemJson.slice(0, -1)},"payload":${c.body}}}`, result);
    },
  );

  app.get<{ Querystring: DeliveriesQueryT }>(
    '/blockchain-events/callbacks',
    {
      config: { endpoint: 'callbacks', errors: ['resource_not_found', 'insufficient_credits'] },
      schema: {
        tags: ['callbacks'],
        summary:
          "The customer's callbacks across every current subscription, newest first, with every attempt, filtered by state, event type, chain, subscription and creation time (the console's Deliveries). Charged as a subscription's callback log.",
        querystring: DeliveriesQuery,
        response: {
          200: envelope(
            Type.Composite([
              page(DeliveryItem),
              Type.Object({
                sinceTimestamp: Type.Integer({ description: 'The window read (Unix seconds), as given or defaulted.' }),
                untilTimestamp: Type.Integer(),
              }),
            ]),
          ),
        },
      },
    },
    async (request, reply) => {
      const { limit, offset, referenceId, ...filter } = request.query;
      const result = await service.listDeliveries(common, request.caller, { ...filter, subscriptionId: referenceId }, { limit, offset }, new Date());
      const items = result.value.items.map((c) => ({
        referenceId: c.subscriptionId,
        blockchain: c.blockchain,
        network: c.network,
        ...callbackFields(c),
        attempts: c.attempts.map(attemptItem),
      }));
      const window = { sinceTimestamp: unixSeconds(result.value.since), untilTimestamp: unixSeconds(result.value.until) };
      return sendData(request, reply, 200, { limit, offset, total: result.value.total, items, ...window }, result);
    },
  );

  app.get<{ Params: { referenceId: string }; Querystring: { limit: number; offset: number } }>(
    '/blockchain-events/subscriptions/:referenceId/callbacks',
    {
      config: { endpoint: 'callbacks', errors: ['resource_not_found', 'insufficient_credits'] },
      schema: {
        tags: ['callbacks'],
        summary: "A subscription's callbacks, oldest first, with every attempt",
        params: Type.Object({ referenceId: Type.String({ maxLength: 100 }) }),
        querystring: PageQuery,
        response: { 200: envelope(page(CallbackItem)) },
      },
    },
    async (request, reply) => {
      const { limit, offset } = request.query;
      const result = await service.listCallbacks(common, request.caller, request.params.referenceId, { limit, offset });
      const items = result.value.items.map((c) => ({
        ...callbackFields(c),
        attempts: c.attempts.map(attemptItem),
      }));
      return sendData(request, reply, 200, { limit, offset, total: result.value.total, items }, result);
    },
  );

  app.post<{ Params: { callbackId: string } }>(
    '/blockchain-events/callbacks/:callbackId/resend',
    {
      config: { endpoint: 'callbacks', errors: ['resource_not_found', 'insufficient_credits', 'already_exists', 'invalid_data', 'pull_only_subscription'] },
      schema: {
        tags: ['callbacks'],
        summary: 'Queue a delivered or failed callback again, same body and idempotencyKey',
        params: Type.Object({ callbackId: Type.String({ maxLength: 100 }) }),
        querystring: ContextQuery,
        response: { 201: envelope(Type.Object({ item: Type.Object({ callbackId: Type.String(), status: Type.String() }) })) },
      },
    },
    async (request, reply) => {
      const result = await service.resendCallback(common, request.caller, request.params.callbackId);
      return sendData(request, reply, 201, { item: result.value }, result);
    },
  );

  app.post<{ Params: { referenceId: string } }>(
    '/blockchain-events/subscriptions/:referenceId/test-callback',
    {
      config: { endpoint: 'callbacks', errors: ['resource_not_found', 'insufficient_credits', 'callback_url_not_verified', 'pull_only_subscription'] },
      schema: {
        tags: ['callbacks'],
        summary:
          'Send an example callback of the subscription now, marked as a test in the signed body (data.isTest: true, idempotencyKey test-..., zero ids and amounts), and report the answer',
        params: Type.Object({ referenceId: Type.String({ maxLength: 100 }) }),
        querystring: ContextQuery,
        response: {
          200: envelope(
            Type.Object({
              item: Type.Object({
                idempotencyKey: Type.String(),
                delivered: Type.Boolean(),
                httpStatus: Type.Union([Type.Integer(), Type.Null()]),
                durationMs: Type.Integer(),
                errorClass: Type.Union([Type.String(), Type.Null()]),
                errorMessage: Type.Union([Type.String(), Type.Null()]),
                responseBody: Type.Union([Type.String(), Type.Null()]),
              }),
            }),
          ),
        },
      },
    },
    async (request, reply) => {
      const result = await service.sendTestCallback(common, request.caller, request.params.referenceId);
      return sendData(request, reply, 200, { item: result.value }, result);
    },
  );
}
