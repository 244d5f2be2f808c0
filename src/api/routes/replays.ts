/** Replay of a block range (extension): start a job or answer a dry run, and read a job's progress. Thin: schema, service, mapping. */

import { type Static, Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { BlockJob } from '../../domain/block-jobs.ts';
import { unixSeconds } from '../../domain/time.ts';
import type { Common } from '../../services/context.ts';
import * as service from '../../services/replays.ts';
import { sendData } from '../envelope.ts';
import { ContextQuery, envelope, requestBody } from '../schemas.ts';

const Height = (description: string) => Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description });
const ReplayRequestItem = Type.Object(
  {
    fromBlockHeight: Height('First block to evaluate again.'),
    toBlockHeight: Height(
      "Last block to evaluate again: at most the chain's processed height, and at most 10000 blocks after fromBlockHeight (1000 with dryRun).",
    ),
    dryRun: Type.Optional(
      Type.Boolean({
        description:
          'Answer what would be sent, without sending anything. Default false. Charged for the blocks read like a replay; at most 2 dry runs of a customer at once (429 beyond).',
      }),
    ),
  },
  { additionalProperties: false },
);

export const ReplayItem = Type.Object({
  replayId: Type.String(),
  referenceId: Type.String({ description: 'The subscription replayed.' }),
  state: Type.String({
    enum: ['running', 'done', 'out_of_credits'],
    description: 'running; done: every block of the range was evaluated and what matched queued; out_of_credits: stopped, the rest not queued (nor charged).',
  }),
  fromBlockHeight: Type.Integer(),
  toBlockHeight: Type.Integer(),
  processedHeight: Type.Integer({ description: 'The last block evaluated so far (fromBlockHeight - 1 before the first).' }),
  queued: Type.Integer({ description: 'Callbacks queued or sent again (and paid for) so far.' }),
  creditsConsumed: Type.Integer(),
  createdTimestamp: Type.Integer(),
  finishedTimestamp: Type.Union([Type.Integer(), Type.Null()]),
});

const DryRunItem = Type.Object({
  dryRun: Type.Literal(true),
  fromBlockHeight: Type.Integer(),
  toBlockHeight: Type.Integer(),
  callbacks: Type.Array(
    Type.Object({
      idempotencyKey: Type.String(),
      blockHeight: Type.Integer(),
      transactionId: Type.Union([Type.String(), Type.Null()], { description: 'The transaction the event is about; null for block events.' }),
      event: Type.String(),
      body: Type.Object({}, { additionalProperties: true, description: 'The callback body that would be POSTed (and signed).' }),
    }),
    { description: 'In the order they would be queued (the order live following numbers them).' },
  ),
});

function replayItem(j: BlockJob) {
  return {
    replayId: j.id,
    referenceId: j.subscriptionId,
    state: j.state,
    fromBlockHeight: j.fromHeight,
    toBlockHeight: j.toHeight,
    processedHeight: j.processedHeight,
    queued: j.queued,
    creditsConsumed: Number(j.creditsConsumed),
    createdTimestamp: unixSeconds(j.createdAt),
    finishedTimestamp: j.finishedAt ? unixSeconds(j.finishedAt) : null,
  };
}

export function replayRoutes(app: FastifyInstance, common: Common): void {
  app.post<{ Params: { referenceId: string }; Body: Static<ReturnType<typeof requestBody<typeof ReplayRequestItem>>> }>(
    '/blockchain-events/subscriptions/:referenceId/replay',
    {
      config: { endpoint: 'replays', errors: ['resource_not_found', 'insufficient_credits', 'pull_only_subscription'] },
      schema: {
        tags: ['callbacks'],
        summary:
          'Evaluate a block range again for the subscription and send what matches, with the idempotencyKeys and bodies live following gave them (an already delivered one is sent again); a background job, 5 credits per callback queued, charged as it queues them, and 1 credit per block of the range, charged when it is asked for (402: nothing queued). With dryRun, answer what would be sent instead (the blocks charged the same). 429 when the customer has too many blocks waiting in its jobs of the chain, or too many dry runs in progress.',
        params: Type.Object({ referenceId: Type.String({ maxLength: 100 }) }),
        querystring: ContextQuery,
        body: requestBody(ReplayRequestItem),
        response: {
          200: envelope(Type.Object({ item: DryRunItem }, { description: 'dryRun: what would be sent.' })),
          202: envelope(Type.Object({ item: ReplayItem }, { description: 'The replay job, started.' })),
        },
      },
    },
    async (request, reply) => {
      const result = await service.replaySubscription(common, request.caller, request.params.referenceId, request.body.data.item);
      const r = result.value;
      if (r.dryRun) return sendData(request, reply, 200, { item: { dryRun: true, ...r.value } }, result);
      return sendData(request, reply, 202, { item: replayItem(r.value) }, result);
    },
  );

  app.get<{ Params: { replayId: string } }>(
    '/blockchain-events/replays/:replayId',
    {
      config: { endpoint: 'replays', errors: ['resource_not_found', 'insufficient_credits'] },
      schema: {
        tags: ['callbacks'],
        summary: "A replay job's progress: the last block evaluated, callbacks queued, credits consumed",
        params: Type.Object({ replayId: Type.String({ maxLength: 100 }) }),
        querystring: ContextQuery,
        response: { 200: envelope(Type.Object({ item: ReplayItem })) },
      },
    },
    async (request, reply) => {
      const result = await service.getReplay(common, request.caller, request.params.replayId);
      return sendData(request, reply, 200, { item: replayItem(result.value) }, result);
    },
  );
}
