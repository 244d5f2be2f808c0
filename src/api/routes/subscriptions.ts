/** Endpoints 1 to 3 and 5 to 8 of the contract and the catalogue's events: subscriptions. Thin: schema, service, mapping. */

import { type Static, type TObject, Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { BLOCKCHAINS, type Blockchain, EVENT_BLOCKCHAINS, EVENT_TYPES, type EventType, NETWORKS, type Network } from '../../domain/chains.ts';
import { DELIVERY_STATUSES, type DeliveryHealth as DeliveryHealthT, deliveryStatus, type ShownSubscription } from '../../domain/subscriptions.ts';
import { unixSeconds } from '../../domain/time.ts';
import type { Common } from '../../services/context.ts';
import * as service from '../../services/subscriptions.ts';
import { sendData } from '../envelope.ts';
import {
  AddressCoinsEachConfirmationItem,
  AddressCoinsItem,
  AddressInternalEachConfirmationItem,
  AddressInternalItem,
  AddressTokensEachConfirmationItem,
  AddressTokensItem,
  AddressUnconfirmedItem,
  BlockHeightReachedItem,
  BlockMinedItem,
  CoinsAmountItem,
  ContextQuery,
  CREATED_ITEMS,
  chainParams,
  envelope,
  InternalTransactionsItem,
  PageQuery,
  page,
  RevertedBlockItem,
  requestBody,
  SubscriptionItem,
  TokensAmountItem,
  TransactionMinedItem,
} from '../schemas.ts';

/** How a create item's field is read from the subscription; undefined leaves the field out. */
type FieldReader = (s: ShownSubscription) => unknown;

/** The readers of every field a create item of some event type has (the union of CREATED_ITEMS' properties). */
const FIELD_READERS: Record<string, FieldReader> = {
  referenceId: (s) => s.id,
  createdTimestamp: (s) => unixSeconds(s.createdAt),
  isActive: (s) => s.isActive,
  // Always this spelling, also when address-coins-transactions-confirmed was given `callbackURL` (docs/reference/api.md#address-coins-transactions-confirmed):
  // the SDK's response model reads only `callbackUrl`.
  // A pull-only subscription has none: '' (as an absent secret is echoed), and pullOnly: true says why.
  callbackUrl: (s) => s.callbackUrl ?? '',
  pullOnly: (s) => (s.callbackUrl === null ? true : undefined),
  backfill: (s) => s.backfill,
  eventType: (s) => s.eventType,
  transactionId: (s) => s.transactionId,
  address: (s) => s.address,
  receiveCallbackOn: (s) => s.receiveCallbackOn,
  // docs/concepts/confirmations-and-reorganisations.md: the policy as given (tiers' upTo left out on the last tier).
  confirmationTiers: (s) =>
    s.confirmationPolicy && 'tiers' in s.confirmationPolicy
      ? s.confirmationPolicy.tiers.map((t) => (t.upTo === null ? { confirmations: t.confirmations } : { upTo: t.upTo, confirmations: t.confirmations }))
      : undefined,
  finality: (s) => (s.confirmationPolicy && 'finality' in s.confirmationPolicy ? s.confirmationPolicy.finality : undefined),
  confirmationsCount: (s) => s.receiveCallbackOn,
  blockHeightReached: (s) => s.blockHeight,
  amountHigherThan: (s) => Number(s.amountHigherThan),
  contractAddress: (s) => s.contractAddress,
  // XPUB_COINS_TRANSACTION_CONFIRMED (docs/concepts/wallet-keys.md): the field the key was given in, echoed as given.
  extendedPublicKey: (s) => (s.walletKey?.field === 'extendedPublicKey' ? s.walletKey.text : undefined),
  descriptor: (s) => (s.walletKey?.field === 'descriptor' ? s.walletKey.text : undefined),
  derivation: (s) => s.walletKey?.derivation ?? undefined,
  gapLimit: (s) => s.walletKey?.gapLimit,
};

interface ItemField {
  key: string;
  read: FieldReader;
}

/**
 * Each event type's create item as a list of fields, derived once from its response schema
 * (CREATED_ITEMS): the schema says which fields the item has, in which order, and which are optional.
 * An optional secret is left out when none was given; a required one is echoed as an empty string.
 */
const CREATED_ITEM_FIELDS = Object.fromEntries(
  EVENT_TYPES.map((eventType) => {
    const schema: TObject = CREATED_ITEMS[eventType];
    const required = new Set(schema.required ?? []);
    const fields: ItemField[] = Object.keys(schema.properties).map((key) => {
      if (key === 'callbackSecretKey') {
        return { key, read: required.has(key) ? (s) => s.callbackSecretKey ?? '' : (s) => s.callbackSecretKey ?? undefined };
      }
      const read = FIELD_READERS[key];
      if (!read) throw new Error(`createdItem: no reader for the field ${key} of the ${eventType} create item`);
      return { key, read };
    });
    return [eventType, fields];
  }),
) as Record<EventType, ItemField[]>;

/**
 * The item of a create response: exactly the fields the hosted API publishes for that endpoint (docs/reference/api.md#settled-answer-items),
 * in its schema's order. Built field by field rather than by spreading partial objects: object spread
 * took V8's slow path here (microseconds per item), which a bulk create's 10,000 answers paid in full.
 */
export function createdItem(s: ShownSubscription): Record<string, unknown> {
  const item: Record<string, unknown> = {};
  for (const field of CREATED_ITEM_FIELDS[s.eventType]) {
    const value = field.read(s);
    if (value !== undefined && value !== null) item[field.key] = value;
  }
  return item;
}

/**
 * List, get, delete and activate items add the chain and the deactivation reasons, and always name the
 * event type. Added to createdItem's object rather than spread into a new one (V8's slow path: a list
 * page paid it 50 times per request).
 */
export function fullItem(s: ShownSubscription): Record<string, unknown> {
  const item = createdItem(s);
  item.eventType = s.eventType;
  item.blockchain = s.blockchain;
  item.network = s.network;
  if (!s.isActive) item.deactivationReasons = s.deactivationReasons;
  return item;
}

const ReferenceParams = Type.Object({ referenceId: Type.String({ maxLength: 100 }) });
const ActivateQuery = Type.Object(
  {
    ...ContextQuery.properties,
    recoverSince: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 253_402_300_799,
        description:
          "Unix seconds: also start a recovery of the subscription's failed callbacks created since then (5 credits per callback queued; the customer needs that much beyond the activation to start it).",
      }),
    ),
  },
  { additionalProperties: false },
);
/** List and delete take every blockchain: any subscription lives on one of them. */
const ANY_CHAIN = EVENT_BLOCKCHAINS.TRANSACTION_MINED;
const AnyChainParams = chainParams(ANY_CHAIN);
const ChainReferenceParams = Type.Composite([AnyChainParams, ReferenceParams]);
type ChainParamsT = { blockchain: Blockchain; network: Network };

const CrossChainQuery = Type.Object(
  {
    ...PageQuery.properties,
    blockchain: Type.Optional(Type.String({ enum: [...BLOCKCHAINS], description: 'Only subscriptions on this blockchain.' })),
    network: Type.Optional(Type.String({ enum: [...NETWORKS], description: 'Only subscriptions on this network.' })),
    eventType: Type.Optional(Type.String({ enum: [...EVENT_TYPES], description: 'Only subscriptions of this event type.' })),
    active: Type.Optional(Type.String({ enum: ['true', 'false'], description: 'Only active (true) or inactive (false) subscriptions.' })),
    q: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        // PostgreSQL text cannot hold U+0000 (path parameters and bodies are checked in server.ts).
        pattern: '^[^\\u0000]*$',
        description:
          'Exact match on the referenceId, the address (as given or in its normalised form, e.g. lower-case hex), the contract address, or the transactionId.',
      }),
    ),
  },
  { additionalProperties: false },
);
type CrossChainQueryT = {
  limit: number;
  offset: number;
  blockchain?: Blockchain;
  network?: Network;
  eventType?: EventType;
  active?: 'true' | 'false';
  q?: string;
};

const DeliveryHealth = Type.Object({
  delivered: Type.Integer({ description: 'Callbacks delivered (among those the log keeps).' }),
  failed: Type.Integer({ description: 'Callbacks failed for good.' }),
  pending: Type.Integer({ description: 'Callbacks queued or being retried.' }),
  retrying: Type.Integer({ description: 'Pending callbacks already tried at least once, waiting for their next attempt.' }),
  successRate: Type.Union([Type.Number({ minimum: 0, maximum: 1 }), Type.Null()], { description: 'delivered / (delivered + failed); null when neither.' }),
  lastDeliveredTimestamp: Type.Union([Type.Integer(), Type.Null()], { description: 'When a callback was last delivered (Unix seconds).' }),
  lastFailedTimestamp: Type.Union([Type.Integer(), Type.Null()], { description: 'When a callback last failed for good (Unix seconds).' }),
  status: Type.Union(
    DELIVERY_STATUSES.map((s) => Type.Literal(s)),
    {
      description:
        'paused (paused by the customer), failing (deactivated by herald, or the last finished callback failed), retrying (callbacks waiting for a retry), delivering (callbacks queued, or one delivered in the last 24 h), idle.',
    },
  ),
});

function healthItem(s: Parameters<typeof deliveryStatus>[0], h: DeliveryHealthT, now: Date) {
  const finished = h.delivered + h.failed;
  return {
    delivered: h.delivered,
    failed: h.failed,
    pending: h.pending,
    retrying: h.retrying,
    successRate: finished === 0 ? null : h.delivered / finished,
    lastDeliveredTimestamp: h.lastDeliveredAt ? unixSeconds(h.lastDeliveredAt) : null,
    lastFailedTimestamp: h.lastFailedAt ? unixSeconds(h.lastFailedAt) : null,
    status: deliveryStatus(s, h, now),
  };
}

export const CREATE_ROUTES: {
  path: string;
  eventType: EventType;
  status: number;
  item: TObject;
  summary: string;
}[] = [
  { path: 'transaction-mined', eventType: 'TRANSACTION_MINED', status: 200, item: TransactionMinedItem, summary: 'Subscribe to a mined transaction' },
  {
    path: 'address-tokens-transactions-confirmed',
    eventType: 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED',
    status: 201,
    item: AddressTokensItem,
    summary: 'Subscribe to new confirmed token transactions of an address',
  },
  {
    path: 'internal-transactions-for-specific-amount',
    eventType: 'CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER',
    status: 201,
    item: InternalTransactionsItem,
    summary: 'Subscribe to confirmed internal transactions at or above an amount',
  },
  { path: 'block-mined', eventType: 'BLOCK_MINED', status: 200, item: BlockMinedItem, summary: 'Subscribe to every new block' },
  {
    path: 'block-height-reached',
    eventType: 'BLOCK_HEIGHT_REACHED',
    status: 201,
    item: BlockHeightReachedItem,
    summary: 'Subscribe to the block at a height (at once when the height is already reached)',
  },
  {
    path: 'reverted-block',
    eventType: 'BLOCK_REVERTED',
    status: 201,
    item: RevertedBlockItem,
    summary: 'Subscribe to every block dropped by a reorganisation (never fires on xrp)',
  },
  {
    path: 'address-tokens-transactions-confirmed-each-confirmation',
    eventType: 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION',
    status: 200,
    item: AddressTokensEachConfirmationItem,
    summary: 'Subscribe to token transactions of an address, one callback at each confirmation up to confirmationsCount',
  },
  {
    path: 'address-internal-transactions-confirmed',
    eventType: 'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED',
    status: 200,
    item: AddressInternalItem,
    summary: 'Subscribe to confirmed internal transactions to or from an address',
  },
  {
    path: 'tokens-transfers-for-specific-amount',
    eventType: 'CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER',
    status: 201,
    item: TokensAmountItem,
    summary: 'Subscribe to confirmed transfers of a token contract at or above an amount (whole tokens)',
  },
  {
    path: 'address-internal-transactions-confirmed-each-confirmation',
    eventType: 'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED_EACH_CONFIRMATION',
    status: 201,
    item: AddressInternalEachConfirmationItem,
    summary: 'Subscribe to internal transactions of an address, one callback at each confirmation up to confirmationsCount',
  },
  {
    path: 'address-coins-transactions-confirmed',
    eventType: 'ADDRESS_COINS_TRANSACTION_CONFIRMED',
    status: 200,
    item: AddressCoinsItem,
    summary: 'Subscribe to confirmed native-coin transactions to or from an address (callbackURL or callbackUrl)',
  },
  {
    path: 'coins-transactions-for-specific-amount',
    eventType: 'CONFIRMED_COINS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER',
    status: 201,
    item: CoinsAmountItem,
    summary: 'Subscribe to confirmed native-coin transactions moving at least an amount',
  },
  {
    path: 'address-coins-transactions-confirmed-each-confirmation',
    eventType: 'ADDRESS_COINS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION',
    status: 201,
    item: AddressCoinsEachConfirmationItem,
    summary: 'Subscribe to native-coin transactions of an address, one callback at each confirmation up to confirmationsCount',
  },
  {
    path: 'address-coins-transactions-unconfirmed',
    eventType: 'ADDRESS_COINS_TRANSACTION_UNCONFIRMED',
    status: 201,
    item: AddressUnconfirmedItem,
    summary: "Subscribe to native-coin transactions of an address when first seen in the node's mempool, before they are mined",
  },
  {
    path: 'address-tokens-transactions-unconfirmed',
    eventType: 'ADDRESS_TOKENS_TRANSACTION_UNCONFIRMED',
    status: 201,
    item: AddressUnconfirmedItem,
    summary:
      "Subscribe to token transfers of an address when first seen in the node's mempool (EVM: direct transfer/transferFrom calls; bitcoin: Omni transfers from Omni Core), before they are mined",
  },
];

export function subscriptionRoutes(app: FastifyInstance, common: Common): void {
  for (const route of CREATE_ROUTES) {
    const chains = EVENT_BLOCKCHAINS[route.eventType];
    app.post<{ Params: ChainParamsT; Body: Static<ReturnType<typeof requestBody<typeof route.item>>> }>(
      `/blockchain-events/:blockchain/:network/subscriptions/${route.path}`,
      {
        config: {
          endpoint: route.path,
          chains,
          errors: [
            'insufficient_credits',
            'feature_mainnets_not_allowed_for_plan',
            'blockchain_events_callbacks_limit_reached',
            'already_exists',
            'callback_url_not_verified',
          ],
        },
        schema: {
          tags: ['subscriptions'],
          summary: route.summary,
          params: chainParams(chains),
          querystring: ContextQuery,
          body: requestBody(route.item),
          response: { [route.status]: envelope(Type.Object({ item: CREATED_ITEMS[route.eventType] })) },
        },
      },
      async (request, reply) => {
        const { blockchain, network } = request.params;
        const result = await service.createSubscription(
          common,
          request.caller,
          route.eventType,
          blockchain,
          network,
          request.body.data.item as unknown as service.SubscriptionItemInput,
        );
        return sendData(request, reply, route.status, { item: createdItem(result.value) }, result);
      },
    );
  }

  app.get<{ Params: ChainParamsT; Querystring: { limit: number; offset: number } }>(
    '/blockchain-events/:blockchain/:network/subscriptions',
    {
      config: { endpoint: 'list-subscriptions', chains: ANY_CHAIN, errors: ['insufficient_credits'] },
      schema: {
        tags: ['subscriptions'],
        summary: "List the customer's subscriptions on one blockchain and network (oldest first)",
        params: AnyChainParams,
        querystring: PageQuery,
        response: { 200: envelope(page(SubscriptionItem)) },
      },
    },
    async (request, reply) => {
      const { limit, offset } = request.query;
      const result = await service.listSubscriptions(common, request.caller, request.params.blockchain, request.params.network, { limit, offset });
      return sendData(request, reply, 200, { limit, offset, total: result.value.total, items: result.value.items.map(fullItem) }, result);
    },
  );

  app.get<{ Querystring: CrossChainQueryT }>(
    '/blockchain-events/subscriptions',
    {
      config: { endpoint: 'list-subscriptions', errors: [] },
      schema: {
        tags: ['subscriptions'],
        summary: "List the customer's subscriptions on every chain (oldest first), filtered, each with its delivery health. Free (the console's list).",
        querystring: CrossChainQuery,
        response: { 200: envelope(page(Type.Composite([SubscriptionItem, Type.Object({ health: DeliveryHealth })]))) },
      },
    },
    async (request, reply) => {
      const { limit, offset, blockchain, network, eventType, active, q } = request.query;
      const filter = { blockchain, network, eventType, isActive: active === undefined ? undefined : active === 'true', q };
      const result = await service.searchSubscriptions(common, request.caller, filter, { limit, offset });
      const now = new Date();
      const items = result.value.items.map((s) => ({ ...fullItem(s), health: healthItem(s, s.health, now) }));
      return sendData(request, reply, 200, { limit, offset, total: result.value.total, items }, result);
    },
  );

  app.get<{ Params: { referenceId: string } }>(
    '/blockchain-events/subscriptions/:referenceId',
    {
      config: { endpoint: 'get-subscription', errors: ['resource_not_found', 'insufficient_credits'] },
      schema: {
        tags: ['subscriptions'],
        summary: 'Get one subscription',
        params: ReferenceParams,
        querystring: ContextQuery,
        response: { 200: envelope(Type.Object({ item: SubscriptionItem })) },
      },
    },
    async (request, reply) => {
      const result = await service.getSubscription(common, request.caller, request.params.referenceId);
      return sendData(request, reply, 200, { item: fullItem(result.value) }, result);
    },
  );

  app.delete<{ Params: ChainParamsT & { referenceId: string } }>(
    '/blockchain-events/:blockchain/:network/subscriptions/:referenceId',
    {
      config: { endpoint: 'delete-subscription', chains: ANY_CHAIN, errors: ['resource_not_found', 'insufficient_credits'] },
      schema: {
        tags: ['subscriptions'],
        summary: 'Delete a subscription; its pending callbacks are cancelled',
        params: ChainReferenceParams,
        querystring: ContextQuery,
        response: { 200: envelope(Type.Object({ item: SubscriptionItem })) },
      },
    },
    async (request, reply) => {
      const { blockchain, network, referenceId } = request.params;
      const result = await service.deleteSubscription(common, request.caller, blockchain, network, referenceId);
      return sendData(request, reply, 200, { item: fullItem(result.value) }, result);
    },
  );

  app.post<{ Params: { referenceId: string }; Querystring: { recoverSince?: number } }>(
    '/blockchain-events/subscriptions/:referenceId/activate',
    {
      config: {
        endpoint: 'activate-subscription',
        errors: [
          'resource_not_found',
          'insufficient_credits',
          'feature_mainnets_not_allowed_for_plan',
          'blockchain_events_callbacks_limit_reached',
          'already_exists',
          'callback_url_not_verified',
          'pull_only_subscription',
        ],
      },
      schema: {
        tags: ['subscriptions'],
        summary: 'Activate a subscription (again); with recoverSince, also queue again its failed callbacks since then (a recovery job)',
        params: ReferenceParams,
        querystring: ActivateQuery,
        response: {
          201: envelope(
            Type.Object({
              item: SubscriptionItem,
              recoveryId: Type.Optional(Type.String({ description: 'The recovery job started by recoverSince (GET /blockchain-events/recoveries/{id}).' })),
            }),
          ),
        },
      },
    },
    async (request, reply) => {
      const result = await service.activateSubscription(common, request.caller, request.params.referenceId, { recoverSince: request.query.recoverSince });
      const { recoveryId } = result.value;
      return sendData(request, reply, 201, { item: fullItem(result.value), ...(recoveryId !== undefined && { recoveryId }) }, result);
    },
  );
}

const RotateSecretItem = Type.Object(
  {
    callbackSecretKey: Type.String({ minLength: 1, maxLength: 512, description: 'The new key of the HMAC-SHA256 signatures.' }),
    overlapSeconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: service.MAX_ROTATION_OVERLAP_SECONDS,
        description:
          'How long the replaced secret keeps signing beside the new one (both signatures on each callback). Default 86400 (24 h); 0 ends it at once.',
      }),
    ),
  },
  { additionalProperties: false },
);

export function rotateSecretRoutes(app: FastifyInstance, common: Common): void {
  app.post<{ Params: { referenceId: string }; Body: { data: { item: { callbackUrl: string } } } }>(
    '/blockchain-events/subscriptions/:referenceId/callback-url',
    {
      config: {
        endpoint: 'activate-subscription',
        errors: ['resource_not_found', 'insufficient_credits', 'callback_url_not_verified', 'already_exists', 'pull_only_subscription'],
      },
      schema: {
        tags: ['subscriptions'],
        summary:
          "Change the subscription's callbackUrl (https, on a verified callback domain); its pending callbacks go to the new URL from their next attempt",
        params: ReferenceParams,
        querystring: ContextQuery,
        body: requestBody(
          Type.Object(
            { callbackUrl: Type.String({ minLength: 1, maxLength: 2048, description: 'https URL whose host is a verified callback domain.' }) },
            { additionalProperties: false },
          ),
        ),
        response: { 200: envelope(Type.Object({ item: SubscriptionItem })) },
      },
    },
    async (request, reply) => {
      const result = await service.changeCallbackUrl(common, request.caller, request.params.referenceId, request.body.data.item.callbackUrl);
      return sendData(request, reply, 200, { item: fullItem(result.value) }, result);
    },
  );

  app.post<{ Params: { referenceId: string } }>(
    '/blockchain-events/subscriptions/:referenceId/pause',
    {
      config: { endpoint: 'activate-subscription', errors: ['resource_not_found', 'insufficient_credits'] },
      schema: {
        tags: ['subscriptions'],
        summary:
          "Pause a subscription: inactive (its last deactivation reason 'paused'), its pending callbacks held until POST .../activate resumes it; an inactive one is left as it is. Free.",
        params: ReferenceParams,
        querystring: ContextQuery,
        response: { 200: envelope(Type.Object({ item: SubscriptionItem })) },
      },
    },
    async (request, reply) => {
      const result = await service.pauseSubscription(common, request.caller, request.params.referenceId);
      return sendData(request, reply, 200, { item: fullItem(result.value) }, result);
    },
  );

  app.post<{ Params: { referenceId: string }; Body: Static<ReturnType<typeof requestBody<typeof RotateSecretItem>>> }>(
    '/blockchain-events/subscriptions/:referenceId/rotate-secret',
    {
      config: { endpoint: 'rotate-secret', errors: ['resource_not_found', 'insufficient_credits', 'pull_only_subscription'] },
      schema: {
        tags: ['subscriptions'],
        summary:
          "Replace the subscription's callbackSecretKey; during the overlap each callback is signed with both secrets (webhook-signature with two v1 entries, x-signature with the new one and x-signature-previous with the old), then only with the new one",
        params: ReferenceParams,
        querystring: ContextQuery,
        body: requestBody(RotateSecretItem),
        response: {
          200: envelope(
            Type.Object({
              item: Type.Composite([
                SubscriptionItem,
                Type.Object({
                  previousSecretValidUntil: Type.Union([Type.Integer(), Type.Null()], {
                    description: "Until when (Unix seconds) callbacks also carry the replaced secret's signatures; null when there was no secret before.",
                  }),
                }),
              ]),
            }),
          ),
        },
      },
    },
    async (request, reply) => {
      const result = await service.rotateSecret(common, request.caller, request.params.referenceId, request.body.data.item);
      const s = result.value;
      const until = s.previousCallbackSecretKey && s.previousSecretUntil ? unixSeconds(s.previousSecretUntil) : null;
      return sendData(request, reply, 200, { item: { ...fullItem(s), previousSecretValidUntil: until } }, result);
    },
  );
}
