/** Callback domains (contract section 5): listing and removal. */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Common } from '../../services/context.ts';
import * as service from '../../services/domains.ts';
import { sendData } from '../envelope.ts';
import { CallbackDomainItem, ContextQuery, envelope, PageQuery, page } from '../schemas.ts';

export function domainRoutes(app: FastifyInstance, common: Common): void {
  app.get<{ Querystring: { limit: number; offset: number } }>(
    '/blockchain-events/callback-domains',
    {
      config: { endpoint: 'callback-domains' },
      schema: {
        tags: ['callback domains'],
        summary: "List the customer's callback domains",
        querystring: PageQuery,
        response: { 200: envelope(page(CallbackDomainItem)) },
      },
    },
    async (request, reply) => {
      const { limit, offset } = request.query;
      const result = await service.listDomains(common, request.caller, { limit, offset });
      return sendData(request, reply, 200, { limit, offset, total: result.value.total, items: result.value.items.map(service.domainItem) }, result);
    },
  );

  app.delete<{ Params: { domain: string } }>(
    '/blockchain-events/callback-domains/:domain',
    {
      config: { endpoint: 'callback-domains' },
      schema: {
        tags: ['callback domains'],
        summary: 'Remove a callback domain',
        params: Type.Object({ domain: Type.String({ maxLength: 253 }) }),
        querystring: ContextQuery,
        response: { 200: envelope(Type.Object({ item: CallbackDomainItem })) },
      },
    },
    async (request, reply) => {
      const result = await service.deleteDomain(common, request.caller, request.params.domain);
      return sendData(request, reply, 200, { item: service.domainItem(result.value) }, result);
    },
  );
}
