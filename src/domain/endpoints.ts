/** Names of the API's endpoints, as an API key's restriction lists them (herald keys create --allow). */
export const ENDPOINT_NAMES = [
  'transaction-mined',
  'address-tokens-transactions-confirmed',
  'internal-transactions-for-specific-amount',
  'block-mined',
  'block-height-reached',
  'reverted-block',
  'address-tokens-transactions-confirmed-each-confirmation',
  'all-assets',
  'list-subscriptions',
  'get-subscription',
  'delete-subscription',
  'activate-subscription',
  'wallets',
  'callback-domains',
  'callbacks',
  'status',
  'callback-data',
  'address-internal-transactions-confirmed',
  'address-internal-transactions-confirmed-each-confirmation',
  'tokens-transfers-for-specific-amount',
] as const;
export type EndpointName = (typeof ENDPOINT_NAMES)[number];
