/**
 * Bulk creation (docs/guides/bulk-import.md): POST .../subscriptions/{event}/bulk with
 * `data.items`, up to 10,000 items of one event type, each the item of that event's single create and
 * each answered on its own. Thin: schema, per-item validation, service, mapping.
 */
import { setImmediate as yieldToOthers } from 'node:timers/promises';
import { type TObject, type TSchema, Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type Blockchain, EVENT_BLOCKCHAINS, type Network } from '../../domain/chains.ts';
import { ApiError } from '../../domain/errors.ts';
import { assertCanPayOneItem, BULK_MAX_ITEMS, type BulkItemResult, createSubscriptionsInBulk } from '../../services/bulk-subscriptions.ts';
import type { Common } from '../../services/context.ts';
import { InFlightCap } from '../../services/in-flight-cap.ts';
import { sendJsonPieces } from '../envelope.ts';
import { Context, ContextQuery, CREATED_ITEMS, chainParams, envelope } from '../schemas.ts';
import { itemValidator, validatorCompiler } from '../validation.ts';
import { CREATE_ROUTES, createdItem } from './subscriptions.ts';

/** 10,000 items of a few hundred bytes each, with room: bulk bodies only (others keep the configured limit). */
export const BULK_BODY_LIMIT = 16 * 1024 * 1024;

/** Answers serialised and written between two yields to the event loop (about 100 kB, a few ms). */
const ANSWER_SLICE = 250;

function bulkBody(item: TSchema) {
  return Type.Object(
    {
      context: Type.Optional(Context),
      data: Type.Object(
        {
          items: Type.Array(item, {
            minItems: 1,
            maxItems: BULK_MAX_ITEMS,
            description: `1 to ${BULK_MAX_ITEMS} items, each the item of the single create; each is checked and answered on its own (an invalid item does not fail the others).`,
          }),
        },
        { additionalProperties: false },
      ),
    },
    { additionalProperties: false },
  );
}

/** What Fastify checks of the body: the envelope only; the items are checked one by one in the handler. */
const LenientBulkBody = bulkBody(Type.Unknown());
const lenientBodyValidator = validatorCompiler({ schema: LenientBulkBody, httpPart: 'body' });

const ItemError = Type.Object({
  code: Type.String(),
  message: Type.String({ description: 'A sentence saying what to change.' }),
  details: Type.Optional(Type.Array(Type.Object({ attribute: Type.String(), message: Type.String() }))),
});

function bulkAnswer(created: TObject) {
  return Type.Object({
    created: Type.Integer({ description: 'Items created (and charged).' }),
    duplicates: Type.Integer({ description: 'Items already active (not created, not charged).' }),
    failed: Type.Integer({ description: 'Items not created because of their error.' }),
    items: Type.Array(
      Type.Object({
        status: Type.String({ enum: ['created', 'duplicate', 'failed'] }),
        item: Type.Optional({ ...created, description: 'status created: the item as the single create answers it.' }),
        referenceId: Type.Optional(Type.String({ description: 'status duplicate: the active subscription with the same event, target and callbackUrl.' })),
        error: Type.Optional({
          ...ItemError,
          description: "status failed: the error a single create of this item would answer (the contract's error object).",
        }),
      }),
      { description: 'One answer per request item, in the same order.' },
    ),
  });
}

function answerOf(result: BulkItemResult) {
  switch (result.status) {
    case 'created':
      return { status: 'created', item: createdItem(result.subscription) };
    case 'duplicate':
      return { status: 'duplicate', referenceId: result.referenceId };
    default: {
      const e: ApiError = result.error;
      return { status: 'failed', error: { code: e.code, message: e.message, ...(e.details && { details: e.details }) } };
    }
  }
}

/**
 * A bulk request's place among its key's requests in progress (config bulkRequestsPerKey): taken before
 * the body is read (a 16 MiB body is read, scanned and parsed only within the cap), given back when both
 * the answer is over (the response closed, also when the client went away or the request was refused)
 * and the handler has returned (a client that hangs up does not free the place while its items are
 * still being written).
 */
const places = new WeakMap<FastifyRequest, { holdWhile: <T>(work: () => Promise<T>) => Promise<T> }>();

function takePlace(cap: InFlightCap, request: FastifyRequest, reply: FastifyReply): void {
  const release = cap.tryEnter(request.caller.owner.keyId);
  if (!release) {
    throw new ApiError(
      'request_limit_reached',
      `This API key has ${cap.limit} bulk requests in progress already, the most it may have at once. Send this one when one of them has been answered.`,
      undefined,
      { 'retry-after': '1' },
    );
  }
  let holders = 1; // the response, until it closes
  const letGo = () => {
    if (--holders === 0) release();
  };
  reply.raw.once('close', letGo);
  places.set(request, {
    async holdWhile(work) {
      holders++;
      try {
        return await work();
      } finally {
        letGo();
      }
    },
  });
}

export function bulkSubscriptionRoutes(app: FastifyInstance, common: Common): void {
  const inProgress = new InFlightCap(common.config.bulkRequestsPerKey);
  for (const route of CREATE_ROUTES) {
    const chains = EVENT_BLOCKCHAINS[route.eventType];
    const validateItem = itemValidator(route.item);
    app.post<{ Params: { blockchain: Blockchain; network: Network }; Body: { data: { items: unknown[] } } }>(
      `/blockchain-events/:blockchain/:network/subscriptions/${route.path}/bulk`,
      {
        bodyLimit: Math.max(BULK_BODY_LIMIT, common.config.bodyLimit),
        // A key allowed the single create may create in bulk, and only that.
        config: { endpoint: route.path, chains, errors: ['feature_mainnets_not_allowed_for_plan', 'insufficient_credits'] },
        // Before the body is read: the key's place among its bulk requests in progress, and credits for
        // at least one item (the price is the route's): a refused request costs no parse.
        preParsing: async (request, reply, payload) => {
          takePlace(inProgress, request, reply);
          await assertCanPayOneItem(common, request.caller, route.eventType);
          return payload;
        },
        validatorCompiler: (request) => (request.httpPart === 'body' ? lenientBodyValidator : validatorCompiler(request)),
        schema: {
          tags: ['subscriptions'],
          summary: `${route.summary}: up to ${BULK_MAX_ITEMS} subscriptions in one request, each answered on its own`,
          description:
            'Each item is validated, checked for an active twin and charged (the price of the single create) on its own. When the credits or the plan cap run out, ' +
            'the new items from there on are not created (insufficient_credits or blockchain_events_callbacks_limit_reached in their answer). ' +
            'Written 1,000 items per transaction: if the request fails midway, send it again; items already created answer as duplicates and are not charged again.',
          params: chainParams(chains),
          querystring: ContextQuery,
          body: bulkBody(route.item),
          response: { 200: envelope(bulkAnswer(CREATED_ITEMS[route.eventType])) },
        },
      },
      async (request, reply) => {
        const place = places.get(request);
        if (!place) throw new Error('bulk request without its place (preParsing)');
        await place.holdWhile(() => answerBulk(request, reply));
        return reply;
      },
    );

    /** Creates the items and starts the answer. */
    async function answerBulk(
      request: FastifyRequest<{ Params: { blockchain: Blockchain; network: Network }; Body: { data: { items: unknown[] } } }>,
      reply: FastifyReply,
    ) {
      const { blockchain, network } = request.params;
      const raw = request.body.data.items;
      // Each chunk's answers become JSON text as soon as the chunk is decided, a slice at a time with a
      // yield between slices (serialising 10,000 answers, about 4 MB, in one go held the event loop for
      // tens of milliseconds), and the result objects are dropped (createSubscriptionsInBulk's onResults).
      // The text is written once every chunk is done: the answer starts with the counts. (Each answer is
      // exactly the shape the response schema documents.)
      const counts = { created: 0, duplicates: 0, failed: 0 };
      const pieces: string[] = [];
      const onResults = async (_start: number, results: BulkItemResult[]) => {
        for (let from = 0; from < results.length; from += ANSWER_SLICE) {
          if (pieces.length > 0) await yieldToOthers();
          const parts: string[] = [];
          for (let k = from; k < Math.min(results.length, from + ANSWER_SLICE); k++) {
            const result = results[k] as BulkItemResult;
            if (result.status === 'created') counts.created++;
            else if (result.status === 'duplicate') counts.duplicates++;
            else counts.failed++;
            parts.push(JSON.stringify(answerOf(result)));
          }
          pieces.push(`${pieces.length > 0 ? ',' : ''}${parts.join(',')}`);
        }
      };
      const outcome = await createSubscriptionsInBulk(common, request.caller, route.eventType, blockchain, network, raw, validateItem, { onResults });
      async function* answer() {
        yield `{"created":${counts.created},"duplicates":${counts.duplicates},"failed":${counts.failed},"items":[`;
        for (let i = 0; i < pieces.length; i++) {
          if (i > 0) await yieldToOthers();
          yield pieces[i] as string;
        }
        yield ']}';
      }
      sendJsonPieces(request, reply, 200, answer(), { consumed: outcome.consumed, available: outcome.available });
    }
  }
}
