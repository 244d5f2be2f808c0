/**
 * What the create form asks for each event type: the endpoint's path and its item's fields, as the API
 * schemas (src/api/schemas.ts) define them. The API validates; the form only lays the fields out and
 * shows the API's messages beside them.
 */
import { EVENT_BLOCKCHAINS, type EventType } from '../../src/domain/chains.ts';

export type FieldName =
  | 'transactionId'
  | 'address'
  | 'contractAddress'
  | 'amountHigherThan'
  | 'blockHeightReached'
  | 'receiveCallbackOn'
  | 'confirmationsCount'
  | 'callbackUrl'
  | 'callbackSecretKey'
  | 'allowDuplicates';

export interface FieldSpec {
  name: FieldName;
  label: string;
  kind: 'text' | 'integer' | 'url' | 'secret' | 'boolean';
  required: boolean;
  hint?: string;
}

export interface EventSpec {
  type: EventType;
  path: string;
  title: string;
  fields: FieldSpec[];
}

const url: FieldSpec = { name: 'callbackUrl', label: 'Callback URL', kind: 'url', required: true, hint: 'https URL on one of your verified callback domains.' };
const secret: FieldSpec = {
  name: 'callbackSecretKey',
  label: 'Callback secret key',
  kind: 'secret',
  required: false,
  hint: 'Key of the HMAC-SHA256 signature of each callback.',
};
const requiredSecret: FieldSpec = { ...secret, required: true };
const duplicates: FieldSpec = {
  name: 'allowDuplicates',
  label: 'Allow duplicates',
  kind: 'boolean',
  required: false,
  hint: 'Allow an active twin with the same target and URL.',
};
const requiredDuplicates: FieldSpec = { ...duplicates, required: true };
const address: FieldSpec = { name: 'address', label: 'Address', kind: 'text', required: true };
const receiveOn: FieldSpec = { name: 'receiveCallbackOn', label: 'Callback on confirmation', kind: 'integer', required: false, hint: '1 to 100; default 3.' };
const confirmations: FieldSpec = {
  name: 'confirmationsCount',
  label: 'Confirmations',
  kind: 'integer',
  required: false,
  hint: 'One callback at each confirmation up to this, 1 to 100; default 3.',
};
const amount = (hint: string): FieldSpec => ({ name: 'amountHigherThan', label: 'Amount at least', kind: 'integer', required: true, hint });

export const EVENTS: EventSpec[] = [
  {
    type: 'TRANSACTION_MINED',
    path: 'transaction-mined',
    title: 'Transaction mined',
    fields: [{ name: 'transactionId', label: 'Transaction id', kind: 'text', required: true }, url, secret, duplicates],
  },
  {
    type: 'ADDRESS_COINS_TRANSACTION_CONFIRMED',
    path: 'address-coins-transactions-confirmed',
    title: 'Coins to or from an address, confirmed',
    fields: [address, url, secret, duplicates, receiveOn],
  },
  {
    type: 'ADDRESS_COINS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION',
    path: 'address-coins-transactions-confirmed-each-confirmation',
    title: 'Coins of an address, at each confirmation',
    fields: [address, url, secret, duplicates, confirmations],
  },
  {
    type: 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED',
    path: 'address-tokens-transactions-confirmed',
    title: 'Tokens of an address, confirmed',
    fields: [address, url, secret, duplicates, receiveOn],
  },
  {
    type: 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION',
    path: 'address-tokens-transactions-confirmed-each-confirmation',
    title: 'Tokens of an address, at each confirmation',
    fields: [address, url, secret, duplicates, confirmations],
  },
  {
    type: 'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED',
    path: 'address-internal-transactions-confirmed',
    title: 'Internal transactions of an address, confirmed',
    fields: [address, url, requiredSecret, requiredDuplicates, receiveOn],
  },
  {
    type: 'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED_EACH_CONFIRMATION',
    path: 'address-internal-transactions-confirmed-each-confirmation',
    title: 'Internal transactions of an address, at each confirmation',
    fields: [address, url, requiredSecret, requiredDuplicates, confirmations],
  },
  {
    type: 'CONFIRMED_COINS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER',
    path: 'coins-transactions-for-specific-amount',
    title: 'Coin transactions of at least an amount',
    fields: [amount('Whole coins of the native unit.'), url, secret, duplicates],
  },
  {
    type: 'CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER',
    path: 'tokens-transfers-for-specific-amount',
    title: 'Token transfers of at least an amount',
    fields: [amount('Whole tokens.'), { name: 'contractAddress', label: 'Token contract address', kind: 'text', required: true }, url, secret, duplicates],
  },
  {
    type: 'CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER',
    path: 'internal-transactions-for-specific-amount',
    title: 'Internal transactions of at least an amount',
    fields: [amount('Whole coins of the native unit.'), url, secret, duplicates],
  },
  { type: 'BLOCK_MINED', path: 'block-mined', title: 'Every new block', fields: [url, secret, duplicates] },
  {
    type: 'BLOCK_HEIGHT_REACHED',
    path: 'block-height-reached',
    title: 'Block height reached',
    fields: [{ name: 'blockHeightReached', label: 'Block height', kind: 'integer', required: true }, url, secret, duplicates],
  },
  { type: 'BLOCK_REVERTED', path: 'reverted-block', title: 'Block reverted (reorganisation)', fields: [url, requiredSecret, duplicates] },
];

export function eventSpec(type: string): EventSpec | undefined {
  return EVENTS.find((e) => e.type === type);
}

export function chainsFor(type: EventType) {
  return EVENT_BLOCKCHAINS[type];
}

/** What a subscription watches, in a few words (its target), for lists. */
export function targetOf(s: Record<string, unknown>): string {
  if (typeof s.transactionId === 'string') return s.transactionId;
  if (typeof s.address === 'string') return s.address;
  if (typeof s.contractAddress === 'string') return `${s.contractAddress} ≥ ${s.amountHigherThan}`;
  if (s.amountHigherThan !== undefined) return `≥ ${s.amountHigherThan}`;
  if (s.blockHeightReached !== undefined) return `height ${s.blockHeightReached}`;
  return 'every block';
}

/** The events the create form does not offer (yet), in words all the same. */
const OTHER_TITLES: Record<string, string> = {
  ADDRESS_COINS_TRANSACTION_UNCONFIRMED: 'Coins of an address, unconfirmed (mempool)',
  ADDRESS_TOKENS_TRANSACTION_UNCONFIRMED: 'Tokens of an address, unconfirmed (mempool)',
  XPUB_COINS_TRANSACTION_CONFIRMED: 'Coins of a wallet key, confirmed',
  XPUB_COINS_TRANSACTION_UNCONFIRMED: 'Coins of a wallet key, unconfirmed (mempool)',
};

/** An event type in words (the create form's title), the raw name when the console does not know it. */
export function eventTitle(type: string): string {
  return eventSpec(type)?.title ?? OTHER_TITLES[type] ?? type;
}
