/** Callback domains: listing and removal here; registration and proof come with callback delivery. */
import { notFound } from '../domain/errors.ts';
import * as store from '../store/domains.ts';
import type { Caller, Common } from './context.ts';
import { chargeInTransaction } from './credits.ts';

export function domainItem(d: store.CallbackDomain) {
  return {
    domain: d.domain,
    isVerified: d.verifiedAt !== null,
    verifiedTimestamp: d.verifiedAt ? Math.floor(d.verifiedAt.getTime() / 1000) : null,
    verificationToken: d.verificationToken,
    createdTimestamp: Math.floor(d.createdAt.getTime() / 1000),
  };
}

export async function listDomains(common: Common, caller: Caller, page: { limit: number; offset: number }) {
  const result = await store.listDomains(common.db, caller.owner.customerId, page);
  return { value: result, ...(await common.credits.charge(caller.owner.customerId, BigInt(common.config.costs.walletsAndDomains))) };
}

export async function deleteDomain(common: Common, caller: Caller, domain: string) {
  const customerId = caller.owner.customerId;
  return await common.db.transaction('domains:delete', async (tx) => {
    const deleted = await store.deleteDomain(tx, customerId, domain.toLowerCase());
    if (!deleted) throw notFound('callback domain', domain);
    return { value: deleted, ...(await chargeInTransaction(tx, customerId, BigInt(common.config.costs.walletsAndDomains))) };
  });
}
