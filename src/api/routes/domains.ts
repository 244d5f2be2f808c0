/** Callback domains (docs/reference/api.md#callback-domains): registration, proof of control, listing and removal. */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Common } from '../../services/context.ts';
import * as service from '../../services/domains.ts';
import { sendData } from '../envelope.ts';
import { CallbackDomainItem, ContextQuery, envelope, PageQuery, page, requestBody } from '../schemas.ts';

/** The item of register and verify: the domain and the two ways to prove control of it. */
const DomainWithProofsItem = Type.Composite([
  CallbackDomainItem,
  Type.Object({
    verification: Type.Object({
      file: Type.Object({
        url: Type.String({ description: 'Serve the token at this URL (HTTPS, status 200, no redirect).' }),
        content: Type.String({ description: 'The token: the whole file, or one line of it.' }),
      }),
      dnsTxt: Type.Object({
        name: Type.String({ description: 'Or publish a TXT record at this name.' }),
        value: Type.String({ description: 'The token: the value of the TXT record.' }),
      }),
    }),
  }),
]);

const DomainParams = Type.Object({ domain: Type.String({ maxLength: 253 }) });

export function domainRoutes(app: FastifyInstance, common: Common): void {
  app.post<{ Body: { data: { item: { domain: string } } } }>(
    '/blockchain-events/callback-domains',
    {
      config: { endpoint: 'callback-domains', errors: ['insufficient_credits'] },
      schema: {
        tags: ['callback domains'],
        summary: 'Register a callback domain; the answer says how to prove control of it',
        description:
          'The domain is an exact host name (a subdomain is a domain of its own). Registering a domain again returns it as it is, with the same token.',
        querystring: ContextQuery,
        body: requestBody(Type.Object({ domain: Type.String({ minLength: 1, maxLength: 253 }) }, { additionalProperties: false })),
        response: { 201: envelope(Type.Object({ item: DomainWithProofsItem })) },
      },
    },
    async (request, reply) => {
      const result = await service.registerDomain(common, request.caller, request.body.data.item.domain);
      return sendData(request, reply, 201, { item: service.domainItemWithProofs(result.value) }, result);
    },
  );

  app.post<{ Params: { domain: string } }>(
    '/blockchain-events/callback-domains/:domain/verify',
    {
      config: { endpoint: 'callback-domains', errors: ['resource_not_found', 'insufficient_credits', 'domain_verification_failed'] },
      schema: {
        tags: ['callback domains'],
        summary: 'Prove control of a registered callback domain (HTTPS file, then DNS TXT record)',
        description:
          'Succeeds when https://{domain}/.well-known/blockchain-events-verification.txt answers 2xx with the token (the whole body or one line), or when a TXT record at _blockchain-events.{domain} is the token. Otherwise 409 domain_verification_failed, with what was found in details. A domain already verified answers at once.',
        params: DomainParams,
        querystring: ContextQuery,
        response: { 200: envelope(Type.Object({ item: DomainWithProofsItem })) },
      },
    },
    async (request, reply) => {
      const result = await service.verifyDomain(common, request.caller, request.params.domain);
      return sendData(request, reply, 200, { item: service.domainItemWithProofs(result.value) }, result);
    },
  );

  app.get<{ Querystring: { limit: number; offset: number } }>(
    '/blockchain-events/callback-domains',
    {
      config: { endpoint: 'callback-domains', errors: ['insufficient_credits'] },
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
      config: { endpoint: 'callback-domains', errors: ['resource_not_found', 'insufficient_credits'] },
      schema: {
        tags: ['callback domains'],
        summary: 'Remove a callback domain',
        params: DomainParams,
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
