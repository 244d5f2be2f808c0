/** The customer's account (the console's credits page): balance, plan, and credits spent per endpoint and UTC day. Free. */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import * as service from '../../services/account.ts';
import type { Common } from '../../services/context.ts';
import { sendData } from '../envelope.ts';
import { Context, ContextQuery, envelope } from '../schemas.ts';

export const PlanItem = Type.Object({
  mainnetAllowed: Type.Boolean(),
  maxActiveSubscriptions: Type.Union([Type.Integer(), Type.Null()], { description: 'Cap on active subscriptions; null for none.' }),
  requestsPerSecond: Type.Integer({ description: 'Per API key.' }),
});

const UsageQuery = Type.Object(
  {
    context: Type.Optional(Context),
    days: Type.Optional(Type.Integer({ minimum: 1, maximum: 90, default: 30, description: 'UTC days back, today included (1 to 90, default 30).' })),
  },
  { additionalProperties: false },
);

export function accountRoutes(app: FastifyInstance, common: Common): void {
  app.get(
    '/account',
    {
      config: { endpoint: 'account' },
      schema: {
        tags: ['account'],
        summary: "The API key's customer: name, credits, plan and active subscriptions",
        querystring: ContextQuery,
        response: {
          200: envelope(
            Type.Object({
              item: Type.Object({ customerName: Type.String(), credits: Type.Integer(), plan: PlanItem, activeSubscriptions: Type.Integer() }),
            }),
          ),
        },
      },
    },
    async (request, reply) => {
      const result = await service.account(common, request.caller);
      return sendData(request, reply, 200, { item: { ...result.value, credits: Number(result.value.credits) } }, result);
    },
  );

  app.get<{ Querystring: { days: number } }>(
    '/account/usage',
    {
      config: { endpoint: 'account' },
      schema: {
        tags: ['account'],
        summary:
          'Credits spent per endpoint per UTC day (recorded with each debit), newest day first; days without a charge have no row. requests counts the calls that were charged.',
        querystring: UsageQuery,
        response: {
          200: envelope(
            Type.Object({
              items: Type.Array(
                Type.Object({
                  day: Type.String({ description: 'YYYY-MM-DD (UTC).' }),
                  endpoint: Type.String({ description: 'The endpoint name, as API key restrictions name it.' }),
                  requests: Type.Integer(),
                  credits: Type.Integer(),
                }),
              ),
            }),
          ),
        },
      },
    },
    async (request, reply) => {
      const result = await service.usage(common, request.caller, request.query.days);
      return sendData(request, reply, 200, { items: result.value }, result);
    },
  );
}
