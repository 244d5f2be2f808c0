/** The event stream (extension, docs/concepts/event-stream.md): GET /blockchain-events/events. */

import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { BLOCKCHAINS, CALLBACK_EVENT_TYPES, type CallbackEventType, NETWORKS } from '../../domain/chains.ts';
import type { Common } from '../../services/context.ts';
import { readEvents } from '../../services/event-stream.ts';
import { sendJsonText } from '../envelope.ts';
import { Context, envelope } from '../schemas.ts';

export const STREAM_MAX_LIMIT = 1000;
export const STREAM_MAX_WAIT_SECONDS = 30;

const StreamQuery = Type.Object(
  {
    context: Type.Optional(Context),
    cursor: Type.Optional(
      Type.String({ maxLength: 400, description: 'The nextCursor of the previous answer, unchanged. Absent: from the oldest event still complete.' }),
    ),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: STREAM_MAX_LIMIT, default: 100, description: 'Entries per answer, 1 to 1,000.' })),
    waitSeconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: STREAM_MAX_WAIT_SECONDS,
        default: 0,
        description: 'When there is no entry after the cursor, wait up to this many seconds (0 to 30) for one, and answer as soon as it is written.',
      }),
    ),
    referenceId: Type.Optional(Type.String({ maxLength: 100, description: "Only this subscription's events." })),
    eventType: Type.Optional(
      Type.String({ enum: [...CALLBACK_EVENT_TYPES], description: 'Only events of this type (the DROPPED events of the unconfirmed subscriptions included).' }),
    ),
    blockchain: Type.Optional(Type.String({ enum: [...BLOCKCHAINS], description: 'Only events of this blockchain.' })),
    network: Type.Optional(Type.String({ enum: [...NETWORKS], description: 'Only events of this network.' })),
  },
  { additionalProperties: false },
);

const StreamEntry = Type.Object(
  {
    apiVersion: Type.String(),
    referenceId: Type.String({ description: 'The subscription.' }),
    idempotencyKey: Type.String(),
    data: Type.Optional(Type.Object({}, { additionalProperties: true, description: "The callback body's data, exactly as sent (absent on a retraction)." })),
    retracted: Type.Optional(Type.Literal(true, { description: "Present on a retraction: the event's block left the canonical chain; undo its effect." })),
    reinstated: Type.Optional(
      Type.Literal(true, { description: 'The chain came back to the block of an event retracted before: apply it again (same idempotencyKey).' }),
    ),
    event: Type.Optional(Type.String({ description: 'A retraction: the type of the event retracted.' })),
    sequence: Type.Union([Type.Integer(), Type.Null()], { description: "The event's x-callback-sequence (a retraction: the retracted event's)." }),
    createdAt: Type.Integer({ description: 'When the event (or the retraction) was written (Unix seconds).' }),
    blockHash: Type.Optional(Type.String({ description: 'The block of an event of a block; of a retraction, the block that left the chain.' })),
    blockHeight: Type.Optional(Type.Integer({ description: 'A retraction: the height of the block that left the chain.' })),
  },
  { additionalProperties: true },
);

export function eventStreamRoutes(app: FastifyInstance, common: Common): void {
  app.get<{
    Querystring: {
      cursor?: string;
      limit: number;
      waitSeconds: number;
      referenceId?: string;
      eventType?: CallbackEventType;
      blockchain?: string;
      network?: string;
    };
  }>(
    '/blockchain-events/events',
    {
      config: { endpoint: 'events', errors: ['insufficient_credits', 'cursor_expired'] },
      schema: {
        tags: ['callbacks'],
        summary:
          "Every event herald created for the customer's subscriptions, in order from a cursor, with a retraction for each event whose block left the chain; long-polls with waitSeconds",
        querystring: StreamQuery,
        response: {
          200: envelope(
            Type.Object({
              items: Type.Array(StreamEntry),
              nextCursor: Type.String({ description: 'Where the next read starts: opaque, valid in any herald process, before or after a restart.' }),
              hasMore: Type.Boolean({ description: 'More entries follow at once: read again with nextCursor without waiting.' }),
            }),
          ),
        },
      },
    },
    async (request, reply) => {
      const { cursor, limit, waitSeconds, referenceId, eventType, blockchain, network } = request.query;
      // A client that hangs up ends its long-poll at once.
      const gone = new AbortController();
      reply.raw.once('close', () => gone.abort());
      const result = await readEvents(
        common,
        request.caller,
        { cursor, limit, waitSeconds, filters: { referenceId, eventType, blockchain, network } },
        gone.signal,
      );
      const page = result.value;
      // The bodies are spliced in as stored: re-serialising them could change what a receiver compares.
      // The schema above documents the answer; it is written here as bytes, not by fastify's serialiser.
      const data = ['{"items":[', ...page.items, `],"nextCursor":${JSON.stringify(page.nextCursor)},"hasMore":${page.hasMore}}`];
      return sendJsonText(request, reply, 200, data, result);
    },
  );
}
