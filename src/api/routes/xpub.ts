/**
 * Wallet-key subscriptions (docs/concepts/wallet-keys.md): the creates of XPUB_COINS_TRANSACTION_CONFIRMED and
 * XPUB_COINS_TRANSACTION_UNCONFIRMED and the reads of their derived addresses. Its list, get, delete and activate are every subscription's
 * (routes/subscriptions.ts). Thin: schema, service, mapping.
 */
import { type Static, Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { type Blockchain, type Network, XPUB_BLOCKCHAINS, XPUB_UNCONFIRMED_BLOCKCHAINS } from '../../domain/chains.ts';
import type { DerivedAddressRow } from '../../domain/subscriptions.ts';
import type { Common } from '../../services/context.ts';
import * as service from '../../services/xpub-subscriptions.ts';
import { sendData } from '../envelope.ts';
import { ContextQuery, CREATED_ITEMS, chainParams, envelope, PageQuery, page, requestBody, XpubCoinsItem, XpubCoinsUnconfirmedItem } from '../schemas.ts';
import { createdItem } from './subscriptions.ts';

export const XPUB_PATH = 'xpub-coins-transactions-confirmed';
export const XPUB_UNCONFIRMED_PATH = 'xpub-coins-transactions-unconfirmed';

const CREATES = [
  {
    path: XPUB_PATH,
    eventType: service.EVENT,
    item: XpubCoinsItem,
    chains: XPUB_BLOCKCHAINS,
    summary:
      'Subscribe an extended public key or output descriptor: one callback per confirmed transaction of the wallet, gapLimit unused addresses watched beyond the highest used (Bitcoin family: receive and change chains; ethereum, ethereum-classic, binance-smart-chain, tron: a BIP44 account key, receive chain only, native coin only)',
  },
  {
    path: XPUB_UNCONFIRMED_PATH,
    eventType: service.UNCONFIRMED_EVENT,
    item: XpubCoinsUnconfirmedItem,
    chains: XPUB_UNCONFIRMED_BLOCKCHAINS,
    summary:
      "Subscribe an extended public key or output descriptor: one callback per transaction of the wallet when first seen in the node's mempool, before it is mined (Bitcoin family; ethereum, ethereum-classic, binance-smart-chain: a BIP44 account key, the value of pending transactions, no fee before mining)",
  },
] as const;

const ReferenceParams = Type.Object({ referenceId: Type.String({ maxLength: 100 }) });

const AddressesQuery = Type.Object(
  {
    ...PageQuery.properties,
    change: Type.Optional(Type.String({ enum: ['true', 'false'], description: 'Only the change chain (true) or the receive chain (false).' })),
    used: Type.Optional(Type.String({ enum: ['true', 'false'], description: 'Only used (true) or unused (false) addresses.' })),
  },
  { additionalProperties: false },
);

const DerivedAddress = Type.Object({
  address: Type.String({
    description: 'The derived address (normalised: lower-case bech32, cashaddr with its prefix, lower-case 0x on EVM chains, base58 T... on tron).',
  }),
  derivationPath: Type.String({ description: "From the descriptor's origin when it gives one (m/84'/0'/0'/0/5), else from the key (m/0/5)." }),
  index: Type.Integer({ minimum: 0 }),
  change: Type.Boolean({ description: 'true: the change chain (/1/i); false: the receive chain (/0/i, the only one on the account chains).' }),
  used: Type.Boolean({ description: 'A confirmed-chain transaction herald followed paid to or spent from it.' }),
  firstSeenHeight: Type.Union([Type.Integer(), Type.Null()], { description: 'The block where herald first saw it used; null while unused.' }),
});

const addressItem = (a: DerivedAddressRow) => ({
  address: a.address,
  derivationPath: a.derivationPath,
  index: a.index,
  change: a.change,
  used: a.used,
  firstSeenHeight: a.firstSeenHeight,
});

const flag = (value: 'true' | 'false' | undefined) => (value === undefined ? undefined : value === 'true');

export function xpubRoutes(app: FastifyInstance, common: Common): void {
  for (const create of CREATES) {
    app.post<{ Params: { blockchain: Blockchain; network: Network }; Body: Static<ReturnType<typeof requestBody<typeof XpubCoinsItem>>> }>(
      `/blockchain-events/:blockchain/:network/subscriptions/${create.path}`,
      {
        config: {
          endpoint: create.path,
          chains: create.chains,
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
          summary: create.summary,
          params: chainParams(create.chains),
          querystring: ContextQuery,
          body: requestBody(create.item),
          response: { 201: envelope(Type.Object({ item: CREATED_ITEMS[create.eventType] })) },
        },
      },
      async (request, reply) => {
        const { blockchain, network } = request.params;
        const item = request.body.data.item as service.XpubItemInput;
        const result = await service.createXpubSubscription(common, request.caller, blockchain, network, item, create.eventType);
        return sendData(request, reply, 201, { item: createdItem(result.value) }, result);
      },
    );
  }

  app.get<{ Params: { referenceId: string }; Querystring: { limit: number; offset: number; change?: 'true' | 'false'; used?: 'true' | 'false' } }>(
    '/blockchain-events/subscriptions/:referenceId/addresses',
    {
      config: { endpoint: 'get-subscription', errors: ['resource_not_found', 'insufficient_credits'] },
      schema: {
        tags: ['subscriptions'],
        summary:
          'The derived addresses of an XPUB_COINS_TRANSACTION_CONFIRMED or _UNCONFIRMED subscription (receive chain first, by index), filtered by change and used',
        params: ReferenceParams,
        querystring: AddressesQuery,
        response: { 200: envelope(page(DerivedAddress)) },
      },
    },
    async (request, reply) => {
      const { limit, offset, change, used } = request.query;
      const result = await service.listAddresses(
        common,
        request.caller,
        request.params.referenceId,
        { change: flag(change), used: flag(used) },
        { limit, offset },
      );
      return sendData(request, reply, 200, { limit, offset, total: result.value.total, items: result.value.items.map(addressItem) }, result);
    },
  );

  app.get<{ Params: { referenceId: string } }>(
    '/blockchain-events/subscriptions/:referenceId/addresses/next',
    {
      config: { endpoint: 'get-subscription', errors: ['resource_not_found', 'insufficient_credits'] },
      schema: {
        tags: ['subscriptions'],
        summary:
          'The receive address after the highest used one of an XPUB_COINS_TRANSACTION_CONFIRMED or _UNCONFIRMED subscription: the one a wallet hands out next',
        params: ReferenceParams,
        querystring: ContextQuery,
        response: { 200: envelope(Type.Object({ item: DerivedAddress })) },
      },
    },
    async (request, reply) => {
      const result = await service.nextAddress(common, request.caller, request.params.referenceId);
      return sendData(request, reply, 200, { item: addressItem(result.value) }, result);
    },
  );
}
