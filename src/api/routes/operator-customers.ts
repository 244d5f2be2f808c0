/**
 * The operator's customer routes: list, detail, keys, credits, domain verification (the CLI's actions).
 * Every change is logged with the operator token's name (`operator`), so the log says who did what.
 */
import { type Static, Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { unixSeconds } from '../../domain/time.ts';
import type { Common } from '../../services/context.ts';
import * as customers from '../../services/operator-customers.ts';
import { sendData } from '../envelope.ts';
import { ContextQuery, envelope, PageQuery, page, requestBody } from '../schemas.ts';
import { PlanItem } from './account.ts';
import { NO_CREDITS } from './operator-credits.ts';

const planOf = (c: { mainnetAllowed: boolean; maxActiveSubscriptions: number | null; requestsPerSecond: number }) => ({
  mainnetAllowed: c.mainnetAllowed,
  maxActiveSubscriptions: c.maxActiveSubscriptions,
  requestsPerSecond: c.requestsPerSecond,
});
const NameParams = Type.Object({ name: Type.String({ minLength: 1, maxLength: 200, description: 'The customer name.' }) });
const CustomerSummary = Type.Object({
  name: Type.String(),
  plan: PlanItem,
  credits: Type.Integer(),
  activeSubscriptions: Type.Integer(),
  keys: Type.Integer({ description: 'API keys not revoked.' }),
});
const CustomerDetail = Type.Object({
  name: Type.String(),
  plan: PlanItem,
  credits: Type.Integer(),
  activeSubscriptions: Type.Integer(),
  keys: Type.Array(
    Type.Object({
      keyId: Type.String(),
      prefix: Type.String({ description: 'The first 10 characters of the key.' }),
      createdTimestamp: Type.Integer(),
      revokedTimestamp: Type.Union([Type.Integer(), Type.Null()]),
    }),
  ),
  domains: Type.Array(Type.Object({ domain: Type.String(), verified: Type.Boolean(), verifiedTimestamp: Type.Union([Type.Integer(), Type.Null()]) })),
});
const CreditsItem = Type.Object(
  { amount: Type.Integer({ minimum: 1, maximum: 1_000_000_000_000_000, description: 'Credits to add.' }) },
  { additionalProperties: false },
);

/** The plan fields an operator sets (herald customers create / update); each one left out is kept (or, at create, the configuration's defaultPlan). */
const PlanFields = {
  mainnetAllowed: Type.Optional(Type.Boolean({ description: 'Mainnets allowed (false: test networks only).' })),
  maxActiveSubscriptions: Type.Optional(
    Type.Union([Type.Integer({ minimum: 0, maximum: 2_147_483_647 }), Type.Null()], { description: 'Cap on active subscriptions; null for none.' }),
  ),
  requestsPerSecond: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, description: 'Per API key.' })),
};
const NewCustomerItem = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200, pattern: '^\\S(.*\\S)?$', description: 'Unique; no spaces at either end.' }),
    ...PlanFields,
    credits: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 1_000_000_000_000_000, description: "Starting credits; default: the configuration's defaultPlan.credits." }),
    ),
  },
  { additionalProperties: false },
);
const PlanChangeItem = Type.Object(PlanFields, { additionalProperties: false });
const CustomerPlanItem = Type.Object({ name: Type.String(), plan: PlanItem, credits: Type.Integer() });

export function operatorCustomerRoutes(app: FastifyInstance, common: Common): void {
  app.post<{ Body: Static<ReturnType<typeof requestBody<typeof NewCustomerItem>>> }>(
    '/operator/customers',
    {
      config: { operator: true, errors: ['already_exists'] },
      schema: {
        tags: ['operator'],
        summary: "Create a customer (herald customers create): each plan field left out is the configuration's defaultPlan; no key yet",
        querystring: ContextQuery,
        body: requestBody(NewCustomerItem),
        response: { 201: envelope(Type.Object({ item: CustomerPlanItem })) },
      },
    },
    async (request, reply) => {
      const { name, credits, ...plan } = request.body.data.item;
      const c = await customers.createCustomer(common, name, plan, credits === undefined ? undefined : BigInt(credits));
      request.log.info({ operator: request.operator, customer: c.name }, 'customer created by an operator');
      const item = { name: c.name, plan: planOf(c), credits: Number(c.credits) };
      return sendData(request, reply, 201, { item }, NO_CREDITS);
    },
  );

  app.post<{ Params: { name: string }; Body: Static<ReturnType<typeof requestBody<typeof PlanChangeItem>>> }>(
    '/operator/customers/:name/plan',
    {
      config: { operator: true, errors: ['resource_not_found'] },
      schema: {
        tags: ['operator'],
        summary: "Change a customer's plan (herald customers update): the fields given, the others kept",
        params: NameParams,
        querystring: ContextQuery,
        body: requestBody(PlanChangeItem),
        response: { 200: envelope(Type.Object({ item: CustomerPlanItem })) },
      },
    },
    async (request, reply) => {
      const plan = request.body.data.item;
      const { customer: c } = await customers.updateCustomer(common, request.params.name, { plan });
      request.log.info({ operator: request.operator, customer: c.name, plan }, 'plan changed by an operator');
      const item = { name: c.name, plan: planOf(c), credits: Number(c.credits) };
      return sendData(request, reply, 200, { item }, NO_CREDITS);
    },
  );

  app.get<{ Querystring: { limit: number; offset: number } }>(
    '/operator/customers',
    {
      config: { operator: true },
      schema: {
        tags: ['operator'],
        summary: 'Customers by name: plan, credits, active subscriptions, keys',
        querystring: PageQuery,
        response: { 200: envelope(page(CustomerSummary)) },
      },
    },
    async (request, reply) => {
      const { limit, offset } = request.query;
      const result = await customers.listCustomers(common, { limit, offset });
      const items = result.items.map((c) => ({
        name: c.name,
        plan: c.plan,
        credits: Number(c.credits),
        activeSubscriptions: c.activeSubscriptions,
        keys: c.keys,
      }));
      return sendData(request, reply, 200, { limit, offset, total: result.total, items }, NO_CREDITS);
    },
  );

  app.get<{ Params: { name: string } }>(
    '/operator/customers/:name',
    {
      config: { operator: true, errors: ['resource_not_found'] },
      schema: {
        tags: ['operator'],
        summary: 'One customer: plan, credits, active subscriptions, every key and callback domain',
        params: NameParams,
        querystring: ContextQuery,
        response: { 200: envelope(Type.Object({ item: CustomerDetail })) },
      },
    },
    async (request, reply) => {
      const c = await customers.customerDetail(common, request.params.name);
      const item = {
        ...c,
        credits: Number(c.credits),
        keys: c.keys.map((k) => ({
          keyId: k.keyId,
          prefix: k.prefix,
          createdTimestamp: unixSeconds(k.createdAt),
          revokedTimestamp: k.revokedAt ? unixSeconds(k.revokedAt) : null,
        })),
        domains: c.domains.map((d) => ({
          domain: d.domain,
          verified: d.verifiedAt !== null,
          verifiedTimestamp: d.verifiedAt ? unixSeconds(d.verifiedAt) : null,
        })),
      };
      return sendData(request, reply, 200, { item }, NO_CREDITS);
    },
  );

  app.post<{ Params: { name: string } }>(
    '/operator/customers/:name/keys',
    {
      config: { operator: true, errors: ['resource_not_found'] },
      schema: {
        tags: ['operator'],
        summary: 'Create an API key for the customer; the key is in this answer only',
        params: NameParams,
        querystring: ContextQuery,
        response: { 201: envelope(Type.Object({ item: Type.Object({ keyId: Type.String(), apiKey: Type.String({ description: 'Shown once.' }) }) })) },
      },
    },
    async (request, reply) => {
      const item = await customers.createKey(common, request.params.name);
      request.log.info({ operator: request.operator, customer: request.params.name, keyId: item.keyId }, 'API key created by an operator');
      return sendData(request, reply, 201, { item }, NO_CREDITS);
    },
  );

  app.post<{ Params: { name: string; keyId: string } }>(
    '/operator/customers/:name/keys/:keyId/revoke',
    {
      config: { operator: true, errors: ['resource_not_found'] },
      schema: {
        tags: ['operator'],
        summary: "Revoke one of the customer's API keys at once (again: the first revocation time)",
        params: Type.Composite([NameParams, Type.Object({ keyId: Type.String({ maxLength: 100 }) })]),
        querystring: ContextQuery,
        response: { 200: envelope(Type.Object({ item: Type.Object({ keyId: Type.String(), revokedTimestamp: Type.Integer() }) })) },
      },
    },
    async (request, reply) => {
      const revoked = await customers.revokeKey(common, request.params.name, request.params.keyId);
      request.log.info({ operator: request.operator, customer: request.params.name, keyId: revoked.keyId }, 'API key revoked by an operator');
      return sendData(request, reply, 200, { item: { keyId: revoked.keyId, revokedTimestamp: unixSeconds(revoked.revokedAt) } }, NO_CREDITS);
    },
  );

  app.post<{ Params: { name: string }; Body: Static<ReturnType<typeof requestBody<typeof CreditsItem>>> }>(
    '/operator/customers/:name/credits',
    {
      config: { operator: true, errors: ['resource_not_found'] },
      schema: {
        tags: ['operator'],
        summary: "Add credits to the customer's balance",
        params: NameParams,
        querystring: ContextQuery,
        body: requestBody(CreditsItem),
        response: { 200: envelope(Type.Object({ item: Type.Object({ credits: Type.Integer({ description: 'The balance now.' }) }) })) },
      },
    },
    async (request, reply) => {
      const { amount } = request.body.data.item;
      const credits = await customers.addCustomerCredits(common, request.params.name, amount);
      request.log.info({ operator: request.operator, customer: request.params.name, amount, credits: String(credits) }, 'credits added by an operator');
      return sendData(request, reply, 200, { item: { credits: Number(credits) } }, NO_CREDITS);
    },
  );

  app.post<{ Params: { name: string; domain: string } }>(
    '/operator/customers/:name/domains/:domain/verify',
    {
      config: { operator: true, errors: ['resource_not_found', 'invalid_data'] },
      schema: {
        tags: ['operator'],
        summary: 'Mark a callback domain of the customer verified without a proof (registered first when it is not)',
        params: Type.Composite([NameParams, Type.Object({ domain: Type.String({ maxLength: 253 }) })]),
        querystring: ContextQuery,
        response: { 200: envelope(Type.Object({ item: Type.Object({ domain: Type.String(), verified: Type.Literal(true) }) })) },
      },
    },
    async (request, reply) => {
      const verified = await customers.verifyDomain(common, request.params.name, request.params.domain);
      request.log.info({ operator: request.operator, customer: request.params.name, domain: verified.domain }, 'callback domain verified by an operator');
      return sendData(request, reply, 200, { item: { domain: verified.domain, verified: true } }, NO_CREDITS);
    },
  );
}
