/**
 * Request and response schemas (TypeBox). Fastify validates requests with them and @fastify/swagger
 * turns the same objects into /openapi.json, so the document cannot drift from the code.
 */
import { type TSchema, Type } from '@sinclair/typebox';
import { BLOCKCHAINS, NETWORKS } from '../domain/chains.ts';

export const API_VERSION = '2021-03-20';
export const MAX_PAGE = 50;
/** Far beyond any real list; keeps the value a safe integer all the way to SQL. */
export const MAX_OFFSET = 2_147_483_647;

export const Context = Type.String({ maxLength: 100, description: 'Correlation string echoed in the response (at most 100 characters).' });

export const ContextQuery = Type.Object({ context: Type.Optional(Context) }, { additionalProperties: false });

export const PageQuery = Type.Object(
  {
    context: Type.Optional(Context),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE, default: MAX_PAGE, description: 'Items per page, 1 to 50.' })),
    offset: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_OFFSET, default: 0, description: 'Index of the first item.' })),
  },
  { additionalProperties: false },
);

export const ChainParams = Type.Object({
  blockchain: Type.String({ enum: [...BLOCKCHAINS] }),
  network: Type.String({ enum: [...NETWORKS] }),
});

/** The POST body shape of the contract: { context?, data: { item } }. */
export function requestBody<T extends TSchema>(item: T) {
  return Type.Object({ context: Type.Optional(Context), data: Type.Object({ item }, { additionalProperties: false }) }, { additionalProperties: false });
}

/** The success envelope around `data`. */
export function envelope<T extends TSchema>(data: T) {
  return Type.Object({
    apiVersion: Type.String({ example: API_VERSION }),
    requestId: Type.String({ description: '24 lower-case hex characters, also in the x-request-id header.' }),
    context: Type.Optional(Type.String()),
    data,
  });
}

export function page<T extends TSchema>(item: T) {
  return Type.Object({ limit: Type.Integer(), offset: Type.Integer(), total: Type.Integer(), items: Type.Array(item) });
}

export const ErrorEnvelope = Type.Object(
  {
    apiVersion: Type.String(),
    requestId: Type.String(),
    context: Type.Optional(Type.String()),
    error: Type.Object({
      code: Type.String(),
      message: Type.String(),
      details: Type.Optional(Type.Array(Type.Object({ attribute: Type.String(), message: Type.String() }))),
    }),
  },
  { $id: 'ErrorEnvelope' },
);

const CallbackUrl = Type.String({ minLength: 1, maxLength: 2048, description: 'https URL whose host is a verified callback domain.' });
const SecretKey = Type.String({ maxLength: 512, description: 'Key of the HMAC-SHA256 x-signature of each callback.' });
const AllowDuplicates = Type.Boolean({ description: 'Allow an active twin (same event, target and callbackUrl). Default false.' });

export const TransactionMinedItem = Type.Object(
  {
    transactionId: Type.String({ minLength: 1, maxLength: 128 }),
    callbackUrl: CallbackUrl,
    callbackSecretKey: Type.Optional(SecretKey),
    allowDuplicates: Type.Optional(AllowDuplicates),
  },
  { additionalProperties: false },
);

export const AddressTokensItem = Type.Object(
  {
    address: Type.String({ minLength: 1, maxLength: 128 }),
    callbackUrl: CallbackUrl,
    callbackSecretKey: Type.Optional(SecretKey),
    allowDuplicates: Type.Optional(AllowDuplicates),
    receiveCallbackOn: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'Confirmation on which the callback is sent; default 3.' })),
  },
  { additionalProperties: false },
);

export const InternalTransactionsItem = Type.Object(
  {
    amountHigherThan: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'Threshold in whole coins of the native unit.' }),
    callbackUrl: CallbackUrl,
    callbackSecretKey: Type.Optional(SecretKey),
    allowDuplicates: Type.Optional(AllowDuplicates),
  },
  { additionalProperties: false },
);

const DeactivationReason = Type.Object({ reason: Type.String(), timestamp: Type.Integer() });

/** Everything a subscription item may hold; each endpoint fills its own subset. */
export const SubscriptionItem = Type.Object({
  referenceId: Type.String({ format: 'uuid' }),
  eventType: Type.String(),
  createdTimestamp: Type.Integer(),
  isActive: Type.Boolean(),
  callbackUrl: Type.String(),
  callbackSecretKey: Type.Optional(Type.String()),
  transactionId: Type.Optional(Type.String()),
  address: Type.Optional(Type.String()),
  receiveCallbackOn: Type.Optional(Type.Integer()),
  amountHigherThan: Type.Optional(Type.Integer()),
  blockchain: Type.Optional(Type.String()),
  network: Type.Optional(Type.String()),
  deactivationReasons: Type.Optional(Type.Array(DeactivationReason)),
});

const Coin = Type.Object({
  blockchain: Type.String(),
  network: Type.String(),
  unit: Type.String(),
  confirmedBalance: Type.String(),
  totalReceived: Type.String(),
  totalSpent: Type.String(),
  openingBalance: Type.Union([Type.Literal('read'), Type.Literal('pending'), Type.Literal('unavailable')], {
    description:
      "Extension. 'read': the balance includes the opening balance read from the node at watchedFromBlock; 'pending': not yet (that block is not confirmed yet); 'unavailable': the node cannot tell (e.g. no scantxoutset, pruned state), so the balance counts movements from watchedFromBlock only.",
  }),
});
const FungibleToken = Type.Object({
  amount: Type.String(),
  blockchain: Type.String(),
  network: Type.String(),
  identifier: Type.String(),
  symbol: Type.String(),
  type: Type.String(),
});
const NonFungibleToken = Type.Object({
  blockchain: Type.String(),
  network: Type.String(),
  identifier: Type.String(),
  symbol: Type.String(),
  tokenId: Type.String(),
  type: Type.String(),
});

export const WalletAssetRecord = Type.Object({
  walletId: Type.String(),
  walletName: Type.String(),
  coins: Type.Array(Coin),
  fungibleTokens: Type.Array(FungibleToken),
  nonFungibleTokens: Type.Array(NonFungibleToken),
});

export const WatchedAddress = Type.Object({
  blockchain: Type.String(),
  network: Type.String(),
  address: Type.String(),
  watchedFromBlock: Type.Union([Type.Integer(), Type.Null()], { description: 'Height from which movements are counted; null until the chain is followed.' }),
  createdTimestamp: Type.Integer(),
});

export const WalletDetail = Type.Composite([WalletAssetRecord, Type.Object({ createdTimestamp: Type.Integer(), addresses: Type.Array(WatchedAddress) })]);

export const CallbackDomainItem = Type.Object({
  domain: Type.String(),
  isVerified: Type.Boolean(),
  verifiedTimestamp: Type.Union([Type.Integer(), Type.Null()]),
  verificationToken: Type.String(),
  createdTimestamp: Type.Integer(),
});
