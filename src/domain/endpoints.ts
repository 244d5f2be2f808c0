/** Names of the API's endpoints, as an API key's restriction lists them (herald keys create --allow). */
export const ENDPOINT_NAMES = [
  'transaction-mined',
  'address-tokens-transactions-confirmed',
  'internal-transactions-for-specific-amount',
  'block-mined',
  'block-height-reached',
  'reverted-block',
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
  'address-coins-transactions-confirmed',
  'coins-transactions-for-specific-amount',
] as const;
export type EndpointName = (typeof ENDPOINT_NAMES)[number];
