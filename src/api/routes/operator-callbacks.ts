/** The operator's view of failed callbacks across customers (the console's Failed callbacks page). */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { unixSeconds } from '../../domain/time.ts';
import type { Common } from '../../services/context.ts';
import { finishedCallbacks } from '../../services/operator-customers.ts';
import { sendData } from '../envelope.ts';
import { envelope, PageQuery, page } from '../schemas.ts';
import { NO_CREDITS } from './operator-credits.ts';

const Nullable = <T extends ReturnType<typeof Type.Integer> | ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);

const FinishedQuery = Type.Object(
  {
    ...PageQuery.properties,
    status: Type.Optional(
      Type.String({ enum: ['failed', 'cancelled'], default: 'failed', description: 'failed (default): retries exhausted or 410; cancelled.' }),
    ),
    customer: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: "Only this customer's (its name)." })),
    since: Type.Optional(Type.Integer({ minimum: 0, description: 'Finished at or after (Unix seconds); default: 7 days before until.' })),
    until: Type.Optional(Type.Integer({ minimum: 0, description: 'Finished before (Unix seconds); default: now.' })),
  },
  { additionalProperties: false },
);

const FinishedItem = Type.Object({
  callbackId: Type.String(),
  customer: Type.String({ description: 'The customer name.' }),
  referenceId: Type.String({ description: 'The subscription.' }),
  blockchain: Nullable(Type.String({ description: 'null when the subscription was deleted since.' })),
  network: Nullable(Type.String()),
  eventType: Type.String(),
  status: Type.String(),
  outcome: Nullable(Type.String({ description: 'Why it ended, e.g. callback_url_gone.' })),
  destination: Type.String({ description: 'host[:port] of the callback URL.' }),
  attempts: Type.Integer(),
  createdTimestamp: Type.Integer(),
  finishedTimestamp: Type.Integer(),
  lastAttempt: Type.Union([
    Type.Object({
      startedTimestamp: Type.Integer(),
      httpStatus: Nullable(Type.Integer()),
      errorClass: Nullable(Type.String({ description: 'timeout, connection_refused, tls, dns, bad_status...; null on a 2xx.' })),
      errorMessage: Nullable(Type.String()),
    }),
    Type.Null(),
  ]),
});

export function operatorCallbackRoutes(app: FastifyInstance, common: Common): void {
  app.get<{
    Querystring: { limit: number; offset: number; status: 'failed' | 'cancelled'; customer?: string; since?: number; until?: number };
  }>(
    '/operator/callbacks',
    {
      config: { operator: true, errors: ['resource_not_found'] },
      schema: {
        tags: ['operator'],
        summary: 'Failed (or cancelled) callbacks of every customer, newest finished first, each with its last attempt',
        querystring: FinishedQuery,
        response: {
          200: envelope(
            Type.Composite([
              page(FinishedItem),
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
      const { limit, offset, ...filter } = request.query;
      const result = await finishedCallbacks(common, { ...filter, status: filter.status ?? 'failed' }, { limit, offset }, new Date());
      const items = result.items.map((c) => ({
        callbackId: c.id,
        customer: c.customerName,
        referenceId: c.subscriptionId,
        blockchain: c.blockchain,
        network: c.network,
        eventType: c.eventType,
        status: c.status,
        outcome: c.outcome,
        destination: new URL(c.destination).host,
        attempts: c.attempts,
        createdTimestamp: unixSeconds(c.createdAt),
        finishedTimestamp: unixSeconds(c.finishedAt),
        lastAttempt: c.lastAttempt && {
          startedTimestamp: unixSeconds(c.lastAttempt.startedAt),
          httpStatus: c.lastAttempt.httpStatus,
          errorClass: c.lastAttempt.errorClass,
          errorMessage: c.lastAttempt.errorMessage,
        },
      }));
      const window = { sinceTimestamp: unixSeconds(result.since), untilTimestamp: unixSeconds(result.until) };
      return sendData(request, reply, 200, { limit, offset, total: result.total, items, ...window }, NO_CREDITS);
    },
  );
}
