/**
 * The callbacks herald sends, as schemas: the body of each event type (src/domain/callbacks.ts builds it,
 * src/matching/identity.ts and src/matching/pending.ts its `data.item`) and the headers of the POST
 * (src/delivery/worker.ts, src/delivery/signing.ts). They are the `webhooks` of the OpenAPI document;
 * the prose is docs/reference/events/.
 */
import type { FastifyDynamicSwaggerOptions } from '@fastify/swagger';
import { type TObject, type TSchema, Type } from '@sinclair/typebox';
import {
  BLOCKCHAINS,
  CALLBACK_EVENT_TYPES,
  type CallbackEventType,
  CHAINS,
  DROPPED_EVENTS,
  EVENT_TYPES,
  type EventType,
  NETWORKS,
  SAFETY_EVENTS,
} from '../domain/chains.ts';
import { SAFETY_FLAGS } from '../matching/safety.ts';
import { API_VERSION } from './schemas.ts';

const closed = { additionalProperties: false } as const;

const Blockchain = Type.String({ enum: [...BLOCKCHAINS] });
const Network = Type.String({ enum: [...NETWORKS] });
const Decimal = (description: string) => Type.String({ pattern: '^[0-9]+(\\.[0-9]+)?$', description });
const Unit = Type.String({
  enum: [...new Set(BLOCKCHAINS.map((b) => CHAINS[b].unit))],
  description: "The chain's native coin, upper case.",
});
const Direction = Type.String({
  enum: ['incoming', 'outgoing'],
  description: 'incoming: the address receives; outgoing: it sends (a movement from the address to itself is outgoing).',
});
const UnixSeconds = (description: string) => Type.Integer({ minimum: 0, description });

const MinedInBlock = Type.Object(
  {
    height: Type.Integer({ minimum: 0 }),
    hash: Type.String({ description: "The block's hash, in the chain's spelling (0x-prefixed on EVM chains)." }),
    timestamp: UnixSeconds("The block's time."),
  },
  { ...closed, description: 'The block that holds the transaction.' },
);

const FungibleToken = Type.Object(
  {
    name: Type.String({ description: "The contract's name(); '' when it has none." }),
    symbol: Type.String({ description: "The contract's symbol(); '' when it has none." }),
    decimals: Type.String({ pattern: '^[0-9]+$', description: "The contract's decimals() as a string; '0' when the node cannot tell." }),
    amount: Decimal('The amount moved, scaled by decimals.'),
    contractAddress: Type.String(),
  },
  { ...closed, title: 'ERC-20, BEP-20, TRC-20' },
);
const NonFungibleToken = Type.Object(
  { name: Type.String(), symbol: Type.String(), tokenId: Type.String({ description: 'The token id, decimal.' }), contractAddress: Type.String() },
  { ...closed, title: 'ERC-721, TRC-721' },
);
const OmniToken = Type.Object(
  {
    name: Type.String(),
    propertyId: Type.String({ description: 'The Omni property id, decimal.' }),
    transactionType: Type.String({ description: "Omni Core's type, e.g. 'Simple Send'." }),
    createdByTransactionId: Type.String({ description: 'The transaction that created the property.' }),
    amount: Decimal('The amount moved, in whole units of the property.'),
  },
  { ...closed, title: 'OMNI' },
);
const TokenType = Type.String({ enum: ['ERC-20', 'ERC-721', 'BEP-20', 'TRC-20', 'TRC-721', 'OMNI'], description: 'Which token object `token` is.' });
const Token = Type.Union([FungibleToken, NonFungibleToken, OmniToken], { description: 'The token moved; its shape follows tokenType.' });

const SubscribedAddress = Type.String({ description: "The subscribed address, in the subscription's spelling." });
const Confirmations = {
  currentConfirmations: Type.Integer({ minimum: 1, maximum: 100, description: 'The confirmation this callback reports (the block itself is the first).' }),
  targetConfirmations: Type.Integer({ minimum: 1, maximum: 100, description: "The last confirmation reported: the subscription's confirmationsCount." }),
};
const FirstSeen = UnixSeconds("When herald first read the transaction from its node's mempool.");

const chain = { blockchain: Blockchain, network: Network };
const tokenTransfer = {
  ...chain,
  address: SubscribedAddress,
  minedInBlock: MinedInBlock,
  transactionId: Type.String(),
  tokenType: TokenType,
  token: Token,
  direction: Direction,
};
const addressInternal = {
  ...chain,
  address: SubscribedAddress,
  minedInBlock: MinedInBlock,
  parentTransactionId: Type.String({ description: 'The transaction the internal transfer was made in.' }),
  operationId: Type.String({ description: "The transfer's place in the call trace, e.g. call_0_2." }),
  amount: Decimal('The value moved, in whole coins.'),
  unit: Unit,
  direction: Direction,
};
const addressCoins = {
  ...chain,
  address: SubscribedAddress,
  minedInBlock: MinedInBlock,
  transactionId: Type.String(),
  amount: Decimal("The address's net movement in the transaction, in whole coins (on account chains, the fee included for the payer)."),
  unit: Unit,
  direction: Direction,
};
/** The wallet-key events (docs/concepts/wallet-keys.md): the key as subscribed, and the wallet's movement in the transaction. */
const xpubKey = {
  extendedPublicKey: Type.Optional(Type.String({ description: 'The subscribed extended public key, as given (present when the subscription gave one).' })),
  descriptor: Type.Optional(Type.String({ description: 'The subscribed output descriptor, as given (present when the subscription gave one).' })),
};
const xpubMovement = {
  direction: Type.String({
    enum: ['incoming', 'outgoing', 'self'],
    description:
      "incoming: the wallet's addresses spent nothing; outgoing: they spent, and something went outside the wallet; self: they spent, and every output stayed in the wallet (account chains: no address outside the wallet received coins, e.g. a token transfer or contract call paying only its fee).",
  }),
  amount: Decimal(
    "The wallet's net movement of the chain's coin in whole coins, positive (|received - sent| over its addresses; for outgoing and self the fee is in it).",
  ),
  unit: Unit,
  fee: Type.Optional(
    Decimal(
      "The fee, in whole coins: present when every input of the transaction was one of the wallet's (account chains: when one of the wallet's addresses paid it; absent when none was burnt, e.g. tron's free bandwidth).",
    ),
  ),
  addresses: Type.Array(
    Type.Object(
      {
        address: Type.String({ description: 'A derived address of the wallet (normalised).' }),
        derivationPath: Type.String({ description: "Where it was derived: from the descriptor's origin when it gives one, else from the key (m/0/5)." }),
        change: Type.Boolean({ description: 'true: on the change chain (/1/i); false: the receive chain (/0/i, the only one on the account chains).' }),
        received: Decimal('What the transaction paid to it, in whole coins.'),
        sent: Decimal('What the transaction spent from it, in whole coins (the fee it paid included).'),
      },
      closed,
    ),
    { minItems: 1, description: 'Every address of the wallet the transaction touches, receive chain first, by index.' },
  ),
};
const block = (description: string) =>
  Type.Object({ ...chain, height: Type.Integer({ minimum: 0 }), hash: Type.String(), timestamp: UnixSeconds("The block's time.") }, { ...closed, description });

/** docs/concepts/deposit-safety.md: inside the signed body, so a receiver can trust it as it trusts the amount. */
const Safety = Type.Object(
  {
    verdict: Type.String({ enum: ['ok', 'review'], description: 'review when any flag is set: do not credit before a person or a rule has looked.' }),
    flags: Type.Array(Type.String({ enum: [...SAFETY_FLAGS] }), {
      uniqueItems: true,
      description:
        'dust: below the dust threshold; rbf: unconfirmed and BIP125-replaceable; partial-payment: an XRP partial payment (amount is what it delivered); lookalike-token: the symbol or name of a well-known token, another contract; zero-value: a token transfer of 0; unknown-token: the contract answers no name nor symbol; failed: the transaction failed (only its fee moved).',
    }),
  },
  { ...closed, title: 'Safety verdict', description: "herald's verdict on crediting this event (docs/concepts/deposit-safety.md)." },
);

/** The `data.item` of each event type (with `safety` added to those of SAFETY_EVENTS below). */
const ITEMS: Record<EventType, TObject> = {
  TRANSACTION_MINED: Type.Object(
    { ...chain, transactionId: Type.String({ description: "The subscribed transaction, in the subscription's spelling." }), minedInBlock: MinedInBlock },
    closed,
  ),
  ADDRESS_TOKENS_TRANSACTION_CONFIRMED: Type.Object(tokenTransfer, closed),
  ADDRESS_TOKENS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION: Type.Object({ ...tokenTransfer, ...Confirmations }, closed),
  CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER: Type.Object(
    {
      ...chain,
      address: Type.String({ description: 'The recipient of the internal transfer (normalised).' }),
      minedInBlock: MinedInBlock,
      parentTransactionId: addressInternal.parentTransactionId,
      operationId: addressInternal.operationId,
      amount: addressInternal.amount,
      unit: Unit,
    },
    closed,
  ),
  ADDRESS_INTERNAL_TRANSACTION_CONFIRMED: Type.Object(addressInternal, closed),
  ADDRESS_INTERNAL_TRANSACTION_CONFIRMED_EACH_CONFIRMATION: Type.Object({ ...addressInternal, ...Confirmations }, closed),
  CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER: Type.Object(
    { ...chain, transactionId: Type.String(), minedInBlock: MinedInBlock, tokenType: TokenType, token: Token },
    closed,
  ),
  ADDRESS_COINS_TRANSACTION_CONFIRMED: Type.Object(addressCoins, closed),
  ADDRESS_COINS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION: Type.Object({ ...addressCoins, ...Confirmations }, closed),
  CONFIRMED_COINS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER: Type.Object(
    {
      ...chain,
      transactionId: Type.String(),
      minedInBlock: MinedInBlock,
      amount: Decimal('What the transaction paid to others, in whole coins (UTXO: outputs to addresses none of its inputs spend from).'),
      unit: Unit,
    },
    closed,
  ),
  ADDRESS_COINS_TRANSACTION_UNCONFIRMED: Type.Object(
    {
      ...chain,
      address: SubscribedAddress,
      transactionId: Type.String(),
      amount: Decimal('The movement in whole coins (EVM: the value, without the fee, unknown before execution).'),
      unit: Unit,
      direction: Direction,
      firstSeenInMempoolTimestamp: FirstSeen,
    },
    closed,
  ),
  ADDRESS_TOKENS_TRANSACTION_UNCONFIRMED: Type.Object(
    {
      ...chain,
      address: SubscribedAddress,
      transactionId: Type.String(),
      tokenType: TokenType,
      token: Token,
      direction: Direction,
      firstSeenInMempoolTimestamp: FirstSeen,
    },
    closed,
  ),
  // docs/concepts/wallet-keys.md: one callback per transaction of the wallet, every address of it the transaction touches listed.
  XPUB_COINS_TRANSACTION_CONFIRMED: Type.Object(
    {
      ...chain,
      ...xpubKey,
      transactionId: Type.String(),
      minedInBlock: MinedInBlock,
      ...xpubMovement,
    },
    closed,
  ),
  // The same, from the mempool: no block yet, when herald first saw it instead.
  XPUB_COINS_TRANSACTION_UNCONFIRMED: Type.Object(
    {
      ...chain,
      ...xpubKey,
      transactionId: Type.String(),
      ...xpubMovement,
      firstSeenInMempoolTimestamp: FirstSeen,
    },
    closed,
  ),
  BLOCK_MINED: block('The block applied.'),
  BLOCK_HEIGHT_REACHED: block('The block at the subscribed height.'),
  BLOCK_REVERTED: block('The block a reorganisation dropped.'),
};

/**
 * The DROPPED item (docs/reference/events/address-coins-transaction-unconfirmed-dropped.md): the unconfirmed
 * event's item as it was announced (without its safety verdict), with why the transaction went away.
 */
const dropped = (announced: TObject): TObject =>
  Type.Object(
    {
      ...announced.properties,
      reason: Type.String({
        enum: ['replaced', 'conflicted', 'evicted'],
        description:
          'replaced: another transaction in the mempool spends one of its outpoints (EVM: same sender and nonce); conflicted: a mined transaction spends one of its outpoints (EVM: same sender and nonce); evicted: gone from the mempool of the node herald reads at three consecutive checks spanning the mempoolEvictionSpanMs of the chain, and proven in no block up to the block herald applied (the one reason that is not final: it can still be mined).',
      }),
      replacedByTransactionId: Type.Optional(
        Type.String({ description: 'replaced and conflicted: the transaction that took its outpoint (or nonce). Absent for evicted.' }),
      ),
    },
    closed,
  );

export const CALLBACK_ITEMS: Record<CallbackEventType, TObject> = Object.fromEntries([
  ...EVENT_TYPES.map((event) => [event, SAFETY_EVENTS.has(event) ? Type.Object({ ...ITEMS[event].properties, safety: Safety }, closed) : ITEMS[event]]),
  ...Object.entries(DROPPED_EVENTS).map(([announced, event]) => [event, dropped(ITEMS[announced as EventType])]),
]) as Record<CallbackEventType, TObject>;

/** The body POSTed for an event type: the exact bytes herald signs. */
export function callbackPayload(eventType: CallbackEventType): TObject {
  return Type.Object(
    {
      apiVersion: Type.String({ description: `The API version the subscription was created under (${API_VERSION}).` }),
      referenceId: Type.String({ format: 'uuid', description: 'The subscription.' }),
      idempotencyKey: Type.String({
        pattern: '^([0-9a-f]{64}|test-[0-9a-f]{59})$',
        description:
          'The same on every retry, resend, recovery and replay of this callback; a new one after a reorganisation. Test callbacks: test- and 59 hex characters.',
      }),
      data: Type.Object(
        {
          product: Type.Literal('BLOCKCHAIN_EVENTS'),
          event: Type.Literal(eventType),
          isTest: Type.Optional(Type.Literal(true, { description: 'Only on test callbacks (POST .../test-callback): act on nothing.' })),
          item: CALLBACK_ITEMS[eventType],
        },
        closed,
      ),
    },
    { ...closed, title: `${eventType} callback` },
  );
}

const header = (name: string, required: boolean, schema: TSchema, description: string) => ({ in: 'header', name, required, schema, description });

/** The headers of every callback POST. */
export const CALLBACK_HEADERS = [
  header('content-type', true, Type.Literal('application/json'), 'Always application/json.'),
  header('user-agent', true, Type.String({ pattern: '^herald/' }), `herald/${API_VERSION}.`),
  header(
    'x-callback-sequence',
    false,
    Type.String({ pattern: '^[0-9]+$' }),
    "The callback's number in its subscription: 1, 2, 3, ... in event order, the same on every attempt; 0 on test callbacks. Absent on callbacks older than the numbering.",
  ),
  header(
    'x-signature',
    false,
    Type.String({ pattern: '^[0-9a-f]{64}$' }),
    'When the subscription has a callbackSecretKey: lower-case hex HMAC-SHA256 of the exact body bytes, keyed with the secret (UTF-8).',
  ),
  header(
    'x-signature-previous',
    false,
    Type.String({ pattern: '^[0-9a-f]{64}$' }),
    'During the overlap of a secret rotation: x-signature computed with the secret being replaced.',
  ),
  header('webhook-id', false, Type.String(), 'Standard Webhooks, when the subscription has a secret: the idempotencyKey.'),
  header('webhook-timestamp', false, Type.String({ pattern: '^[0-9]+$' }), 'Standard Webhooks: Unix seconds of this attempt.'),
  header(
    'webhook-signature',
    false,
    Type.String({ pattern: '^v1,[A-Za-z0-9+/]+=*( v1,[A-Za-z0-9+/]+=*)?$' }),
    'Standard Webhooks: v1, and the base64 HMAC-SHA256 of {webhook-id}.{webhook-timestamp}.{body} keyed with the secret (UTF-8); two space-separated entries during a rotation overlap (new first).',
  ),
  header('x-callback-test', false, Type.Literal('true'), 'Only on test callbacks; not signed: check data.isTest after the signature instead.'),
];

/** The OpenAPI 3.1 `webhooks` entries: one per event type, named by the event. */
/** The `webhooks` member of an OpenAPI 3.1 document, as @fastify/swagger types it. */
type Webhooks = Extract<NonNullable<FastifyDynamicSwaggerOptions['openapi']>, { webhooks?: unknown }>['webhooks'];

export function webhooks(): Webhooks {
  const entries = CALLBACK_EVENT_TYPES.map((eventType) => [
    eventType,
    {
      post: {
        tags: ['callbacks'],
        operationId: `callback_${eventType}`,
        summary: `The ${eventType} callback`,
        description: `POSTed to the subscription's callbackUrl. See docs/reference/events/${eventType.toLowerCase().replace(/_/g, '-')}.md.`,
        parameters: CALLBACK_HEADERS,
        requestBody: { required: true, content: { 'application/json': { schema: callbackPayload(eventType) } } },
        responses: {
          '2XX': { description: 'Delivered: any 2xx within delivery.timeoutMs (5 s). Anything else is retried.' },
          '410': { description: 'Gone: no retry, and the subscription is deactivated (callback_url_gone).' },
        },
      },
    },
  ]);
  // Through JSON: plain objects, without TypeBox's symbol keys.
  return JSON.parse(JSON.stringify(Object.fromEntries(entries)));
}
