/** Bulk recovery (extension): start a job for a subscription or a callbackUrl, and read its progress. Thin: schema, service, mapping. */

import { type Static, Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { BLOCKCHAINS, EVENT_TYPES, NETWORKS } from '../../domain/chains.ts';
import { unixSeconds } from '../../domain/time.ts';
import type { Common } from '../../services/context.ts';
import * as service from '../../services/recoveries.ts';
import type { Recovery, RecoveryProgress } from '../../store/recoveries.ts';
import { sendData } from '../envelope.ts';
import { ContextQuery, envelope, requestBody } from '../schemas.ts';

/** Unix seconds; the upper bound keeps it a valid date (year 9999). */
const UnixSeconds = (description: string) => Type.Integer({ minimum: 0, maximum: 253_402_300_799, description });
const windowFields = {
  since: UnixSeconds('Queue again the callbacks created at or after this time (Unix seconds, at most now).'),
  until: Type.Optional(UnixSeconds('...and before this time (Unix seconds); default now.')),
  includeCancelled: Type.Optional(
    Type.Boolean({
      description: 'Also the cancelled callbacks, except those cancelled by a reorganisation (their event is no longer canonical). Default false.',
    }),
  ),
};
const SubscriptionRecoverItem = Type.Object(windowFields, { additionalProperties: false });
const FilterRecoverItem = Type.Object(
  {
    callbackUrl: Type.Optional(
      Type.String({ minLength: 1, maxLength: 2048, description: 'Only the subscriptions with this callbackUrl, exactly as created (not with referenceId).' }),
    ),
    referenceId: Type.Optional(Type.String({ maxLength: 100, description: "Only this subscription's callbacks (not with callbackUrl)." })),
    eventType: Type.Optional(Type.String({ enum: [...EVENT_TYPES], description: 'Only the subscriptions of this event type.' })),
    blockchain: Type.Optional(Type.String({ enum: [...BLOCKCHAINS], description: 'Only the subscriptions on this blockchain.' })),
    network: Type.Optional(Type.String({ enum: [...NETWORKS], description: 'Only the subscriptions on this network.' })),
    ...windowFields,
    dryRun: Type.Optional(
      Type.Boolean({
        description:
          'true: start nothing, charge nothing; answer 200 with how many callbacks the job would take (found) and how many failed callbacks of the same filters it would leave because their subscription is inactive.',
      }),
    ),
  },
  { additionalProperties: false },
);
const RecoverableCount = Type.Object({
  found: Type.Integer({ description: 'Failed callbacks of active subscriptions matching the filters: what the job would queue again.' }),
  inactive: Type.Integer({ description: 'Failed callbacks matching the filters whose subscription is inactive: not taken (activate it with recoverSince).' }),
  inactiveSubscriptions: Type.Integer({ description: 'The inactive subscriptions those belong to.' }),
});

export const RecoveryItem = Type.Object({
  recoveryId: Type.String(),
  state: Type.String({
    enum: ['queued', 'running', 'done', 'out_of_credits'],
    description: 'queued: not started; running; done: every callback found was queued; out_of_credits: stopped, the rest not queued (nor charged).',
  }),
  referenceId: Type.Optional(Type.String({ description: 'The subscription recovered, for a subscription recovery.' })),
  callbackUrl: Type.Optional(Type.String({ description: 'The callbackUrl recovered, for a callbackUrl recovery.' })),
  eventType: Type.Optional(Type.String()),
  blockchain: Type.Optional(Type.String()),
  network: Type.Optional(Type.String()),
  since: Type.Integer(),
  until: Type.Integer({ description: 'The end of the window (now when none was given).' }),
  includeCancelled: Type.Boolean(),
  found: Type.Integer({ description: 'Callbacks of the window that matched when the job was created.' }),
  queued: Type.Integer({ description: 'Callbacks queued again (and paid for) so far.' }),
  creditsConsumed: Type.Integer(),
  createdTimestamp: Type.Integer(),
  finishedTimestamp: Type.Union([Type.Integer(), Type.Null()]),
});
const RecoveryProgressItem = Type.Composite([
  RecoveryItem,
  Type.Object({
    pending: Type.Integer({ description: 'Of the callbacks queued: waiting to be sent (or retried).' }),
    delivered: Type.Integer(),
    failed: Type.Integer({ description: 'Of the callbacks queued: failed again (every retry of the new series).' }),
  }),
]);

export function recoveryItem(r: Recovery) {
  return {
    recoveryId: r.id,
    state: r.state,
    ...(r.subscriptionId !== undefined && { referenceId: r.subscriptionId }),
    ...(r.callbackUrl !== undefined && { callbackUrl: r.callbackUrl }),
    ...(r.eventType !== undefined && { eventType: r.eventType }),
    ...(r.blockchain !== undefined && { blockchain: r.blockchain }),
    ...(r.network !== undefined && { network: r.network }),
    since: unixSeconds(r.since),
    until: unixSeconds(r.until),
    includeCancelled: r.includeCancelled,
    found: r.found,
    queued: r.queued,
    creditsConsumed: Number(r.creditsConsumed),
    createdTimestamp: unixSeconds(r.createdAt),
    finishedTimestamp: r.finishedAt ? unixSeconds(r.finishedAt) : null,
  };
}

const progressItem = (r: RecoveryProgress) => ({ ...recoveryItem(r), pending: r.pending, delivered: r.delivered, failed: r.failed });

const ERRORS = ['resource_not_found', 'insufficient_credits'] as const;
const accepted = { 202: envelope(Type.Object({ item: RecoveryItem })) };

export function recoveryRoutes(app: FastifyInstance, common: Common): void {
  app.post<{ Params: { referenceId: string }; Body: Static<ReturnType<typeof requestBody<typeof SubscriptionRecoverItem>>> }>(
    '/blockchain-events/subscriptions/:referenceId/recover',
    {
      config: { endpoint: 'recoveries', errors: [...ERRORS, 'pull_only_subscription'] },
      schema: {
        tags: ['callbacks'],
        summary:
          "Queue again, as one background job, the subscription's failed callbacks created in a time window (same body, idempotencyKey and x-callback-sequence); 5 credits per callback queued, charged as the job queues them",
        params: Type.Object({ referenceId: Type.String({ maxLength: 100 }) }),
        querystring: ContextQuery,
        body: requestBody(SubscriptionRecoverItem),
        response: accepted,
      },
    },
    async (request, reply) => {
      const result = await service.recoverSubscription(common, request.caller, request.params.referenceId, request.body.data.item);
      return sendData(request, reply, 202, { item: recoveryItem(result.value) }, result);
    },
  );

  app.post<{ Body: Static<ReturnType<typeof requestBody<typeof FilterRecoverItem>>> }>(
    '/blockchain-events/callbacks/recover',
    {
      config: { endpoint: 'recoveries', errors: ['resource_not_found', 'insufficient_credits', 'invalid_data', 'request_limit_reached'] },
      schema: {
        tags: ['callbacks'],
        summary:
          "Queue again, as one background job, the failed callbacks of a time window of the customer's active subscriptions matching the filters (callbackUrl or subscription, event type, chain: the Deliveries page's); 5 credits per callback queued. dryRun: count them, start nothing",
        querystring: ContextQuery,
        body: requestBody(FilterRecoverItem),
        response: { ...accepted, 200: envelope(Type.Object({ item: RecoverableCount })) },
      },
    },
    async (request, reply) => {
      const result = await service.recoverCallbacks(common, request.caller, request.body.data.item as service.RecoverCallbacksInput);
      const value = result.value;
      if ('count' in value) return sendData(request, reply, 200, { item: value.count }, result);
      return sendData(request, reply, 202, { item: recoveryItem(value.job) }, result);
    },
  );

  app.get<{ Params: { recoveryId: string } }>(
    '/blockchain-events/recoveries/:recoveryId',
    {
      config: { endpoint: 'recoveries', errors: [...ERRORS] },
      schema: {
        tags: ['callbacks'],
        summary: "A recovery job's progress: found, queued, and of those queued how many are pending, delivered or failed",
        params: Type.Object({ recoveryId: Type.String({ maxLength: 100 }) }),
        querystring: ContextQuery,
        response: { 200: envelope(Type.Object({ item: RecoveryProgressItem })) },
      },
    },
    async (request, reply) => {
      const result = await service.getRecovery(common, request.caller, request.params.recoveryId);
      return sendData(request, reply, 200, { item: progressItem(result.value) }, result);
    },
  );
}
