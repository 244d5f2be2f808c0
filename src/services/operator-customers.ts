/**
 * The operator's customer actions (/operator/customers/*): the same store calls as `herald customers`,
 * `herald keys`, `herald credits add` and `herald domains add --verified`.
 */
import { ApiError, truncate } from '../domain/errors.ts';
import {
  addCredits,
  type Customer,
  createApiKey,
  findCustomerByName,
  listApiKeys,
  listCustomers as listCustomerRows,
  revokeApiKeyById,
} from '../store/customers.ts';
import { listDomains, upsertDomain } from '../store/domains.ts';
import { countActive, type SubscriptionFilter, searchSubscriptions } from '../store/subscriptions.ts';
import type { Common } from './context.ts';
import { parseCallbackUrl, searchTargets } from './subscriptions.ts';

/** More than any customer registers; the detail lists them all. */
const MAX_DOMAINS = 10_000;

async function customerNamed(common: Pick<Common, 'db'>, name: string): Promise<Customer> {
  const customer = await findCustomerByName(common.db, name);
  if (!customer) throw new ApiError('resource_not_found', `There is no customer named '${truncate(name)}'.`);
  return customer;
}

const planOf = (c: Customer) => ({
  mainnetAllowed: c.mainnetAllowed,
  maxActiveSubscriptions: c.maxActiveSubscriptions,
  requestsPerSecond: c.requestsPerSecond,
});

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
      callbackUrl: s.callbackUrl,
      isActive: s.isActive,
      deactivationReasons: s.deactivationReasons,
      createdAt: s.createdAt,
      callbacks: { delivered: s.health.delivered, failed: s.health.failed, pending: s.health.pending, lastDeliveredAt: s.health.lastDeliveredAt },
    })),
  };
}

/** A new API key, returned in clear this once. */
export async function createKey(common: Common, name: string): Promise<{ keyId: string; apiKey: string }> {
  const c = await customerNamed(common, name);
  const { id, key } = await createApiKey(common.db, c.id, { label: 'operator console' });
  common.access.forgetUnknownKeys();
  return { keyId: id, apiKey: key };
}

/** Revokes a key of the customer; revoking again keeps the first time. */
export async function revokeKey(common: Common, name: string, keyId: string): Promise<{ keyId: string; revokedAt: Date }> {
  const c = await customerNamed(common, name);
  const revokedAt = /^\d{1,18}$/.test(keyId) ? await revokeApiKeyById(common.db, c.id, keyId) : undefined;
  if (!revokedAt) throw new ApiError('resource_not_found', `Customer '${truncate(name)}' has no API key with id '${truncate(keyId)}'.`);
  // This process forgets the key now; the others when the change announcement reaches them (milliseconds).
  common.access.forgetCustomer(c.id);
  return { keyId, revokedAt };
}

export async function addCustomerCredits(common: Common, name: string, amount: number): Promise<bigint> {
  const c = await customerNamed(common, name);
  return await addCredits(common.db, c.id, BigInt(amount));
}

/** Registers the domain if needed and marks it verified by the operator (herald domains add --verified). */
export async function verifyDomain(common: Common, name: string, domain: string): Promise<{ domain: string }> {
  const parsed = parseCallbackUrl(`https://${domain}/`);
  if ('error' in parsed || parsed.host !== domain.toLowerCase()) {
    throw new ApiError('invalid_data', `'${truncate(domain)}' is not a host name; give only the host, e.g. hooks.example.com.`, [
      { attribute: 'domain', message: 'Give only the host name of the callback URLs, e.g. hooks.example.com.' },
    ]);
  }
  const c = await customerNamed(common, name);
  const d = await upsertDomain(common.db, c.id, parsed.host, 'operator');
  common.access.forgetCustomer(c.id);
  return { domain: d.domain };
}
