/** Endpoint 4 (all assets) and the wallet endpoints of docs/reference/api.md#wallets. */

import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { formatUnits } from '../../domain/amounts.ts';
import { BLOCKCHAINS, type Blockchain, CHAINS, type Network, XPUB_BLOCKCHAINS } from '../../domain/chains.ts';
import { unixSeconds } from '../../domain/time.ts';
import type { Common } from '../../services/context.ts';
import * as service from '../../services/wallets.ts';
import type { WalletXpub } from '../../store/wallet-xpubs.ts';
import type { WalletAddress } from '../../store/wallets.ts';
import { sendData, sendJsonText } from '../envelope.ts';
import {
  ContextQuery,
  chainParams,
  envelope,
  PageQuery,
  page,
  requestBody,
  WalletAssetRecord,
  WalletDetail,
  WalletXpubItem,
  WatchedAddress,
  XpubKeyFields,
} from '../schemas.ts';

function addressItem(a: WalletAddress) {
  return {
    blockchain: a.blockchain,
    network: a.network,
    address: a.address,
    watchedFromBlock: a.watchedFromBlock === null ? null : Number(a.watchedFromBlock),
    createdTimestamp: unixSeconds(a.createdAt),
  };
}

function xpubItem(x: WalletXpub) {
  return {
    xpubId: x.id,
    blockchain: x.blockchain,
    network: x.network,
    [x.key.field]: x.key.text,
    ...(x.key.derivation === null ? {} : { derivation: x.key.derivation }),
    gapLimit: x.key.gapLimit,
    watchedAddresses: x.watchedAddresses,
    usedAddresses: x.usedAddresses,
    watchedFromBlock: x.watchedFromBlock === null ? null : Number(x.watchedFromBlock),
    createdTimestamp: unixSeconds(x.createdAt),
  };
}

const WalletParams = Type.Object({ walletId: Type.String({ maxLength: 100 }) });
const WalletChainParams = Type.Composite([WalletParams, chainParams(BLOCKCHAINS)]);
const WalletAddressParams = Type.Composite([WalletChainParams, Type.Object({ address: Type.String({ maxLength: 200 }) })]);
const WalletKeyChainParams = Type.Composite([WalletParams, chainParams(XPUB_BLOCKCHAINS)]);
const WalletXpubParams = Type.Composite([WalletKeyChainParams, Type.Object({ xpubId: Type.String({ maxLength: 100 }) })]);
type ChainP = { walletId: string; blockchain: Blockchain; network: Network };

const KeyAddressesQuery = Type.Object(
  {
    ...PageQuery.properties,
    change: Type.Optional(Type.String({ enum: ['true', 'false'], description: 'Only the change chain (true) or the receive chain (false).' })),
    used: Type.Optional(Type.String({ enum: ['true', 'false'], description: 'Only used (true) or unused (false) addresses.' })),
  },
  { additionalProperties: false },
);

const KeyAddressItem = Type.Object({
  address: Type.String({ description: 'The derived address, in the spelling matching compares (lower-case bech32, cashaddr, lower-case 0x).' }),
  derivationPath: Type.String({ description: "From the descriptor's origin when it gives one (m/84'/0'/0'/0/5), else from the key (m/0/5)." }),
  index: Type.Integer({ minimum: 0 }),
  change: Type.Boolean({ description: 'true: the change chain (/1/i); false: the receive chain (/0/i, the only one on the account chains).' }),
  used: Type.Boolean({ description: 'It moved coins or tokens in a block herald applied, or held coins when the window reached it.' }),
  firstSeenHeight: Type.Union([Type.Integer(), Type.Null()], { description: 'The block where it was first seen used; null while unused.' }),
  confirmedBalance: Type.String({ description: "Its part of the wallet's confirmedBalance, in the chain's unit." }),
  openingBalance: Type.Union([Type.Literal('read'), Type.Literal('pending'), Type.Literal('unavailable')], {
    description: "As the wallet's coins say it, for this address (read at its watchedFromBlock).",
  }),
});

const flag = (value: 'true' | 'false' | undefined) => (value === undefined ? undefined : value === 'true');

export function walletRoutes(app: FastifyInstance, common: Common): void {
  app.get<{ Querystring: { limit: number; offset: number } }>(
    '/wallet-as-a-service/wallets/all-assets',
    {
      config: { endpoint: 'all-assets', errors: ['insufficient_credits'] },
      schema: {
        tags: ['wallets'],
        summary: "List the assets of all the customer's wallets (oldest wallet first)",
        querystring: PageQuery,
        response: { 200: envelope(page(WalletAssetRecord)) },
      },
    },
    async (request, reply) => {
      const { limit, offset } = request.query;
      const result = await service.listAssets(common, request.caller, { limit, offset });
      const { total, itemsJson } = result.value;
      return sendJsonText(request, reply, 200, `{"limit":${limit},"offset":${offset},"total":${total},"items":${itemsJson}}`, result);
    },
  );

  app.post<{ Body: { data: { item: { walletName: string } } } }>(
    '/wallet-as-a-service/wallets',
    {
      config: { endpoint: 'wallets', errors: ['insufficient_credits'] },
      schema: {
        tags: ['wallets'],
        summary: 'Create a watch-only wallet',
        querystring: ContextQuery,
        body: requestBody(Type.Object({ walletName: Type.String({ minLength: 1, maxLength: 100 }) }, { additionalProperties: false })),
        response: {
          201: envelope(Type.Object({ item: Type.Object({ walletId: Type.String(), walletName: Type.String(), createdTimestamp: Type.Integer() }) })),
        },
      },
    },
    async (request, reply) => {
      const result = await service.createWallet(common, request.caller, request.body.data.item.walletName);
      const w = result.value;
      return sendData(request, reply, 201, { item: { walletId: w.id, walletName: w.name, createdTimestamp: unixSeconds(w.createdAt) } }, result);
    },
  );

  app.get<{ Params: { walletId: string } }>(
    '/wallet-as-a-service/wallets/:walletId',
    {
      config: { endpoint: 'wallets', errors: ['resource_not_found', 'insufficient_credits'] },
      schema: {
        tags: ['wallets'],
        summary: 'Get one wallet: its watched addresses and assets',
        params: WalletParams,
        querystring: ContextQuery,
        response: { 200: envelope(Type.Object({ item: WalletDetail })) },
      },
    },
    async (request, reply) => {
      const result = await service.getWallet(common, request.caller, request.params.walletId);
      const { record, createdAt, addresses, xpubs } = result.value;
      return sendData(
        request,
        reply,
        200,
        { item: { ...record, createdTimestamp: unixSeconds(createdAt), addresses: addresses.map(addressItem), xpubs: xpubs.map(xpubItem) } },
        result,
      );
    },
  );

  app.post<{ Params: ChainP; Body: { data: { item: { address: string } } } }>(
    '/wallet-as-a-service/wallets/:walletId/:blockchain/:network/addresses',
    {
      config: {
        endpoint: 'wallets',
        chains: BLOCKCHAINS,
        errors: ['resource_not_found', 'insufficient_credits', 'feature_mainnets_not_allowed_for_plan', 'already_exists'],
      },
      schema: {
        tags: ['wallets'],
        summary: 'Watch an address in a wallet',
        params: WalletChainParams,
        querystring: ContextQuery,
        body: requestBody(Type.Object({ address: Type.String({ minLength: 1, maxLength: 128 }) }, { additionalProperties: false })),
        response: { 201: envelope(Type.Object({ item: WatchedAddress })) },
      },
    },
    async (request, reply) => {
      const { walletId, blockchain, network } = request.params;
      const result = await service.addAddress(common, request.caller, walletId, blockchain, network, request.body.data.item.address);
      return sendData(request, reply, 201, { item: addressItem(result.value) }, result);
    },
  );

  app.delete<{ Params: ChainP & { address: string } }>(
    '/wallet-as-a-service/wallets/:walletId/:blockchain/:network/addresses/:address',
    {
      config: { endpoint: 'wallets', chains: BLOCKCHAINS, errors: ['resource_not_found', 'insufficient_credits'] },
      schema: {
        tags: ['wallets'],
        summary: 'Stop watching an address',
        params: WalletAddressParams,
        querystring: ContextQuery,
        response: { 200: envelope(Type.Object({ item: WatchedAddress })) },
      },
    },
    async (request, reply) => {
      const { walletId, blockchain, network, address } = request.params;
      const result = await service.removeAddress(common, request.caller, walletId, blockchain, network, address);
      return sendData(request, reply, 200, { item: addressItem(result.value) }, result);
    },
  );

  app.post<{ Params: ChainP; Body: { data: { item: service.WalletKeyInput } } }>(
    '/wallet-as-a-service/wallets/:walletId/:blockchain/:network/xpubs',
    {
      config: {
        endpoint: 'wallets',
        chains: XPUB_BLOCKCHAINS,
        errors: ['resource_not_found', 'insufficient_credits', 'feature_mainnets_not_allowed_for_plan', 'already_exists'],
      },
      schema: {
        tags: ['wallets'],
        summary:
          "Hold an extended public key or output descriptor in a wallet: its derived addresses are watched (gapLimit unused beyond the highest used, on the receive and the change chain; the account chains: a BIP44 account key, receive chain only) and the wallet's coin balance sums them",
        params: WalletKeyChainParams,
        querystring: ContextQuery,
        body: requestBody(Type.Object(XpubKeyFields, { additionalProperties: false })),
        response: { 201: envelope(Type.Object({ item: WalletXpubItem })) },
      },
    },
    async (request, reply) => {
      const { walletId, blockchain, network } = request.params;
      const result = await service.addXpub(common, request.caller, walletId, blockchain, network, request.body.data.item);
      return sendData(request, reply, 201, { item: xpubItem(result.value) }, result);
    },
  );

  app.delete<{ Params: ChainP & { xpubId: string } }>(
    '/wallet-as-a-service/wallets/:walletId/:blockchain/:network/xpubs/:xpubId',
    {
      config: { endpoint: 'wallets', chains: XPUB_BLOCKCHAINS, errors: ['resource_not_found', 'insufficient_credits'] },
      schema: {
        tags: ['wallets'],
        summary: 'Stop holding an extended key: its derived addresses are no longer watched and leave the balance',
        params: WalletXpubParams,
        querystring: ContextQuery,
        response: { 200: envelope(Type.Object({ item: WalletXpubItem })) },
      },
    },
    async (request, reply) => {
      const { walletId, blockchain, network, xpubId } = request.params;
      const result = await service.removeXpub(common, request.caller, walletId, blockchain, network, xpubId);
      return sendData(request, reply, 200, { item: xpubItem(result.value) }, result);
    },
  );

  app.get<{
    Params: ChainP & { xpubId: string };
    Querystring: { limit: number; offset: number; change?: 'true' | 'false'; used?: 'true' | 'false' };
  }>(
    '/wallet-as-a-service/wallets/:walletId/:blockchain/:network/xpubs/:xpubId/addresses',
    {
      config: { endpoint: 'wallets', chains: XPUB_BLOCKCHAINS, errors: ['resource_not_found', 'insufficient_credits'] },
      schema: {
        tags: ['wallets'],
        summary:
          "The derived addresses of a wallet's extended key that the wallet watches and counts (receive chain first, by index), with their balances, filtered by change and used",
        params: WalletXpubParams,
        querystring: KeyAddressesQuery,
        response: { 200: envelope(page(KeyAddressItem)) },
      },
    },
    async (request, reply) => {
      const { walletId, blockchain, network, xpubId } = request.params;
      const { limit, offset, change, used } = request.query;
      const result = await service.listXpubAddresses(
        common,
        request.caller,
        walletId,
        blockchain,
        network,
        xpubId,
        { change: flag(change), used: flag(used) },
        { limit, offset },
      );
      const { decimals } = CHAINS[blockchain];
      const items = result.value.items.map((a) => ({
        address: a.address,
        derivationPath: a.derivationPath,
        index: a.index,
        change: a.change,
        used: a.usedHeight !== null,
        firstSeenHeight: a.usedHeight,
        confirmedBalance: formatUnits(a.confirmedBalance, decimals),
        openingBalance: a.openingState,
      }));
      return sendData(request, reply, 200, { limit, offset, total: result.value.total, items }, result);
    },
  );
}
