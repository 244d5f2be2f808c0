/** Identifiers the API hands out (subscriptions, wallets, callbacks) are UUIDs. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Anything else cannot name one of ours: answered 404 without asking the database. */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}
