/** The events catalogue (extension): every callback event type with a sample body, and sending a sample to a URL of the customer's. */

import { type Static, Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { BLOCKCHAINS, type Blockchain, CALLBACK_EVENT_TYPES, type CallbackEventType, NETWORKS, type Network } from '../../domain/chains.ts';
import type { Common } from '../../services/context.ts';
import * as service from '../../services/event-samples.ts';
import { sendData } from '../envelope.ts';
import { ContextQuery, envelope, requestBody } from '../schemas.ts';

const CatalogueQuery = Type.Object(
  {
    ...ContextQuery.properties,
    blockchain: Type.Optional(
      Type.String({ enum: [...BLOCKCHAINS], description: "The samples' chain, for the events sent there (the others: their first chain)." }),
    ),
    network: Type.Optional(Type.String({ enum: [...NETWORKS], description: "The samples' network, where the chain has it (else its mainnet)." })),
  },
  { additionalProperties: false },
);

const EventTypeItem = Type.Object({
  event: Type.String({ enum: [...CALLBACK_EVENT_TYPES], description: 'data.event of its callbacks.' }),
  subscriptionEvent: Type.String({
    description: 'The event type of the subscriptions that receive it: itself, but for a DROPPED event (sent on the unconfirmed subscriptions).',
  }),
  blockchains: Type.Array(Type.String(), { description: 'The blockchains it is sent on.' }),
  safety: Type.Boolean({ description: 'Its item carries the safety verdict (docs/concepts/deposit-safety.md).' }),
  blockchain: Type.String({ description: "The sample's blockchain." }),
  network: Type.String({ description: "The sample's network." }),
  sample: Type.Object(
    {},
    {
      additionalProperties: true,
      description:
        "A body as herald POSTs it for this event, marked as a test (data.isTest: true, idempotencyKey test-..., referenceId the nil UUID, zero ids and amounts): a test callback's item, built by the same code. Valid against the event's schema in the document's webhooks.",
    },
  ),
});

const SendSampleItem = Type.Object(
  {
    referenceId: Type.Optional(Type.String({ maxLength: 100, description: "Send to this subscription's callbackUrl, signed with its secret; or..." })),
    callbackUrl: Type.Optional(
      Type.String({ minLength: 1, maxLength: 2048, description: '...to this https URL on one of your verified callback domains (one of the two).' }),
    ),
    callbackSecretKey: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 100,
        description: 'With callbackUrl: sign the sample with this secret, as a subscription with it would (no signature without).',
      }),
    ),
    blockchain: Type.Optional(
      Type.String({ enum: [...BLOCKCHAINS], description: "The sample's chain, when the event is sent there; default its first chain." }),
    ),
    network: Type.Optional(Type.String({ enum: [...NETWORKS], description: "The sample's network; default the chain's mainnet." })),
  },
  { additionalProperties: false },
);

const SentSample = Type.Object({
  event: Type.String(),
  blockchain: Type.String(),
  network: Type.String(),
  callbackUrl: Type.String({ description: 'Where it was sent.' }),
  idempotencyKey: Type.String({ description: 'test- and 59 random hex characters.' }),
  delivered: Type.Boolean({ description: 'The receiver answered with a 2xx.' }),
  httpStatus: Type.Union([Type.Integer(), Type.Null()]),
  durationMs: Type.Integer(),
  errorClass: Type.Union([Type.String(), Type.Null()]),
  errorMessage: Type.Union([Type.String(), Type.Null()]),
  responseBody: Type.Union([Type.String(), Type.Null()], { description: "The start of the receiver's answer." }),
});

export function eventTypeRoutes(app: FastifyInstance, common: Common): void {
  app.get<{ Querystring: { blockchain?: Blockchain; network?: Network } }>(
    '/blockchain-events/event-types',
    {
      config: { endpoint: 'callbacks', errors: [] },
      schema: {
        tags: ['callbacks'],
        summary:
          "The events catalogue: every callback event type (the subscriptions' and the DROPPED ones), the chains it is sent on, and a sample body marked as a test. Free (the console).",
        querystring: CatalogueQuery,
        response: { 200: envelope(Type.Object({ items: Type.Array(EventTypeItem) })) },
      },
    },
    async (request, reply) => {
      const items = service.catalogue(new Date(), request.caller.apiVersion, request.query.blockchain, request.query.network);
      return sendData(request, reply, 200, { items }, await common.credits.charge(request.caller.owner.customerId, 0n, request.caller.endpoint));
    },
  );

  app.post<{ Params: { event: CallbackEventType }; Body: Static<ReturnType<typeof requestBody<typeof SendSampleItem>>> }>(
    '/blockchain-events/event-types/:event/send-sample',
    {
      config: {
        endpoint: 'callbacks',
        errors: ['resource_not_found', 'insufficient_credits', 'callback_url_not_verified', 'invalid_data', 'pull_only_subscription', 'request_limit_reached'],
      },
      schema: {
        tags: ['callbacks'],
        summary:
          "Send the event's sample now to a subscription's callbackUrl or a URL on a verified domain, signed as a real callback and marked as a test (data.isTest, x-callback-test), and report the answer; charged as a test callback",
        params: Type.Object({ event: Type.String({ enum: [...CALLBACK_EVENT_TYPES] }) }),
        querystring: ContextQuery,
        body: requestBody(SendSampleItem),
        response: { 200: envelope(Type.Object({ item: SentSample })) },
      },
    },
    async (request, reply) => {
      const result = await service.sendSample(common, request.caller, request.params.event, request.body.data.item as service.SendSampleInput);
      return sendData(request, reply, 200, { item: result.value }, result);
    },
  );
}
