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
/** Extension (docs/guides/recover-and-replay.md "Backfill and replay"). */
const FromBlockHeight = Type.Optional(
  Type.Integer({
    minimum: 0,
    maximum: Number.MAX_SAFE_INTEGER,
    description:
      "Extension: also evaluate the chain's past blocks from this height up to the one processed at creation, and send what matched first, in block order, with the idempotencyKeys live following gives (5 credits per callback the backfill queues), then the live ones. At most blockJobs.maxBackfillDepth (default 100000) blocks back, not above the processed height.",
  }),
);

/**
 * Extension (docs/concepts/event-stream.md#pull-only-subscriptions): `pullOnly: true` creates a subscription
 * whose events are read from the event stream only, with no callbackUrl and no callbackSecretKey.
 */
const PullOnly = Type.Optional(
  Type.Boolean({
    description:
      'Extension: true creates a pull-only subscription: no callbackUrl and no callbackSecretKey (both refused with it), no callbacks sent; its events are read from the event stream (GET /blockchain-events/events). Default false: callbackUrl is required.',
  }),
);

/**
 * The options of a create item: no other attributes, and the delivery rule. Without `pullOnly: true` the
 * attributes `required` (callbackUrl, and the secret where the contract requires it) are required as the
 * contract says; with it, the URL attributes and the secret must be absent (a `not` error, api/validation.ts).
 * JSON Schema's if/then/else (OpenAPI 3.1), so that Ajv still names every missing attribute at once.
 */
function deliveryRule(required: string[], urlAttributes: string[] = ['callbackUrl']) {
  const absent = Object.fromEntries([...urlAttributes, 'callbackSecretKey'].map((a) => [a, { not: {} }]));
  return {
    additionalProperties: false,
    if: { properties: { pullOnly: { enum: [true] } }, required: ['pullOnly'] },
    // biome-ignore lint/suspicious/noThenProperty: JSON Schema's `then`, a schema read by Ajv and the document, never awaited.
    then: { properties: absent },
    ...(required.length > 0 ? { else: { required } } : {}),
  };
}

/** The delivery fields of a create item whose secret is optional (most events), in the order the API reference lists them. */
const DeliveryFields = {
  callbackUrl: Type.Optional(CallbackUrl),
  callbackSecretKey: Type.Optional(SecretKey),
  pullOnly: PullOnly,
  allowDuplicates: Type.Optional(AllowDuplicates),
};

export const TransactionMinedItem = Type.Object(
  {
    transactionId: Type.String({ minLength: 1, maxLength: 128 }),
    ...DeliveryFields,
  },
  deliveryRule(['callbackUrl']),
);

/** The fields the address subscriptions share (tokens, internal transfers and coins; once or at each confirmation). */
const SubscribedAddress = Type.String({ minLength: 1, maxLength: 128 });
const ReceiveCallbackOn = Type.Optional(
  Type.Integer({
    minimum: 1,
    maximum: 100,
    description: 'Confirmation on which the callback is sent; default 3. At most one of receiveCallbackOn, confirmationTiers and finality.',
  }),
);
/** docs/concepts/confirmations-and-reorganisations.md#confirmation-tiers-by-amount: one tier of confirmationTiers, as given and as shown. */
export const ConfirmationTier = Type.Object(
  {
    upTo: Type.Optional(
      Type.String({
        pattern: '^(0|[1-9][0-9]{0,29})(\\.[0-9]{1,36})?$',
        description:
          'The largest amount of this tier, inclusive: a decimal string in the unit of the callback (whole coins, or whole tokens by their decimals; an NFT counts as 1). Left out on the last tier, and only there.',
      }),
    ),
    confirmations: Type.Integer({ minimum: 1, maximum: 100, description: 'The confirmation on which the callback of an amount in this tier is sent.' }),
  },
  { additionalProperties: false },
);
/** docs/concepts/confirmations-and-reorganisations.md#confirmation-tiers-by-amount. */
export const ConfirmationTiers = Type.Array(ConfirmationTier, {
  minItems: 1,
  maxItems: 10,
  description:
    'Confirmations by amount, instead of receiveCallbackOn: the callback waits for the confirmations of the first tier whose upTo is at or above its amount. upTo ascending; the last tier without upTo. Example: [{"upTo": "1", "confirmations": 1}, {"upTo": "10", "confirmations": 3}, {"confirmations": 6}].',
});
/** docs/concepts/confirmations-and-reorganisations.md#finality. */
export const Finality = Type.String({
  enum: ['finalized'],
  description:
    "Instead of receiveCallbackOn: the callback is sent once the event's block is final by the chain's own signal: ethereum and binance-smart-chain the node's finalized block, tron its solidified block, xrp validated ledgers (at once), dash ChainLocks. Refused (409 invalid_data) on the other chains.",
});
const ConfirmationFields = { confirmationTiers: Type.Optional(ConfirmationTiers), finality: Type.Optional(Finality) };
/** What a subscription shows of its confirmation policy (docs/concepts/confirmations-and-reorganisations.md): present when it has one, receiveCallbackOn absent then. */
const ShownConfirmationFields = {
  confirmationTiers: Type.Optional({
    ...ConfirmationTiers,
    description: 'Present when the subscription waits by amount tiers (receiveCallbackOn is then absent).',
  }),
  finality: Type.Optional({ ...Finality, description: "Present when the subscription waits for the chain's finality (receiveCallbackOn is then absent)." }),
};
const ConfirmationsCount = Type.Optional(
  Type.Integer({ minimum: 1, maximum: 100, description: 'The last confirmation reported: one callback at each confirmation from 1 to this; default 3.' }),
);
/** docs/reference/api.md#address-internal-transactions-confirmed, #address-internal-transactions-confirmed-each-confirmation and #reverted-block require the secret. */
const RequiredSecretKey = Type.String({ minLength: 1, maxLength: 512, description: 'Required here: key of the HMAC-SHA256 x-signature of each callback.' });

/** The delivery fields of the create items that require the secret (allowDuplicates differs among them). */
const SecretRequiredDeliveryFields = { callbackUrl: Type.Optional(CallbackUrl), callbackSecretKey: Type.Optional(RequiredSecretKey), pullOnly: PullOnly };

export const AddressTokensItem = Type.Object(
  {
    address: SubscribedAddress,
    ...DeliveryFields,
    receiveCallbackOn: ReceiveCallbackOn,
    ...ConfirmationFields,
    fromBlockHeight: FromBlockHeight,
  },
  deliveryRule(['callbackUrl']),
);

/** docs/reference/api.md#address-tokens-transactions-confirmed-each-confirmation and #settled-request-fields: confirmationsCount optional, 1..100, default 3. */
export const AddressTokensEachConfirmationItem = Type.Object(
  {
    address: SubscribedAddress,
    ...DeliveryFields,
    confirmationsCount: ConfirmationsCount,
    fromBlockHeight: FromBlockHeight,
  },
  deliveryRule(['callbackUrl']),
);

export const InternalTransactionsItem = Type.Object(
  {
    amountHigherThan: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'Threshold in whole coins of the native unit.' }),
    ...DeliveryFields,
    fromBlockHeight: FromBlockHeight,
  },
  deliveryRule(['callbackUrl']),
);

/** docs/reference/api.md#block-mined: no target. */
export const BlockMinedItem = Type.Object(
  {
    ...DeliveryFields,
    fromBlockHeight: FromBlockHeight,
  },
  deliveryRule(['callbackUrl']),
);

/** docs/reference/api.md#block-height-reached. */
export const BlockHeightReachedItem = Type.Object(
  {
    blockHeightReached: Type.Integer({
      minimum: 0,
      maximum: Number.MAX_SAFE_INTEGER,
      description: 'The block height to be told of; a height the chain has already applied is told of at once.',
    }),
    ...DeliveryFields,
  },
  deliveryRule(['callbackUrl']),
);

/** docs/reference/api.md#reverted-block: the secret is required; allowDuplicates may also be the strings "true" and "false". */
export const RevertedBlockItem = Type.Object(
  {
    ...SecretRequiredDeliveryFields,
    allowDuplicates: Type.Optional(
      Type.Union([Type.Boolean(), Type.String({ enum: ['true', 'false'] })], {
        description: 'Allow an active twin (same event and callbackUrl): a boolean, or the string "true" or "false". Default false.',
      }),
    ),
  },
  deliveryRule(['callbackUrl', 'callbackSecretKey']),
);

/**
 * docs/reference/api.md#address-internal-transactions-confirmed: callbackSecretKey and allowDuplicates are required here (docs/reference/api.md#settled-request-fields); a
 * request without them gets 409 missing_required_attributes naming them (docs/reference/errors.md).
 */
export const AddressInternalItem = Type.Object(
  {
    address: SubscribedAddress,
    ...SecretRequiredDeliveryFields,
    allowDuplicates: Type.Boolean({ description: 'Required here: allow an active twin (same event, address, receiveCallbackOn and callbackUrl).' }),
    receiveCallbackOn: ReceiveCallbackOn,
    ...ConfirmationFields,
    fromBlockHeight: FromBlockHeight,
  },
  deliveryRule(['callbackUrl', 'callbackSecretKey']),
);

/** docs/reference/api.md#address-internal-transactions-confirmed-each-confirmation and #settled-request-fields: secret and allowDuplicates required as in address-internal-transactions-confirmed; confirmationsCount optional, 1..100, default 3. */
export const AddressInternalEachConfirmationItem = Type.Object(
  {
    address: SubscribedAddress,
    ...SecretRequiredDeliveryFields,
    allowDuplicates: Type.Boolean({ description: 'Required here: allow an active twin (same event, address, confirmationsCount and callbackUrl).' }),
    confirmationsCount: ConfirmationsCount,
    fromBlockHeight: FromBlockHeight,
  },
  deliveryRule(['callbackUrl', 'callbackSecretKey']),
);

/** docs/reference/api.md#tokens-transfers-for-specific-amount and #settled-request-fields. */
export const TokensAmountItem = Type.Object(
  {
    amountHigherThan: Type.Integer({
      minimum: 0,
      maximum: Number.MAX_SAFE_INTEGER,
      description: "Threshold in whole tokens, compared exactly in base units after the token's decimals; an ERC-721/TRC-721 transfer counts as 1.",
    }),
    contractAddress: Type.String({ minLength: 1, maxLength: 128, description: 'The token contract (not a holder address).' }),
    ...DeliveryFields,
    fromBlockHeight: FromBlockHeight,
  },
  deliveryRule(['callbackUrl'], ['callbackURL', 'callbackUrl']),
);

/**
 * docs/reference/api.md#address-coins-transactions-confirmed and #settled-request-fields: the SDK spells the URL `callbackURL` here; `callbackUrl` is accepted
 * too. Both are optional in the schema; the service requires exactly one (409 missing_required_attributes
 * when none, 409 invalid_data when both). The answer always says `callbackUrl`.
 */
export const AddressCoinsItem = Type.Object(
  {
    address: SubscribedAddress,
    callbackURL: Type.Optional({ ...CallbackUrl, description: 'https URL whose host is a verified callback domain (give this or callbackUrl, not both).' }),
    callbackUrl: Type.Optional({ ...CallbackUrl, description: 'Accepted instead of callbackURL (not both); the answer says callbackUrl either way.' }),
    callbackSecretKey: Type.Optional(SecretKey),
    pullOnly: PullOnly,
    allowDuplicates: Type.Optional(AllowDuplicates),
    receiveCallbackOn: ReceiveCallbackOn,
    ...ConfirmationFields,
    fromBlockHeight: FromBlockHeight,
  },
  deliveryRule([], ['callbackURL', 'callbackUrl']),
);

/** docs/reference/api.md#address-coins-transactions-confirmed-each-confirmation and #settled-request-fields: confirmationsCount optional here too, 1..100, default 3. */
export const AddressCoinsEachConfirmationItem = Type.Object(
  {
    address: SubscribedAddress,
    ...DeliveryFields,
    confirmationsCount: ConfirmationsCount,
    fromBlockHeight: FromBlockHeight,
  },
  deliveryRule(['callbackUrl']),
);

/** docs/reference/api.md#address-coins-transactions-unconfirmed and #address-tokens-transactions-unconfirmed: an address, no confirmations (fired from the mempool). */
export const AddressUnconfirmedItem = Type.Object(
  {
    address: SubscribedAddress,
    ...DeliveryFields,
  },
  deliveryRule(['callbackUrl']),
);

/** docs/reference/api.md#coins-transactions-for-specific-amount and #settled-request-fields. */
export const CoinsAmountItem = Type.Object(
  {
    amountHigherThan: Type.Integer({
      minimum: 0,
      maximum: Number.MAX_SAFE_INTEGER,
      description: 'Threshold in whole coins of the native unit; a confirmed coin transaction moving at least this much is called back.',
    }),
    ...DeliveryFields,
    fromBlockHeight: FromBlockHeight,
  },
  deliveryRule(['callbackUrl']),
);

/**
 * docs/concepts/wallet-keys.md: exactly one of extendedPublicKey and descriptor (the service checks, naming the field); on the
 * account chains (ethereum, ethereum-classic, binance-smart-chain, tron) a BIP44 account key only.
 */
/** The wallet-key fields of both xpub creates (docs/concepts/wallet-keys.md) and of a wallet's keys (docs/concepts/wallets.md). */
export const XpubKeyFields = {
  extendedPublicKey: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 200,
      description:
        "An account's extended public key: xpub, ypub, zpub (tpub, upub, vpub on testnet) or the chain's own prefix (Ltub, Mtub, dgub...). On ethereum, ethereum-classic, binance-smart-chain and tron: the BIP44 account key (m/44'/60'/a', tron m/44'/195'/a') as xpub (or tpub), addresses derived at /0/i.",
    }),
  ),
  descriptor: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 400,
      description:
        "A BIP380 output descriptor over one extended public key: pkh(KEY), sh(wpkh(KEY)), wpkh(KEY), tr(KEY), KEY ending in /* or /<0;1>/*; '#checksum' checked when given. The Bitcoin family only.",
    }),
  ),
  derivation: Type.Optional(
    Type.String({
      enum: ['legacy', 'p2sh-segwit', 'segwit', 'taproot'],
      description:
        'With a plain xpub/tpub: the script type of its addresses (default legacy). A prefix that names one (ypub, zpub...) must agree. Not on the account chains (one address form).',
    }),
  ),
  gapLimit: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: 10_000,
      description:
        'Unused addresses watched beyond the highest used one, on the receive and the change chain (the account chains: the receive chain only). Default 20.',
    }),
  ),
};

export const XpubCoinsItem = Type.Object(
  {
    ...XpubKeyFields,
    receiveCallbackOn: ReceiveCallbackOn,
    ...ConfirmationFields,
    ...DeliveryFields,
  },
  deliveryRule(['callbackUrl']),
);

/** XPUB_COINS_TRANSACTION_UNCONFIRMED: the same key fields, no confirmations (it fires from the mempool). */
export const XpubCoinsUnconfirmedItem = Type.Object(
  {
    ...XpubKeyFields,
    ...DeliveryFields,
  },
  deliveryRule(['callbackUrl']),
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

/** The fields of every subscription item (docs/reference/api.md#endpoints-at-a-glance). */
const subscriptionBase = {
  referenceId: Type.String({ format: 'uuid' }),
  createdTimestamp: Type.Integer({ description: 'Creation time, Unix seconds.' }),
  isActive: Type.Boolean(),
  callbackUrl: Type.String({ description: "The callback URL; '' on a pull-only subscription (pullOnly: true)." }),
  pullOnly: Type.Optional(
    Type.Boolean({ description: 'Extension: present (true) on a pull-only subscription only: no callbacks, its events are in the event stream.' }),
  ),
  backfill: Type.Optional(BackfillItem),
};
/** Absent when the subscription has confirmationTiers or finality instead (docs/concepts/confirmations-and-reorganisations.md). */
const ShownReceiveCallbackOn = Type.Optional(
  Type.Integer({ description: "As given, or the chain's default when omitted; absent when confirmationTiers or finality decide instead." }),
);
const EchoedSecretKey = Type.String({ description: 'As given; an empty string when none was given.' });
const OptionalSecretKey = Type.Optional(Type.String({ description: 'As given; absent when none was given.' }));

/**
 * The item of each create endpoint: exactly the fields the hosted API publishes for it (docs/reference/api.md#settled-answer-items), all of
 * them always present but the internal-transactions secret. The block-mined and block-height-reached
 * items have no eventType (docs/reference/api.md#settled-answer-items).
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
    receiveCallbackOn: ShownReceiveCallbackOn,
    ...ShownConfirmationFields,
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
  // docs/reference/api.md#address-tokens-transactions-confirmed-each-confirmation: the secret is optional in this response (absent when none was given).
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
    receiveCallbackOn: ShownReceiveCallbackOn,
    ...ShownConfirmationFields,
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
  // `callbackUrl` whichever spelling the request used (docs/reference/api.md#address-coins-transactions-confirmed: every response says callbackUrl).
  ADDRESS_COINS_TRANSACTION_CONFIRMED: Type.Object({
    ...subscriptionBase,
    eventType: Type.Literal('ADDRESS_COINS_TRANSACTION_CONFIRMED'),
    callbackSecretKey: EchoedSecretKey,
    address: Type.String({ description: "As given (the client's spelling)." }),
    receiveCallbackOn: ShownReceiveCallbackOn,
    ...ShownConfirmationFields,
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
  XPUB_COINS_TRANSACTION_CONFIRMED: Type.Object({
    ...subscriptionBase,
    eventType: Type.Literal('XPUB_COINS_TRANSACTION_CONFIRMED'),
    callbackSecretKey: EchoedSecretKey,
    extendedPublicKey: Type.Optional(Type.String({ description: 'As given; present when the subscription gave an extended public key.' })),
    descriptor: Type.Optional(Type.String({ description: 'As given; present when the subscription gave a descriptor.' })),
    derivation: Type.Optional(Type.String({ description: 'As given; present when the request gave it.' })),
    gapLimit: Type.Integer({ description: 'As given, or 20.' }),
    receiveCallbackOn: ShownReceiveCallbackOn,
    ...ShownConfirmationFields,
  }),
  XPUB_COINS_TRANSACTION_UNCONFIRMED: Type.Object({
    ...subscriptionBase,
    eventType: Type.Literal('XPUB_COINS_TRANSACTION_UNCONFIRMED'),
    callbackSecretKey: EchoedSecretKey,
    extendedPublicKey: Type.Optional(Type.String({ description: 'As given; present when the subscription gave an extended public key.' })),
    descriptor: Type.Optional(Type.String({ description: 'As given; present when the subscription gave a descriptor.' })),
    derivation: Type.Optional(Type.String({ description: 'As given; present when the request gave it.' })),
    gapLimit: Type.Integer({ description: 'As given, or 20.' }),
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
      description:
        'Present on ADDRESS_TOKENS_TRANSACTION_CONFIRMED, ADDRESS_INTERNAL_TRANSACTION_CONFIRMED, ADDRESS_COINS_TRANSACTION_CONFIRMED (unless confirmationTiers or finality decide instead) and XPUB_COINS_TRANSACTION_CONFIRMED.',
    }),
  ),
  ...ShownConfirmationFields,
  amountHigherThan: Type.Optional(
    Type.Integer({
      description: 'Present on the three amount events (internal, token, coin).',
    }),
  ),
  blockHeightReached: Type.Optional(Type.Integer({ description: 'Present on BLOCK_HEIGHT_REACHED.' })),
  confirmationsCount: Type.Optional(Type.Integer({ description: 'Present on the each-confirmation events.' })),
  deactivationReasons: Type.Optional(Type.Array(DeactivationReason, { description: 'Present when isActive is false.' })),
  contractAddress: Type.Optional(Type.String({ description: 'Present on CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER.' })),
  extendedPublicKey: Type.Optional(Type.String({ description: 'Present on the XPUB_COINS events subscribed with an extended public key.' })),
  descriptor: Type.Optional(Type.String({ description: 'Present on the XPUB_COINS events subscribed with a descriptor.' })),
  derivation: Type.Optional(Type.String({ description: 'Present on the XPUB_COINS events when the request gave it.' })),
  gapLimit: Type.Optional(Type.Integer({ description: 'Present on the XPUB_COINS events.' })),
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

/** An extended key a wallet holds (docs/concepts/wallets.md#extended-keys-in-a-wallet). */
export const WalletXpubItem = Type.Object({
  xpubId: Type.String({ format: 'uuid', description: 'The key in this wallet: the DELETE names it.' }),
  blockchain: Type.String(),
  network: Type.String(),
  extendedPublicKey: Type.Optional(Type.String({ description: 'As given (present when the key was given as extendedPublicKey).' })),
  descriptor: Type.Optional(Type.String({ description: 'As given (present when the key was given as descriptor).' })),
  derivation: Type.Optional(Type.String({ description: 'As given; absent when none was given.' })),
  gapLimit: Type.Integer({ description: 'Unused addresses watched beyond the highest used one, per chain of the key.' }),
  watchedAddresses: Type.Integer({
    description:
      "The key's derived addresses the wallet watches now (its window): their balances are in the wallet's coins. It only grows: gapLimit beyond the highest used, per chain.",
  }),
  usedAddresses: Type.Integer({
    description: 'Those of them that moved coins or tokens in a block herald applied, or held coins when the window reached them.',
  }),
  watchedFromBlock: Type.Union([Type.Integer(), Type.Null()], {
    description: "Height from which the first window's movements are counted (its opening balances read there); null until the chain is followed.",
  }),
  createdTimestamp: Type.Integer(),
});

export const WalletDetail = Type.Composite([
  WalletAssetRecord,
  Type.Object({
    createdTimestamp: Type.Integer(),
    addresses: Type.Array(WatchedAddress, { description: 'The addresses watched one by one (those derived from its keys are counted under xpubs).' }),
    xpubs: Type.Array(WalletXpubItem, { description: 'Extension: the extended public keys and descriptors the wallet holds.' }),
  }),
]);

export const CallbackDomainItem = Type.Object({
  domain: Type.String(),
  isVerified: Type.Boolean(),
  verifiedTimestamp: Type.Union([Type.Integer(), Type.Null()]),
  verificationToken: Type.String(),
  createdTimestamp: Type.Integer(),
});
