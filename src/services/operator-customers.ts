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
import { countActive } from '../store/subscriptions.ts';
import type { Common } from './context.ts';
import { parseCallbackUrl } from './subscriptions.ts';

/** More than any customer registers; the detail lists them all. */
const MAX_DOMAINS = 10_000;

async function customerNamed(common: Common, name: string): Promise<Customer> {
  const customer = await findCustomerByName(common.db, name);
  if (!customer) throw new ApiError('resource_not_found', `There is no customer named '${truncate(name)}'.`);
  return customer;
}

const planOf = (c: Customer) => ({
  mainnetAllowed: c.mainnetAllowed,
  maxActiveSubscriptions: c.maxActiveSubscriptions,
  requestsPerSecond: c.requestsPerSecond,
});

export async function listCustomers(common: Common, page: { limit: number; offset: number }) {
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
