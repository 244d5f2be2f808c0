/**
 * A customer's default confirmation policy per chain (docs/concepts/confirmations-and-reorganisations.md#a-default-policy-per-chain):
 * set, list, remove (free calls, like the account's), and read by the creates of address subscriptions
 * that give none of receiveCallbackOn, confirmationTiers and finality.
 */
import type { Blockchain, EventType, Network } from '../domain/chains.ts';
import { type ConfirmationPolicy, finalityRefusal, normalizedTiers, supportsFinality, TAKES_CONFIRMATIONS, tierProblems } from '../domain/confirmations.ts';
import { type ErrorDetail, invalidData, notFound } from '../domain/errors.ts';
import * as store from '../store/confirmation-policies.ts';
import type { Caller, Charged, Common } from './context.ts';

export interface PolicyInput {
  confirmationTiers?: { upTo?: string; confirmations: number }[];
  finality?: 'finalized';
}

/** The policy a PUT gives: exactly one of confirmationTiers and finality, valid for the chain. */
export function policyOfInput(blockchain: Blockchain, input: PolicyInput): ConfirmationPolicy {
  const details: ErrorDetail[] = [];
  if ((input.confirmationTiers === undefined) === (input.finality === undefined)) {
    const message = 'Give exactly one of confirmationTiers and finality.';
    throw invalidData([
      { attribute: 'confirmationTiers', message },
      { attribute: 'finality', message },
    ]);
  }
  if (input.finality !== undefined) {
    if (!supportsFinality(blockchain)) throw invalidData([{ attribute: 'finality', message: finalityRefusal(blockchain) }]);
    return { finality: 'finalized' };
  }
  const tiers = input.confirmationTiers ?? [];
  details.push(...tierProblems(tiers));
  if (details.length > 0) throw invalidData(details);
  return { tiers: normalizedTiers(tiers) };
}

export async function putPolicy(
  common: Common,
  caller: Caller,
  chain: { blockchain: Blockchain; network: Network },
  input: PolicyInput,
): Promise<Charged<store.StoredConfirmationPolicy>> {
  const policy = policyOfInput(chain.blockchain, input);
  const stored = await store.putConfirmationPolicy(common.db, caller.owner.customerId, chain, policy);
  cached.delete(cacheKey(caller.owner.customerId, chain));
  return { value: stored, ...(await common.credits.charge(caller.owner.customerId, 0n, caller.endpoint)) };
}

export async function listPolicies(common: Common, caller: Caller): Promise<Charged<store.StoredConfirmationPolicy[]>> {
  const items = await store.listConfirmationPolicies(common.db, caller.owner.customerId);
  return { value: items, ...(await common.credits.charge(caller.owner.customerId, 0n, caller.endpoint)) };
}

export async function deletePolicy(
  common: Common,
  caller: Caller,
  chain: { blockchain: Blockchain; network: Network },
): Promise<Charged<store.StoredConfirmationPolicy>> {
  const removed = await store.deleteConfirmationPolicy(common.db, caller.owner.customerId, chain);
  cached.delete(cacheKey(caller.owner.customerId, chain));
  if (!removed) throw notFound('confirmation policy', `${chain.blockchain}/${chain.network}`);
  return { value: removed, ...(await common.credits.charge(caller.owner.customerId, 0n, caller.endpoint)) };
}

/**
 * How long a process keeps a customer's default policy of a chain read for its creates: a change made
 * through another API process is seen within this time (this process's own changes at once).
 */
export const POLICY_CACHE_MS = 5_000;
const cached = new Map<string, { policy: ConfirmationPolicy | undefined; readAt: number }>();
const cacheKey = (customerId: string, chain: { blockchain: Blockchain; network: Network }) => `${customerId}/${chain.blockchain}/${chain.network}`;

/**
 * The customer's default for a create of `eventType` on the chain: looked up only for the events that
 * take receiveCallbackOn when an item gives none of the three confirmation fields, from a read kept
 * POLICY_CACHE_MS (a create does not pay a round trip for it each time).
 */
export async function defaultPolicyFor(
  common: Pick<Common, 'db'>,
  customerId: string,
  eventType: EventType,
  chain: { blockchain: Blockchain; network: Network },
  items: readonly unknown[],
): Promise<ConfirmationPolicy | undefined> {
  if (!TAKES_CONFIRMATIONS.has(eventType)) return undefined;
  const givesNone = (i: unknown) => {
    if (i === null || typeof i !== 'object') return false;
    const item = i as Record<string, unknown>;
    return item.receiveCallbackOn === undefined && item.confirmationTiers === undefined && item.finality === undefined;
  };
  if (!items.some(givesNone)) return undefined;
  const key = cacheKey(customerId, chain);
  const hit = cached.get(key);
  if (hit && Date.now() - hit.readAt < POLICY_CACHE_MS) return hit.policy;
  const policy = (await store.getConfirmationPolicy(common.db, customerId, chain))?.policy;
  if (cached.size > 10_000) cached.clear();
  cached.set(key, { policy, readAt: Date.now() });
  return policy;
}
