/**
 * The operator's routes (/operator/*, the operator console): authenticated by an operator token
 * (Authorization: Bearer, `herald operator-tokens create`), never by an API key; free; not rate-limited.
 * Thin: schema, service, mapping. The operator's services are the ones the CLI uses.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Common } from '../../services/context.ts';
import { sendData } from '../envelope.ts';
import { ContextQuery, envelope } from '../schemas.ts';
import { operatorCallbackRoutes } from './operator-callbacks.ts';
import { operatorChainRoutes } from './operator-chains.ts';
import { NO_CREDITS } from './operator-credits.ts';
import { operatorCustomerRoutes } from './operator-customers.ts';

export function operatorRoutes(app: FastifyInstance, common: Common): void {
  app.get(
    '/operator/whoami',
    {
      config: { operator: true },
      schema: {
        tags: ['operator'],
        summary: "The operator token's name, and whether this installation charges credits",
        querystring: ContextQuery,
        response: {
          200: envelope(
            Type.Object({
              item: Type.Object({
                name: Type.String(),
                billingEnabled: Type.Boolean({
                  description:
                    'false on a single-tenant install (billing.enabled false, docs/operations/single-tenant.md): the operator console then shows no credits.',
                }),
              }),
            }),
          ),
        },
      },
    },
    async (request, reply) => sendData(request, reply, 200, { item: { name: request.operator, billingEnabled: common.config.billing.enabled } }, NO_CREDITS),
  );

  operatorCustomerRoutes(app, common);
  operatorChainRoutes(app, common);
  operatorCallbackRoutes(app, common);
}
