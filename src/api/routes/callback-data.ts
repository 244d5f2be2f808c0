/**
 * The Callback Data reads (docs/reference/api.md#callback-data-reads): an address, a block by hash or height, a
 * transaction, on the chains of docs/reference/api.md#settled-statuses-chains-and-prices (the address read has no tron: 400 uri_not_found naming the
 * blockchain).
 */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { ADDRESS_READ_BLOCKCHAINS, BLOCKCHAINS, type Blockchain, type Network } from '../../domain/chains.ts';
import * as service from '../../services/callback-data.ts';
import type { Common } from '../../services/context.ts';
import { AddressDetailsItem, BlockByHashItem, BlockByHeightItem, TransactionItem } from '../callback-data-schemas.ts';
import { sendData } from '../envelope.ts';
import { ContextQuery, chainParams, envelope } from '../schemas.ts';

/** docs/reference/api.md#settled-statuses-chains-and-prices: the block and transaction reads take every chain, the address read every chain but tron. */
export const CALLBACK_DATA_CHAINS: readonly Blockchain[] = BLOCKCHAINS;
export const ADDRESS_READ_CHAINS: readonly Blockchain[] = ADDRESS_READ_BLOCKCHAINS;

const PREFIX = '/blockchain-events/:blockchain/:network';
const withParam = (name: string, description: string, chains = CALLBACK_DATA_CHAINS) =>
  Type.Composite([chainParams(chains), Type.Object({ [name]: Type.String({ minLength: 1, maxLength: 200, description }) })]);

type P<K extends string> = { blockchain: Blockchain; network: Network } & Record<K, string>;

export function callbackDataRoutes(app: FastifyInstance, common: Common): void {
  const config = { endpoint: 'callback-data', chains: CALLBACK_DATA_CHAINS } as const;

  app.get<{ Params: P<'address'> }>(
    `${PREFIX}/addresses/:address`,
    {
      config: {
        ...config,
        chains: ADDRESS_READ_CHAINS,
        errors: ['blockchain_data_address_event_subscription_not_found', 'insufficient_credits', 'feature_mainnets_not_allowed_for_plan'],
      },
      schema: {
        tags: ['callback data'],
        summary: "Details of an address one of the customer's active subscriptions names (balance and totals from herald's wallet ledger)",
        description:
          "Answers for any address an active address subscription (coins, tokens, internal transactions) of the customer names on the chain; otherwise, also once the subscription is deleted or deactivated, 404 blockchain_data_address_event_subscription_not_found. The subscription watches the address for herald's wallet ledger from its creation: watchedFromBlock says from which block the totals count, openingBalance whether the balance includes the opening balance the node gave at that block.",
        params: withParam('address', "An address named by one of the customer's active subscriptions on the chain.", ADDRESS_READ_CHAINS),
        querystring: ContextQuery,
        response: { 200: envelope(Type.Object({ item: AddressDetailsItem })) },
      },
    },
    async (request, reply) => {
      const { blockchain, network, address } = request.params;
      const result = await service.getAddressDetails(common, request.caller, blockchain, network, address);
      return sendData(request, reply, 200, { item: result.value }, result);
    },
  );

  app.get<{ Params: P<'blockHash'> }>(
    `${PREFIX}/blocks/hash/:blockHash`,
    {
      config: { ...config, errors: ['blockchain_data_block_not_found', 'insufficient_credits', 'feature_mainnets_not_allowed_for_plan'] },
      schema: {
        tags: ['callback data'],
        summary: "Details of a block of the chain's main chain, by hash (read from the chain's node)",
        params: withParam('blockHash', 'EVM: 0x and 64 hex characters; the other chains: 64 hex characters.'),
        querystring: ContextQuery,
        response: { 200: envelope(Type.Object({ item: BlockByHashItem })) },
      },
    },
    async (request, reply) => {
      const { blockchain, network, blockHash } = request.params;
      const result = await service.getBlockByHash(common, request.caller, blockchain, network, blockHash);
      const { evm, ...block } = result.value;
      return sendData(request, reply, 200, { item: { ...block, ...evm } }, result);
    },
  );

  app.get<{ Params: P<'blockHeight'> }>(
    `${PREFIX}/blocks/height/:blockHeight`,
    {
      config: { ...config, errors: ['blockchain_data_block_not_found', 'insufficient_credits', 'feature_mainnets_not_allowed_for_plan'] },
      schema: {
        tags: ['callback data'],
        summary: "Details of the block at a height of the chain's main chain (read from the chain's node)",
        params: withParam('blockHeight', 'A block number (decimal digits).'),
        querystring: ContextQuery,
        response: { 200: envelope(Type.Object({ item: BlockByHeightItem })) },
      },
    },
    async (request, reply) => {
      const { blockchain, network, blockHeight } = request.params;
      const result = await service.getBlockByHeight(common, request.caller, blockchain, network, blockHeight);
      const { evm: _evm, ...block } = result.value;
      return sendData(request, reply, 200, { item: block }, result);
    },
  );

  app.get<{ Params: P<'transactionId'> }>(
    `${PREFIX}/transactions/:transactionId`,
    {
      config: { ...config, errors: ['resource_not_found', 'insufficient_credits', 'feature_mainnets_not_allowed_for_plan'] },
      schema: {
        tags: ['callback data'],
        summary: "Details of a transaction mined in a block of the chain's main chain (read from the chain's node)",
        params: withParam('transactionId', 'The transaction id (txid; on EVM chains the 0x hash).'),
        querystring: ContextQuery,
        response: { 200: envelope(Type.Object({ item: TransactionItem })) },
      },
    },
    async (request, reply) => {
      const { blockchain, network, transactionId } = request.params;
      const result = await service.getTransaction(common, request.caller, blockchain, network, transactionId);
      return sendData(request, reply, 200, { item: result.value }, result);
    },
  );
}
