/**
 * The operator's routes (/operator/*, the operator console): authenticated by an operator token
 * (Authorization: Bearer, `herald operator-tokens create`), never by an API key; free; not rate-limited.
 * Thin: schema, service, mapping. The operator's services are the ones the CLI uses.
 */
import { type Static, Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { BLOCKCHAINS, type Blockchain, type Network } from '../../domain/chains.ts';
import { unixSeconds } from '../../domain/time.ts';
import { resetChain } from '../../services/chains.ts';
import type { Common } from '../../services/context.ts';
import * as customers from '../../services/operator-customers.ts';
import * as monitoring from '../../services/operator-monitoring.ts';
import { sendData } from '../envelope.ts';
import { Context, ContextQuery, chainParams, envelope, PageQuery, page, requestBody } from '../schemas.ts';
import { PlanItem } from './account.ts';
import { ChainStatusItem } from './status.ts';

/** Operator answers carry no credits: the headers say 0 of 0. */
export const NO_CREDITS = { consumed: 0n, available: 0n };

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

const Nullable = <T extends ReturnType<typeof Type.Integer> | ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);
const OperatorChain = Type.Object({
  blockchain: Type.String(),
  network: Type.String(),
  state: ChainStatusItem.properties.state,
  headHeight: Nullable(Type.Integer({ description: "The node's head height when last asked." })),
  processedHeight: Nullable(Type.Integer()),
  lagBlocks: Nullable(Type.Integer()),
  lagSeconds: Nullable(Type.Integer()),
  stoppedReason: Nullable(Type.String({ description: 'Why following stopped (state stopped): reset the chain once the cause is understood.' })),
  reorganisations: Type.Integer({ description: 'Reorganisations followed in the last 24 hours.' }),
  nodes: ChainStatusItem.properties.nodes,
});
/** 1 minute to 7 days (the history kept). */
const MinutesQuery = Type.Object(
  {
    context: Type.Optional(Context),
    minutes: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 10_080, default: 60, description: 'Minutes back, the current one included (1 to 10080, default 60).' }),
    ),
  },
  { additionalProperties: false },
);
const ChainParams = chainParams(BLOCKCHAINS);
type ChainParamsT = { blockchain: Blockchain; network: Network };

export function operatorRoutes(app: FastifyInstance, common: Common): void {
  app.get(
    '/operator/whoami',
    {
      config: { operator: true },
      schema: {
        tags: ['operator'],
        summary: "The operator token's name",
        querystring: ContextQuery,
        response: { 200: envelope(Type.Object({ item: Type.Object({ name: Type.String() }) })) },
      },
    },
    async (request, reply) => sendData(request, reply, 200, { item: { name: request.operator } }, NO_CREDITS),
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
    async (request, reply) => sendData(request, reply, 201, { item: await customers.createKey(common, request.params.name) }, NO_CREDITS),
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
      const credits = await customers.addCustomerCredits(common, request.params.name, request.body.data.item.amount);
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
      return sendData(request, reply, 200, { item: { domain: verified.domain, verified: true } }, NO_CREDITS);
    },
  );

  app.get(
    '/operator/chains',
    {
      config: { operator: true },
      schema: {
        tags: ['operator'],
        summary: 'Every followed chain: state, heights, lag, stop reason, reorganisations of the last 24 h, nodes',
        querystring: ContextQuery,
        response: { 200: envelope(Type.Object({ items: Type.Array(OperatorChain) })) },
      },
    },
    async (request, reply) => {
      const items = (await monitoring.chains(common, new Date())).map((c) => ({
        blockchain: c.blockchain,
        network: c.network,
        state: c.state,
        headHeight: c.nodeHeight,
        processedHeight: c.processedHeight,
        lagBlocks: c.lagBlocks,
        lagSeconds: c.lagSeconds,
        stoppedReason: c.stopReason,
        reorganisations: c.reorganisations,
        nodes: c.nodes,
      }));
      return sendData(request, reply, 200, { items }, NO_CREDITS);
    },
  );

  app.get<{ Params: ChainParamsT; Querystring: { minutes: number } }>(
    '/operator/chains/:blockchain/:network/lag',
    {
      config: { operator: true, chains: BLOCKCHAINS },
      schema: {
        tags: ['operator'],
        summary: "A chain's lag, one sample per minute (kept 7 days), oldest first; a minute without a sample has no item",
        params: ChainParams,
        querystring: MinutesQuery,
        response: {
          200: envelope(
            Type.Object({
              items: Type.Array(
                Type.Object({
                  timestamp: Type.Integer({ description: 'The minute (Unix seconds).' }),
                  lagBlocks: Nullable(Type.Integer()),
                  lagSeconds: Nullable(Type.Integer()),
                }),
              ),
            }),
          ),
        },
      },
    },
    async (request, reply) => {
      const { blockchain, network } = request.params;
      const samples = await monitoring.lag(common, { blockchain, network }, request.query.minutes, new Date());
      const items = samples.map((s) => ({ timestamp: unixSeconds(s.minute), lagBlocks: s.lagBlocks, lagSeconds: s.lagSeconds }));
      return sendData(request, reply, 200, { items }, NO_CREDITS);
    },
  );

  app.post<{ Params: ChainParamsT }>(
    '/operator/chains/:blockchain/:network/reset',
    {
      config: { operator: true, chains: BLOCKCHAINS },
      schema: {
        tags: ['operator'],
        summary:
          "Forget where the chain's following stands (herald chains reset): it starts again at its startHeight or the node head; events of the blocks skipped are not sent",
        params: ChainParams,
        querystring: ContextQuery,
        response: {
          200: envelope(
            Type.Object({
              item: Type.Object({
                blockchain: Type.String(),
                network: Type.String(),
                forgottenHeight: Nullable(Type.Integer({ description: 'The cursor forgotten; null when the chain had no following state.' })),
                pendingEventsDeleted: Type.Integer(),
                callbacksCancelled: Type.Integer(),
              }),
            }),
          ),
        },
      },
    },
    async (request, reply) => {
      const { blockchain, network } = request.params;
      const removed = await resetChain(common.db, { blockchain, network });
      request.log.warn({ operator: request.operator, blockchain, network, ...removed }, 'chain reset by an operator');
      const item = {
        blockchain,
        network,
        forgottenHeight: removed.cursor?.height ?? null,
        pendingEventsDeleted: removed.pendingDeleted,
        callbacksCancelled: removed.callbacksCancelled,
      };
      return sendData(request, reply, 200, { item }, NO_CREDITS);
    },
  );

  app.get<{ Querystring: { minutes: number } }>(
    '/operator/delivery',
    {
      config: { operator: true },
      schema: {
        tags: ['operator'],
        summary: 'Callbacks due, the oldest due age, attempts per minute by outcome (kept 7 days), the 10 slowest destinations of the last hour',
        querystring: MinutesQuery,
        response: {
          200: envelope(
            Type.Object({
              item: Type.Object({
                due: Type.Integer({ description: 'Callbacks due now.' }),
                oldestDueAgeSeconds: Type.Integer(),
                attemptsPerMinute: Type.Array(
                  Type.Object({
                    timestamp: Type.Integer({ description: 'The minute (Unix seconds) the attempts started in.' }),
                    delivered: Type.Integer(),
                    failed: Type.Integer({ description: 'Attempts after which the callback failed for good (410, or retries exhausted).' }),
                    retried: Type.Integer({ description: 'Failed attempts with another one scheduled.' }),
                  }),
                  { description: 'Every minute of the window, oldest first (0 when none).' },
                ),
                slowestDestinations: Type.Array(
                  Type.Object({
                    host: Type.String({ description: 'host[:port] of the callback URLs.' }),
                    attempts: Type.Integer(),
                    failures: Type.Integer({ description: 'Attempts without a 2xx answer.' }),
                    p50Ms: Type.Number(),
                    p95Ms: Type.Number(),
                  }),
                ),
              }),
            }),
          ),
        },
      },
    },
    async (request, reply) => {
      const d = await monitoring.delivery(common, request.query.minutes, new Date());
      const item = {
        due: d.due,
        oldestDueAgeSeconds: d.oldestDueAgeSeconds,
        attemptsPerMinute: d.perMinute.map((m) => ({ timestamp: unixSeconds(m.minute), delivered: m.delivered, failed: m.failed, retried: m.retried })),
        slowestDestinations: d.slowest.map((s) => ({
          host: new URL(s.destination).host,
          attempts: s.attempts,
          failures: s.failures,
          p50Ms: s.p50Ms,
          p95Ms: s.p95Ms,
        })),
      };
      return sendData(request, reply, 200, { item }, NO_CREDITS);
    },
  );
}
