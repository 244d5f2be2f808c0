/**
 * Request and response schemas (TypeBox). Fastify validates requests with them and @fastify/swagger
 * turns the same objects into /openapi.json, so the document cannot drift from the code.
 */
import { type TSchema, Type } from '@sinclair/typebox';
import { type Blockchain, CHAINS, EVENT_TYPES, type EventType, NETWORKS } from '../domain/chains.ts';
import type { ErrorCode } from '../domain/errors.ts';

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

/**
 * The blockchain and network path parameters of an endpoint that takes `chains`: the same list the
 * route gives its `config.chains`, which the server checks, so the document offers exactly what is
 * accepted. An enum cannot say which network goes with which chain; the description lists the pairs.
 */
export function chainParams(chains: readonly Blockchain[]) {
  const pairs = chains.map((c) => `${c} (${CHAINS[c].networks.join(', ')})`).join('; ');
  return Type.Object({
    blockchain: Type.String({ enum: [...chains], description: `Blockchain; with its networks: ${pairs}.` }),
    network: Type.String({
      enum: NETWORKS.filter((n) => chains.some((c) => CHAINS[c].networks.includes(n))),
      description: 'Network; it must be one of the networks of the blockchain (see blockchain).',
    }),
  });
}

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

/** The error envelope of the contract; `codes`, when given, are the only codes the answer can carry. */
export function errorEnvelope(codes?: readonly ErrorCode[], options: { $id?: string; description?: string } = {}) {
  return Type.Object(
    {
      apiVersion: Type.String({ example: API_VERSION }),
      requestId: Type.String({ description: '24 lower-case hex characters, also in the x-request-id header.' }),
      context: Type.Optional(Type.String()),
      error: Type.Object({
        code: codes ? Type.String({ enum: [...codes] }) : Type.String(),
        message: Type.String({ description: 'A sentence saying what to change.' }),
        details: Type.Optional(
          Type.Array(Type.Object({ attribute: Type.String(), message: Type.String() }), { description: 'One entry per offending attribute.' }),
        ),
      }),
    },
    options,
  );
}

export const ErrorEnvelope = errorEnvelope(undefined, { $id: 'ErrorEnvelope' });

const CallbackUrl = Type.String({ minLength: 1, maxLength: 2048, description: 'https URL whose host is a verified callback domain.' });
const SecretKey = Type.String({ maxLength: 512, description: 'Key of the HMAC-SHA256 x-signature of each callback.' });
const AllowDuplicates = Type.Boolean({ description: 'Allow an active twin (same event, target and callbackUrl). Default false.' });
/** Extension (README "Backfill and replay"). */
const FromBlockHeight = Type.Optional(
  Type.Integer({
    minimum: 0,
    maximum: Number.MAX_SAFE_INTEGER,
    description:
      "Extension: also evaluate the chain's past blocks from this height up to the one processed at creation, and send what matched first, in block order, with the idempotencyKeys live following gives (5 credits per callback the backfill queues), then the live ones. At most blockJobs.maxBackfillDepth (default 100000) blocks back, not above the processed height.",
  }),
);

export const TransactionMinedItem = Type.Object(
  {
    transactionId: Type.String({ minLength: 1, maxLength: 128 }),
    callbackUrl: CallbackUrl,
    callbackSecretKey: Type.Optional(SecretKey),
    allowDuplicates: Type.Optional(AllowDuplicates),
  },
  { additionalProperties: false },
);

/** The fields the address subscriptions share (tokens, internal transfers and coins; once or at each confirmation). */
const SubscribedAddress = Type.String({ minLength: 1, maxLength: 128 });
const ReceiveCallbackOn = Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'Confirmation on which the callback is sent; default 3.' }));
const ConfirmationsCount = Type.Optional(
  Type.Integer({ minimum: 1, maximum: 100, description: 'The last confirmation reported: one callback at each confirmation from 1 to this; default 3.' }),
);
/** CATALOGUE.md sections 2.4, 2.5 and 2.10 require the secret. */
const RequiredSecretKey = Type.String({ minLength: 1, maxLength: 512, description: 'Required here: key of the HMAC-SHA256 x-signature of each callback.' });

export const AddressTokensItem = Type.Object(
  {
    address: SubscribedAddress,
    callbackUrl: CallbackUrl,
    callbackSecretKey: Type.Optional(SecretKey),
    allowDuplicates: Type.Optional(AllowDuplicates),
    receiveCallbackOn: ReceiveCallbackOn,
    fromBlockHeight: FromBlockHeight,
  },
  { additionalProperties: false },
);

/** CATALOGUE.md sections 2.6 and 7.3: confirmationsCount optional, 1..100, default 3. */
export const AddressTokensEachConfirmationItem = Type.Object(
  {
    address: SubscribedAddress,
    callbackUrl: CallbackUrl,
    callbackSecretKey: Type.Optional(SecretKey),
    allowDuplicates: Type.Optional(AllowDuplicates),
    confirmationsCount: ConfirmationsCount,
    fromBlockHeight: FromBlockHeight,
  },
  { additionalProperties: false },
);

export const InternalTransactionsItem = Type.Object(
  {
    amountHigherThan: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'Threshold in whole coins of the native unit.' }),
    callbackUrl: CallbackUrl,
    callbackSecretKey: Type.Optional(SecretKey),
    allowDuplicates: Type.Optional(AllowDuplicates),
    fromBlockHeight: FromBlockHeight,
  },
  { additionalProperties: false },
);

/** CATALOGUE.md section 2.9: no target. */
export const BlockMinedItem = Type.Object(
  {
    callbackUrl: CallbackUrl,
    callbackSecretKey: Type.Optional(SecretKey),
    allowDuplicates: Type.Optional(AllowDuplicates),
    fromBlockHeight: FromBlockHeight,
  },
  { additionalProperties: false },
);

/** CATALOGUE.md section 2.8. */
export const BlockHeightReachedItem = Type.Object(
  {
    blockHeightReached: Type.Integer({
      minimum: 0,
      maximum: Number.MAX_SAFE_INTEGER,
      description: 'The block height to be told of; a height the chain has already applied is told of at once.',
    }),
    callbackUrl: CallbackUrl,
    callbackSecretKey: Type.Optional(SecretKey),
    allowDuplicates: Type.Optional(AllowDuplicates),
  },
  { additionalProperties: false },
);

/** CATALOGUE.md sections 2.10 and 7.1: the secret is required; allowDuplicates may also be the strings "true" and "false". */
export const RevertedBlockItem = Type.Object(
  {
    callbackUrl: CallbackUrl,
    callbackSecretKey: RequiredSecretKey,
    allowDuplicates: Type.Optional(
      Type.Union([Type.Boolean(), Type.String({ enum: ['true', 'false'] })], {
        description: 'Allow an active twin (same event and callbackUrl): a boolean, or the string "true" or "false". Default false.',
      }),
    ),
  },
  { additionalProperties: false },
);

/**
 * CATALOGUE.md section 2.4: callbackSecretKey and allowDuplicates are required here (section 5); a
 * request without them gets 409 missing_required_attributes naming them (CONTRACT.md section 3).
 */
export const AddressInternalItem = Type.Object(
  {
    address: SubscribedAddress,
    callbackUrl: CallbackUrl,
    callbackSecretKey: RequiredSecretKey,
    allowDuplicates: Type.Boolean({ description: 'Required here: allow an active twin (same event, address, receiveCallbackOn and callbackUrl).' }),
    receiveCallbackOn: ReceiveCallbackOn,
    fromBlockHeight: FromBlockHeight,
  },
  { additionalProperties: false },
);

/** CATALOGUE.md sections 2.5 and 7.3: secret and allowDuplicates required as in 2.4; confirmationsCount optional, 1..100, default 3. */
export const AddressInternalEachConfirmationItem = Type.Object(
  {
    address: SubscribedAddress,
    callbackUrl: CallbackUrl,
    callbackSecretKey: RequiredSecretKey,
    allowDuplicates: Type.Boolean({ description: 'Required here: allow an active twin (same event, address, confirmationsCount and callbackUrl).' }),
    confirmationsCount: ConfirmationsCount,
    fromBlockHeight: FromBlockHeight,
  },
  { additionalProperties: false },
);

/** CATALOGUE.md sections 2.12 and 7.7. */
export const TokensAmountItem = Type.Object(
  {
    amountHigherThan: Type.Integer({
      minimum: 0,
      maximum: Number.MAX_SAFE_INTEGER,
      description: "Threshold in whole tokens, compared exactly in base units after the token's decimals; an ERC-721/TRC-721 transfer counts as 1.",
    }),
    contractAddress: Type.String({ minLength: 1, maxLength: 128, description: 'The token contract (not a holder address).' }),
    callbackUrl: CallbackUrl,
    callbackSecretKey: Type.Optional(SecretKey),
    allowDuplicates: Type.Optional(AllowDuplicates),
    fromBlockHeight: FromBlockHeight,
  },
  { additionalProperties: false },
);

/**
 * CATALOGUE.md sections 2.1 and 7.2: the SDK spells the URL `callbackURL` here; `callbackUrl` is accepted
 * too. Both are optional in the schema; the service requires exactly one (409 missing_required_attributes
 * when none, 409 invalid_data when both). The answer always says `callbackUrl`.
 */
export const AddressCoinsItem = Type.Object(
  {
    address: SubscribedAddress,
    callbackURL: Type.Optional({ ...CallbackUrl, description: 'https URL whose host is a verified callback domain (give this or callbackUrl, not both).' }),
    callbackUrl: Type.Optional({ ...CallbackUrl, description: 'Accepted instead of callbackURL (not both); the answer says callbackUrl either way.' }),
    callbackSecretKey: Type.Optional(SecretKey),
    allowDuplicates: Type.Optional(AllowDuplicates),
    receiveCallbackOn: ReceiveCallbackOn,
    fromBlockHeight: FromBlockHeight,
  },
  { additionalProperties: false },
);

/** CATALOGUE.md sections 2.2 and 7.3: confirmationsCount optional here too, 1..100, default 3. */
export const AddressCoinsEachConfirmationItem = Type.Object(
  {
    address: SubscribedAddress,
    callbackUrl: CallbackUrl,
    callbackSecretKey: Type.Optional(SecretKey),
    allowDuplicates: Type.Optional(AllowDuplicates),
    confirmationsCount: ConfirmationsCount,
    fromBlockHeight: FromBlockHeight,
  },
  { additionalProperties: false },
);

/** CATALOGUE.md sections 2.3 and 2.7: an address, no confirmations (fired from the mempool). */
export const AddressUnconfirmedItem = Type.Object(
  {
    address: SubscribedAddress,
    callbackUrl: CallbackUrl,
    callbackSecretKey: Type.Optional(SecretKey),
    allowDuplicates: Type.Optional(AllowDuplicates),
  },
  { additionalProperties: false },
);

/** CATALOGUE.md sections 2.11 and 7.7. */
export const CoinsAmountItem = Type.Object(
  {
    amountHigherThan: Type.Integer({
      minimum: 0,
      maximum: Number.MAX_SAFE_INTEGER,
      description: 'Threshold in whole coins of the native unit; a confirmed coin transaction moving at least this much is called back.',
    }),
    callbackUrl: CallbackUrl,
    callbackSecretKey: Type.Optional(SecretKey),
    allowDuplicates: Type.Optional(AllowDuplicates),
    fromBlockHeight: FromBlockHeight,
  },
  { additionalProperties: false },
);

const DeactivationReason = Type.Object({ reason: Type.String(), timestamp: Type.Integer() });

export const BackfillItem = Type.Object(
  {
    fromBlockHeight: Type.Integer(),
    toBlockHeight: Type.Integer({ description: "The chain's processed height at creation: later blocks are live following's." }),
    processedHeight: Type.Integer({ description: 'The last block evaluated so far (fromBlockHeight - 1 before the first).' }),
    state: Type.String({
      enum: ['running', 'out_of_credits'],
      description:
        'running: live callbacks wait until the backfilled ones are queued, so that they arrive in block order; out_of_credits: stopped, the rest not queued (live following goes on).',
    }),
  },
  { description: 'Extension: present while the backfill of a subscription created with fromBlockHeight is not done.' },
);

/** The fields of every subscription item (contract section 2, "Response item"). */
const subscriptionBase = {
  referenceId: Type.String({ format: 'uuid' }),
  createdTimestamp: Type.Integer({ description: 'Creation time, Unix seconds.' }),
  isActive: Type.Boolean(),
  callbackUrl: Type.String(),
  backfill: Type.Optional(BackfillItem),
};
const EchoedSecretKey = Type.String({ description: 'As given; an empty string when none was given.' });
const OptionalSecretKey = Type.Optional(Type.String({ description: 'As given; absent when none was given.' }));

/**
 * The item of each create endpoint: exactly the fields the seed (or CATALOGUE.md) lists for it, all of
 * them always present but the internal-transactions secret. The block-mined and block-height-reached
 * items have no eventType (CATALOGUE.md section 5).
 */
export const CREATED_ITEMS = {
  TRANSACTION_MINED: Type.Object({
    ...subscriptionBase,
    eventType: Type.Literal('TRANSACTION_MINED'),
    callbackSecretKey: EchoedSecretKey,
    transactionId: Type.String({ description: "As given (the client's spelling)." }),
  }),
  ADDRESS_TOKENS_TRANSACTION_CONFIRMED: Type.Object({
    ...subscriptionBase,
    eventType: Type.Literal('ADDRESS_TOKENS_TRANSACTION_CONFIRMED'),
    callbackSecretKey: EchoedSecretKey,
    address: Type.String({ description: "As given (the client's spelling)." }),
    receiveCallbackOn: Type.Integer({ description: "As given, or the chain's default when omitted." }),
  }),
  CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER: Type.Object({
    ...subscriptionBase,
    eventType: Type.Literal('CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER'),
    callbackSecretKey: OptionalSecretKey,
    amountHigherThan: Type.Integer(),
  }),
  BLOCK_MINED: Type.Object({ ...subscriptionBase, callbackSecretKey: EchoedSecretKey }),
  BLOCK_HEIGHT_REACHED: Type.Object({ ...subscriptionBase, callbackSecretKey: EchoedSecretKey, blockHeightReached: Type.Integer() }),
  BLOCK_REVERTED: Type.Object({ ...subscriptionBase, eventType: Type.Literal('BLOCK_REVERTED'), callbackSecretKey: Type.String() }),
  // CATALOGUE.md section 2.6: the secret is optional in this response (absent when none was given).
  ADDRESS_TOKENS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION: Type.Object({
    ...subscriptionBase,
    eventType: Type.Literal('ADDRESS_TOKENS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION'),
    callbackSecretKey: OptionalSecretKey,
    address: Type.String({ description: "As given (the client's spelling)." }),
    confirmationsCount: Type.Integer({ description: 'As given, or 3 when omitted.' }),
  }),
  ADDRESS_INTERNAL_TRANSACTION_CONFIRMED: Type.Object({
    ...subscriptionBase,
    eventType: Type.Literal('ADDRESS_INTERNAL_TRANSACTION_CONFIRMED'),
    callbackSecretKey: Type.String(),
    address: Type.String({ description: "As given (the client's spelling)." }),
    receiveCallbackOn: Type.Integer({ description: "As given, or the chain's default when omitted." }),
  }),
  CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER: Type.Object({
    ...subscriptionBase,
    eventType: Type.Literal('CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER'),
    callbackSecretKey: OptionalSecretKey,
    amountHigherThan: Type.Integer(),
    contractAddress: Type.String({ description: "As given (the client's spelling)." }),
  }),
  ADDRESS_INTERNAL_TRANSACTION_CONFIRMED_EACH_CONFIRMATION: Type.Object({
    ...subscriptionBase,
    eventType: Type.Literal('ADDRESS_INTERNAL_TRANSACTION_CONFIRMED_EACH_CONFIRMATION'),
    callbackSecretKey: Type.String(),
    address: Type.String({ description: "As given (the client's spelling)." }),
    confirmationsCount: Type.Integer({ description: 'As given, or 3 when omitted.' }),
  }),
  // `callbackUrl` whichever spelling the request used (CATALOGUE.md section 2.1: every response says callbackUrl).
  ADDRESS_COINS_TRANSACTION_CONFIRMED: Type.Object({
    ...subscriptionBase,
    eventType: Type.Literal('ADDRESS_COINS_TRANSACTION_CONFIRMED'),
    callbackSecretKey: EchoedSecretKey,
    address: Type.String({ description: "As given (the client's spelling)." }),
    receiveCallbackOn: Type.Integer({ description: "As given, or the chain's default when omitted." }),
  }),
  CONFIRMED_COINS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER: Type.Object({
    ...subscriptionBase,
    eventType: Type.Literal('CONFIRMED_COINS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER'),
    callbackSecretKey: OptionalSecretKey,
    amountHigherThan: Type.Integer(),
  }),
  ADDRESS_COINS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION: Type.Object({
    ...subscriptionBase,
    eventType: Type.Literal('ADDRESS_COINS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION'),
    callbackSecretKey: EchoedSecretKey,
    address: Type.String({ description: "As given (the client's spelling)." }),
    confirmationsCount: Type.Integer({ description: 'As given, or 3 when omitted.' }),
  }),
  ADDRESS_COINS_TRANSACTION_UNCONFIRMED: Type.Object({
    ...subscriptionBase,
    eventType: Type.Literal('ADDRESS_COINS_TRANSACTION_UNCONFIRMED'),
    callbackSecretKey: EchoedSecretKey,
    address: Type.String({ description: "As given (the client's spelling)." }),
  }),
  ADDRESS_TOKENS_TRANSACTION_UNCONFIRMED: Type.Object({
    ...subscriptionBase,
    eventType: Type.Literal('ADDRESS_TOKENS_TRANSACTION_UNCONFIRMED'),
    callbackSecretKey: EchoedSecretKey,
    address: Type.String({ description: "As given (the client's spelling)." }),
  }),
} as const satisfies Record<EventType, TSchema>;

/**
 * The item of list, get, delete and activate: any event type, so the fields of one event type only are
 * optional here (each is present exactly when its create item has it); the chain is always present.
 */
export const SubscriptionItem = Type.Object({
  ...subscriptionBase,
  eventType: Type.String({ enum: [...EVENT_TYPES] }),
  blockchain: Type.String(),
  network: Type.String(),
  callbackSecretKey: Type.Optional(
    Type.String({
      description:
        "Always present but on CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER and CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER and CONFIRMED_COINS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER without one ('' when none was given).",
    }),
  ),
  transactionId: Type.Optional(Type.String({ description: 'Present on TRANSACTION_MINED.' })),
  address: Type.Optional(Type.String({ description: 'Present on the address events.' })),
  receiveCallbackOn: Type.Optional(
    Type.Integer({
      description: 'Present on ADDRESS_TOKENS_TRANSACTION_CONFIRMED, ADDRESS_INTERNAL_TRANSACTION_CONFIRMED and ADDRESS_COINS_TRANSACTION_CONFIRMED.',
    }),
  ),
  amountHigherThan: Type.Optional(
    Type.Integer({
      description: 'Present on the three amount events (internal, token, coin).',
    }),
  ),
  blockHeightReached: Type.Optional(Type.Integer({ description: 'Present on BLOCK_HEIGHT_REACHED.' })),
  confirmationsCount: Type.Optional(Type.Integer({ description: 'Present on the each-confirmation events.' })),
  deactivationReasons: Type.Optional(Type.Array(DeactivationReason, { description: 'Present when isActive is false.' })),
  contractAddress: Type.Optional(Type.String({ description: 'Present on CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER.' })),
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
