/**
 * The operator's customer actions, one rule each for the API (/operator/customers/*) and the command
 * line (`herald customers`, `herald keys`, `herald credits add`, `herald domains`).
 */
import { ApiError, truncate } from '../domain/errors.ts';
import {
  addCredits,
  allowNetworksOf,
  type Customer,
  createApiKey,
  findCustomerByName,
  createCustomer as insertCustomer,
  listApiKeys,
  listCustomers as listCustomerRows,
  type Plan,
  revokeApiKey,
  revokeApiKeyById,
  setAllowNetworks,
  updatePlan,
} from '../store/customers.ts';
import { type CallbackDomain, listDomains, upsertDomain } from '../store/domains.ts';
import { listFinishedCallbacks } from '../store/operator-callbacks.ts';
import { countActive, type SubscriptionFilter, searchSubscriptions } from '../store/subscriptions.ts';
import type { Common } from './context.ts';
import { parseCallbackUrl, searchTargets } from './subscriptions.ts';

/** More than any customer registers; the detail lists them all. */
const MAX_DOMAINS = 10_000;

/**
 * What an operator action needs: the database, and the API process's access cache, which forgets a
 * changed key or domain at once. The command line has none: every serving process forgets on the
 * change's announcement (milliseconds; docs/design/how-it-works.md, "Caches that cannot go stale").
 */
export type OperatorCommon = Pick<Common, 'db'> & Partial<Pick<Common, 'access'>>;

export async function customerNamed(common: Pick<Common, 'db'>, name: string): Promise<Customer> {
  const customer = await findCustomerByName(common.db, name);
  if (!customer) throw new ApiError('resource_not_found', `There is no customer named '${truncate(name)}'.`);
  return customer;
}

const planOf = (c: Customer) => ({
  mainnetAllowed: c.mainnetAllowed,
  maxActiveSubscriptions: c.maxActiveSubscriptions,
  requestsPerSecond: c.requestsPerSecond,
});

/**
 * A new customer; each plan field not given is the configuration's defaultPlan (mainnet only when both
 * allow it).
 */
export async function createCustomer(common: Pick<Common, 'db' | 'config'>, name: string, plan: Partial<Plan>, credits?: bigint): Promise<Customer> {
  if (await findCustomerByName(common.db, name)) throw new ApiError('already_exists', `A customer named '${truncate(name)}' already exists.`);
  const defaults = common.config.defaultPlan;
  return await insertCustomer(
    common.db,
    name,
    {
      mainnetAllowed: plan.mainnetAllowed !== false && defaults.mainnetAllowed,
      maxActiveSubscriptions: plan.maxActiveSubscriptions === undefined ? defaults.maxActiveSubscriptions : plan.maxActiveSubscriptions,
      requestsPerSecond: plan.requestsPerSecond ?? defaults.requestsPerSecond,
    },
    credits ?? BigInt(defaults.credits),
  );
}

/** The customer with its own allow-list of non-public networks. */
export async function customerWithNetworks(common: Pick<Common, 'db'>, name: string): Promise<{ customer: Customer; allowNetworks: string[] }> {
  const customer = await customerNamed(common, name);
  return { customer, allowNetworks: await allowNetworksOf(common.db, customer.id) };
}

/**
 * Changes the plan fields given (maxActiveSubscriptions null: no cap) and, when given, replaces the
 * customer's allow-list of non-public networks, in one transaction.
 */
export async function updateCustomer(
  common: OperatorCommon,
  name: string,
  change: { plan: Partial<Plan>; allowNetworks?: readonly string[] },
): Promise<{ customer: Customer; allowNetworks: string[] }> {
  const c = await customerNamed(common, name);
  await common.db.transaction('customers:update', async (tx) => {
    await updatePlan(tx, c.id, change.plan);
    if (change.allowNetworks) await setAllowNetworks(tx, c.id, change.allowNetworks);
  });
  // The key cache holds each key's plan: this process forgets it now, the others on the change's announcement.
  common.access?.forgetCustomer(c.id);
  return await customerWithNetworks(common, name);
}

export async function listCustomers(common: Pick<Common, 'db'>, page: { limit: number; offset: number }) {
  return await listCustomerRows(common.db, page);
}

export async function customerDetail(common: Common, name: string) {
  const c = await customerNamed(common, name);
  const [activeSubscriptions, keys, domains] = await Promise.all([
    countActive(common.db, c.id),
    listApiKeys(common.db, c.id),
    listDomains(common.db, c.id, { limit: MAX_DOMAINS, offset: 0 }),
  ]);
  return {
    name: c.name,
    plan: planOf(c),
    credits: c.credits,
    activeSubscriptions,
    keys: keys.map((k) => ({ keyId: k.id, prefix: k.key_prefix, createdAt: k.created_at, revokedAt: k.revoked_at })),
    domains: domains.items.map((d) => ({ domain: d.domain, verifiedAt: d.verifiedAt })),
  };
}

/** Every API key of the customer, oldest first, as stored (prefix only): `herald keys list`. */
export async function customerKeys(common: Pick<Common, 'db'>, name: string) {
  const c = await customerNamed(common, name);
  return (await listApiKeys(common.db, c.id)).map((k) => ({
    keyId: k.id,
    prefix: k.key_prefix,
    label: k.label,
    allowedEndpoints: k.allowed_endpoints,
    createdAt: k.created_at,
    revokedAt: k.revoked_at,
  }));
}

/** Every callback domain of the customer, oldest first: `herald domains list`. */
export async function customerDomains(common: Pick<Common, 'db'>, name: string) {
  const c = await customerNamed(common, name);
  return (await listDomains(common.db, c.id, { limit: MAX_DOMAINS, offset: 0 })).items.map((d) => ({
    domain: d.domain,
    verifiedAt: d.verifiedAt,
    verificationToken: d.verificationToken,
    createdAt: d.createdAt,
  }));
}

/**
 * The customer's subscriptions on every chain, oldest first, filtered as the console's list (q: a
 * reference id, address or transaction id in any spelling), each with its delivery health; without
 * secrets: `herald subscriptions list`.
 */
export async function customerSubscriptions(
  common: Pick<Common, 'db'>,
  name: string,
  filter: Omit<SubscriptionFilter, 'targets'>,
  page: { limit: number; offset: number },
) {
  const c = await customerNamed(common, name);
  const targets = filter.q === undefined ? undefined : searchTargets(filter.q);
  const result = await searchSubscriptions(common.db, c.id, { ...filter, targets }, page);
  return {
    total: result.total,
    items: result.items.map((s) => ({
      referenceId: s.id,
      eventType: s.eventType,
      blockchain: s.blockchain,
      network: s.network,
      address: s.address,
      transactionId: s.transactionId,
      contractAddress: s.contractAddress ?? null,
      // '' on a pull-only subscription, as its own API answers (docs/concepts/event-stream.md#pull-only-subscriptions).
      callbackUrl: s.callbackUrl ?? '',
      isActive: s.isActive,
      deactivationReasons: s.deactivationReasons,
      createdAt: s.createdAt,
      callbacks: { delivered: s.health.delivered, failed: s.health.failed, pending: s.health.pending, lastDeliveredAt: s.health.lastDeliveredAt },
    })),
  };
}

/** A new API key, returned in clear this once; allowedEndpoints: only those (every endpoint without). */
export async function createKey(
  common: OperatorCommon,
  name: string,
  options: { label?: string; allowedEndpoints?: string[] } = { label: 'operator console' },
): Promise<{ keyId: string; apiKey: string }> {
  const c = await customerNamed(common, name);
  const { id, key } = await createApiKey(common.db, c.id, options);
  common.access?.forgetUnknownKeys();
  return { keyId: id, apiKey: key };
}

/** Revokes a key of the customer; revoking again keeps the first time. */
export async function revokeKey(common: OperatorCommon, name: string, keyId: string): Promise<{ keyId: string; revokedAt: Date }> {
  const c = await customerNamed(common, name);
  const revokedAt = /^\d{1,18}$/.test(keyId) ? await revokeApiKeyById(common.db, c.id, keyId) : undefined;
  if (!revokedAt) throw new ApiError('resource_not_found', `Customer '${truncate(name)}' has no API key with id '${truncate(keyId)}'.`);
  // This process forgets the key now; the others when the change announcement reaches them (milliseconds).
  common.access?.forgetCustomer(c.id);
  return { keyId, revokedAt };
}

/** Revokes the customer's active keys with this id or prefix (its first 10 characters); how many. */
export async function revokeKeys(common: OperatorCommon, name: string, idOrPrefix: string): Promise<number> {
  const c = await customerNamed(common, name);
  const revoked = await revokeApiKey(common.db, c.id, idOrPrefix);
  common.access?.forgetCustomer(c.id);
  return revoked;
}

export async function addCustomerCredits(common: Pick<Common, 'db'>, name: string, amount: number): Promise<bigint> {
  const c = await customerNamed(common, name);
  return await addCredits(common.db, c.id, BigInt(amount));
}

/** Registers the domain if needed and marks it verified by the operator (herald domains add --verified). */
export async function verifyDomain(common: OperatorCommon, name: string, domain: string): Promise<{ domain: string }> {
  const d = await addDomain(common, name, domain, { verified: true });
  return { domain: d.domain };
}

/**
 * Registers a callback domain for the customer (again: kept as it is); `verified`: marked verified by
 * the operator, without a proof.
 */
export async function addDomain(common: OperatorCommon, name: string, domain: string, options: { verified: boolean }): Promise<CallbackDomain> {
  const parsed = parseCallbackUrl(`https://${domain}/`);
  if ('error' in parsed || parsed.host !== domain.toLowerCase()) {
    throw new ApiError('invalid_data', `'${truncate(domain)}' is not a host name; give only the host, e.g. hooks.example.com.`, [
      { attribute: 'domain', message: 'Give only the host name of the callback URLs, e.g. hooks.example.com.' },
    ]);
  }
  const c = await customerNamed(common, name);
  const d = await upsertDomain(common.db, c.id, parsed.host, options.verified ? 'operator' : null);
  common.access?.forgetCustomer(c.id);
  return d;
}

/** Failed (or cancelled) callbacks of every customer in the window, newest first (the console's Failed callbacks). */
export async function finishedCallbacks(
  common: Pick<Common, 'db'>,
  filter: { status: 'failed' | 'cancelled'; customer?: string; since?: number; until?: number },
  page: { limit: number; offset: number },
  now: Date,
) {
  const customerId = filter.customer === undefined ? undefined : (await customerNamed(common, filter.customer)).id;
  const until = filter.until === undefined ? new Date(now.getTime() + 1000) : new Date(filter.until * 1000);
  const since = filter.since === undefined ? new Date(until.getTime() - FINISHED_DEFAULT_WINDOW_S * 1000) : new Date(filter.since * 1000);
  const result = await listFinishedCallbacks(common.db, { status: filter.status, customerId, since, until }, page);
  return { ...result, since, until };
}
/** The failed callbacks' default window: the last 7 days, as the customer's Deliveries. */
const FINISHED_DEFAULT_WINDOW_S = 7 * 24 * 3600;
