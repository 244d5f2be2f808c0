/** The customer's account (the console's credits page): balance, plan, and credits spent per endpoint and UTC day. Free. */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { type Blockchain, EVENT_BLOCKCHAINS, type Network } from '../../domain/chains.ts';
import { unixSeconds } from '../../domain/time.ts';
import * as service from '../../services/account.ts';
import * as policies from '../../services/confirmation-policies.ts';
import type { Common } from '../../services/context.ts';
import type { StoredConfirmationPolicy } from '../../store/confirmation-policies.ts';
import { sendData } from '../envelope.ts';
import { ConfirmationTiers, Context, ContextQuery, chainParams, envelope, Finality, requestBody } from '../schemas.ts';

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

/** docs/concepts/confirmations-and-reorganisations.md#a-default-policy-per-chain: exactly one of the two. */
const PolicyInput = Type.Object(
  {
    confirmationTiers: Type.Optional(ConfirmationTiers),
    finality: Type.Optional(Finality),
  },
  { additionalProperties: false, description: 'Exactly one of confirmationTiers and finality.' },
);
const PolicyItem = Type.Object({
  blockchain: Type.String(),
  network: Type.String(),
  confirmationTiers: Type.Optional({ ...ConfirmationTiers, description: 'Present when the policy is tiers (the last tier without upTo).' }),
  finality: Type.Optional({ ...Finality, description: 'Present when the policy is finality.' }),
  updatedTimestamp: Type.Integer({ description: 'When the policy was last set, Unix seconds.' }),
});
/** Any chain: a policy is kept whether or not this install follows the chain. */
const POLICY_CHAINS = EVENT_BLOCKCHAINS.TRANSACTION_MINED;
type PolicyParams = { blockchain: Blockchain; network: Network };

function policyItem(p: StoredConfirmationPolicy) {
  return {
    blockchain: p.blockchain,
    network: p.network,
    ...('tiers' in p.policy
      ? {
          confirmationTiers: p.policy.tiers.map((t) =>
            t.upTo === null ? { confirmations: t.confirmations } : { upTo: t.upTo, confirmations: t.confirmations },
          ),
        }
      : { finality: p.policy.finality }),
    updatedTimestamp: unixSeconds(p.updatedAt),
  };
}

export function accountRoutes(app: FastifyInstance, common: Common): void {
  app.get(
    '/account/confirmation-policies',
    {
      config: { endpoint: 'account' },
      schema: {
        tags: ['account'],
        summary:
          "The customer's default confirmation policies per chain: used by the address coin, token and internal-transfer creates that give none of receiveCallbackOn, confirmationTiers and finality",
        querystring: ContextQuery,
        response: { 200: envelope(Type.Object({ items: Type.Array(PolicyItem) })) },
      },
    },
    async (request, reply) => {
      const result = await policies.listPolicies(common, request.caller);
      return sendData(request, reply, 200, { items: result.value.map(policyItem) }, result);
    },
  );

  app.put<{ Params: PolicyParams; Body: { data: { item: policies.PolicyInput } } }>(
    '/account/confirmation-policies/:blockchain/:network',
    {
      config: { endpoint: 'account', chains: POLICY_CHAINS },
      schema: {
        tags: ['account'],
        summary:
          "Sets the customer's default confirmation policy of a chain (tiers by amount, or finality where the chain has it); subscriptions created afterwards without a confirmation field of their own take it, existing ones keep theirs",
        params: chainParams(POLICY_CHAINS),
        querystring: ContextQuery,
        body: requestBody(PolicyInput),
        response: { 200: envelope(Type.Object({ item: PolicyItem })) },
      },
    },
    async (request, reply) => {
      const result = await policies.putPolicy(common, request.caller, request.params, request.body.data.item);
      return sendData(request, reply, 200, { item: policyItem(result.value) }, result);
    },
  );

  app.delete<{ Params: PolicyParams }>(
    '/account/confirmation-policies/:blockchain/:network',
    {
      config: { endpoint: 'account', chains: POLICY_CHAINS, errors: ['resource_not_found'] },
      schema: {
        tags: ['account'],
        summary: "Removes the customer's default confirmation policy of a chain (creates then default to receiveCallbackOn's default again)",
        params: chainParams(POLICY_CHAINS),
        querystring: ContextQuery,
        response: { 200: envelope(Type.Object({ item: PolicyItem })) },
      },
    },
    async (request, reply) => {
      const result = await policies.deletePolicy(common, request.caller, request.params);
      return sendData(request, reply, 200, { item: policyItem(result.value) }, result);
    },
  );

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
              item: Type.Object({
                customerName: Type.String(),
                billingEnabled: Type.Boolean({
                  description:
                    'false on a single-tenant install (billing.enabled false): calls are free, credits are not used and the plan limits nothing but the request rate.',
                }),
                credits: Type.Integer(),
                plan: PlanItem,
                activeSubscriptions: Type.Integer(),
              }),
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

  app.get(
    '/account/overview',
    {
      config: { endpoint: 'account' },
      schema: {
        tags: ['account'],
        summary:
          "The console's overview: callbacks created in the last 24 h by status, the subscriptions whose callbacks are failing, unverified callback domains, and the first-run checklist. Free.",
        querystring: ContextQuery,
        response: {
          200: envelope(
            Type.Object({
              item: Type.Object({
                sinceTimestamp: Type.Integer({ description: 'Start of the window (Unix seconds): now minus 24 h.' }),
                callbacks: Type.Object(
                  {
                    delivered: Type.Integer(),
                    failed: Type.Integer({ description: 'Failed for good (retries exhausted, or the URL gone).' }),
                    pending: Type.Integer({ description: 'Queued or waiting for a retry (retrying included).' }),
                    retrying: Type.Integer({ description: 'Pending callbacks already tried at least once.' }),
                    successRate: Type.Union([Type.Number({ minimum: 0, maximum: 1 }), Type.Null()], {
                      description: 'delivered / (delivered + failed); null when neither.',
                    }),
                  },
                  { description: "Callbacks created in the window, of the customer's current subscriptions." },
                ),
                failingSubscriptions: Type.Object(
                  {
                    total: Type.Integer(),
                    items: Type.Array(
                      Type.Object({
                        referenceId: Type.String(),
                        eventType: Type.String(),
                        blockchain: Type.String(),
                        network: Type.String(),
                        isActive: Type.Boolean({ description: 'false: herald deactivated it (its callbacks ran out of retries, or its URL is gone).' }),
                        failed: Type.Integer({ description: 'Its callbacks of the window failed for good.' }),
                        lastFailedTimestamp: Type.Union([Type.Integer(), Type.Null()]),
                      }),
                      { description: `The most recent failures first, at most ${service.OVERVIEW_FAILING_LIMIT}.` },
                    ),
                  },
                  {
                    description:
                      'Subscriptions deactivated by herald (not paused by the customer), and active ones whose last finished callback of the window failed.',
                  },
                ),
                unverifiedDomains: Type.Array(Type.String(), { description: 'Callback domains registered and not verified yet.' }),
                firstRun: Type.Object(
                  {
                    domainVerified: Type.Boolean({ description: 'A callback domain is verified.' }),
                    subscriptionCreated: Type.Boolean({ description: 'The customer has a subscription.' }),
                    testCallbackDelivered: Type.Boolean({ description: 'A test callback (POST .../test-callback) was answered with a 2xx.' }),
                  },
                  { description: 'The first-run checklist: verify a domain, create a subscription, send a test callback.' },
                ),
              }),
            }),
          ),
        },
      },
    },
    async (request, reply) => {
      const result = await service.overview(common, request.caller, new Date());
      const o = result.value;
      const finished = o.counts.delivered + o.counts.failed;
      const item = {
        sinceTimestamp: unixSeconds(o.since),
        callbacks: { ...o.counts, successRate: finished === 0 ? null : o.counts.delivered / finished },
        failingSubscriptions: {
          total: o.failing.total,
          items: o.failing.items.map((f) => ({
            referenceId: f.id,
            eventType: f.eventType,
            blockchain: f.blockchain,
            network: f.network,
            isActive: f.isActive,
            failed: f.failed,
            lastFailedTimestamp: f.lastFailedAt ? unixSeconds(f.lastFailedAt) : null,
          })),
        },
        unverifiedDomains: o.unverifiedDomains,
        firstRun: {
          domainVerified: o.verifiedDomains > 0,
          subscriptionCreated: o.subscriptions > 0,
          testCallbackDelivered: o.testCallbackDeliveredAt !== null,
        },
      };
      return sendData(request, reply, 200, { item }, result);
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
