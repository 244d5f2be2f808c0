/**
 * Wallet-key subscriptions (XPUB_COINS_TRANSACTION_CONFIRMED and XPUB_COINS_TRANSACTION_UNCONFIRMED,
 * docs/concepts/wallet-keys.md): an extended public key or an output descriptor subscribed once; herald derives
 * its addresses, watches gapLimit unused ones beyond the highest used on the receive and the change chain (the
 * account chains' BIP44 account keys: the receive chain only), and sends one callback per transaction of the
 * wallet (mined, or, on the Bitcoin family, first seen in the mempool). Created in one transaction with its first window of derived addresses and its charge; listed,
 * read, deleted and activated as every subscription (services/subscriptions.ts).
 *
 * A private key (xprv, tprv, ..., or a descriptor holding one) is refused by the parser before anything is
 * written, and the refusal does not repeat it.
 */

import { type Blockchain, CHAINS, type Network, XPUB_BLOCKCHAINS } from '../domain/chains.ts';
import { policyText } from '../domain/confirmations.ts';
import { ApiError, type ErrorDetail, invalidData, notFound } from '../domain/errors.ts';
import { isUuid } from '../domain/ids.ts';
import type { DerivedAddressRow, SubscribedWalletKey, Subscription } from '../domain/subscriptions.ts';
import type { ScriptType } from '../domain/wallet-keys.ts';
import { parseSubscribedKey } from '../domain/wallet-windows.ts';
import * as store from '../store/subscriptions.ts';
import { insertDerivedAddresses, listDerivedAddresses, markUsedAt, nextReceiveAddress } from '../store/xpub-addresses.ts';
import { defaultPolicyFor } from './confirmation-policies.ts';
import type { Caller, Charged, Common } from './context.ts';
import { chargeInTransaction } from './credits.ts';
import { deriveFirstWindow } from './derive-workers.ts';
import { assertChainFollowed } from './followed-chains.ts';
import {
  alreadyExists,
  CREATE_COST,
  callbackUrlNotVerified,
  checkActiveCap,
  duplicateKey,
  newSubscriptionOf,
  type SubscriptionItemInput,
} from './subscriptions.ts';
import { findPastUse } from './xpub-past-use.ts';

export const EVENT = 'XPUB_COINS_TRANSACTION_CONFIRMED' as const;
export const UNCONFIRMED_EVENT = 'XPUB_COINS_TRANSACTION_UNCONFIRMED' as const;
export type XpubEvent = typeof EVENT | typeof UNCONFIRMED_EVENT;
const XPUB_EVENTS: readonly string[] = [EVENT, UNCONFIRMED_EVENT];
export const DEFAULT_GAP_LIMIT = 20;

export interface XpubItemInput {
  extendedPublicKey?: string;
  descriptor?: string;
  derivation?: ScriptType;
  gapLimit?: number;
  receiveCallbackOn?: number;
  /** Instead of receiveCallbackOn (docs/concepts/confirmations-and-reorganisations.md): tiers by the callback's amount, or finality. */
  confirmationTiers?: { upTo?: string; confirmations: number }[];
  finality?: 'finalized';
  callbackUrl?: string;
  callbackSecretKey?: string;
  allowDuplicates?: boolean;
  pullOnly?: boolean;
}

/** The wallet key of a create request, checked (no database access): the field named in each refusal. */
export function walletKeyOf(common: Pick<Common, 'config'>, blockchain: Blockchain, network: Network, item: XpubItemInput): SubscribedWalletKey {
  if (!XPUB_BLOCKCHAINS.includes(blockchain)) {
    // The route takes the chains of docs/concepts/wallet-keys.md only (xrp is refused there): a guard for other callers.
    throw new ApiError('uri_not_found', `Extended keys cannot be subscribed on ${blockchain}: use one of ${XPUB_BLOCKCHAINS.join(', ')}.`, [
      { attribute: 'blockchain', message: `wallet keys are not served on ${blockchain}; use one of: ${XPUB_BLOCKCHAINS.join(', ')}.` },
    ]);
  }
  const given = (['extendedPublicKey', 'descriptor'] as const).filter((f) => item[f] !== undefined);
  if (given.length !== 1) {
    const message =
      given.length === 0
        ? 'Give the wallet to watch: extendedPublicKey (xpub, ypub, zpub, ...) or descriptor (wpkh([...]xpub.../<0;1>/*)), exactly one.'
        : 'Give extendedPublicKey or descriptor, not both.';
    throw invalidData([
      { attribute: 'extendedPublicKey', message },
      { attribute: 'descriptor', message },
    ]);
  }
  const field = given[0] as 'extendedPublicKey' | 'descriptor';
  if (field === 'descriptor' && item.derivation !== undefined) {
    throw invalidData([
      {
        attribute: 'derivation',
        message: 'derivation applies to a plain extendedPublicKey only: a descriptor names its script type itself (pkh, sh(wpkh), wpkh, tr).',
      },
    ]);
  }
  const key: SubscribedWalletKey = {
    field,
    text: item[field] as string,
    derivation: item.derivation ?? null,
    gapLimit: item.gapLimit ?? DEFAULT_GAP_LIMIT,
    regtest: common.config.chains.some((c) => c.blockchain === blockchain && c.network === network && c.chainId === 'regtest'),
  };
  const parsed = parseSubscribedKey(blockchain, network, key);
  if (!parsed.ok) throw invalidData([{ attribute: field, message: parsed.message }]);
  return key;
}

export async function createXpubSubscription(
  common: Common,
  caller: Caller,
  blockchain: Blockchain,
  network: Network,
  item: XpubItemInput,
  eventType: XpubEvent = EVENT,
): Promise<Charged<Subscription>> {
  const key = walletKeyOf(common, blockchain, network, item);
  const parsed = parseSubscribedKey(blockchain, network, key);
  if (!parsed.ok) throw new Error(parsed.message); // checked by walletKeyOf
  // The delivery fields, receiveCallbackOn and the plan's rules as every create checks them.
  const base: SubscriptionItemInput = {
    callbackUrl: item.callbackUrl,
    callbackSecretKey: item.callbackSecretKey,
    allowDuplicates: item.allowDuplicates,
    pullOnly: item.pullOnly,
    receiveCallbackOn: item.receiveCallbackOn,
    confirmationTiers: item.confirmationTiers,
    finality: item.finality,
  };
  // receiveCallbackOn, confirmationTiers or finality as every address create takes them, the customer's default policy included.
  // (The unconfirmed event takes none: its route's schema refuses them, and defaultPolicyFor gives none.)
  const defaultPolicy = await defaultPolicyFor(common, caller.owner.customerId, eventType, { blockchain, network }, [base]);
  const { candidate, host } = newSubscriptionOf(common, caller, eventType, blockchain, network, base, defaultPolicy);
  // The target is the key as given: the duplicate identity and the console's search use it.
  candidate.target = key.text;
  candidate.walletKey = key;
  candidate.duplicateKey = duplicateKey(
    eventType,
    blockchain,
    network,
    `${key.field}:${key.text}:${key.derivation ?? ''}`,
    `${candidate.confirmationPolicy ? policyText(candidate.confirmationPolicy) : candidate.receiveCallbackOn}:${key.gapLimit}`,
    candidate.callbackUrl,
  );
  const customerId = caller.owner.customerId;
  await assertChainFollowed(common, blockchain, network);
  if (host !== null && !(await common.access.isDomainVerified(customerId, host))) throw callbackUrlNotVerified(host);
  // The first window: gapLimit addresses on each chain the key has (derived before the transaction: no lock held meanwhile).
  // (Large windows in worker threads: derive-workers.ts.)
  const first = await deriveFirstWindow(blockchain, network, key);
  // Past use (docs/concepts/wallet-keys.md#past-use-at-subscribe): the addresses that already hold coins are used
  // from the first answer, and the window grown past them; asked of the node before the transaction, too.
  const past = await findPastUse(common, { blockchain, network }, parsed.key, key, first);
  const window = past.rows;
  const cost = BigInt(common.config.costs[CREATE_COST[eventType]]);
  return await common.db.transaction('xpub:create', async (tx) => {
    await checkActiveCap(tx, caller);
    const created = await store.insertUnlessTwin(tx, customerId, candidate);
    if (!created) throw alreadyExists();
    await insertDerivedAddresses(tx, created.id, window);
    await markUsedAt(tx, created.id, past.used);
    return { value: created, ...(await chargeInTransaction(tx, customerId, cost, caller.endpoint)) };
  });
}

/** The wallet-key subscription `id` of the caller, or 404. */
async function ownXpub(common: Common, caller: Caller, id: string): Promise<Subscription> {
  if (!isUuid(id)) throw notFound(`${EVENT} subscription`, id);
  const found = await store.getSubscription(common.db, caller.owner.customerId, id);
  if (!found || !XPUB_EVENTS.includes(found.eventType)) throw notFound(`${EVENT} subscription`, id);
  return found;
}

export async function listAddresses(
  common: Common,
  caller: Caller,
  id: string,
  filter: { change?: boolean; used?: boolean },
  page: { limit: number; offset: number },
): Promise<Charged<{ total: number; items: DerivedAddressRow[] }>> {
  await ownXpub(common, caller, id);
  const result = await listDerivedAddresses(common.db, caller.owner.customerId, id, filter, page);
  const cost = BigInt(common.config.costs.listSubscriptionsPerItem) * BigInt(result.items.length);
  return { value: result, ...(await common.credits.charge(caller.owner.customerId, cost, caller.endpoint)) };
}

export async function nextAddress(common: Common, caller: Caller, id: string): Promise<Charged<DerivedAddressRow>> {
  const s = await ownXpub(common, caller, id);
  const next = await nextReceiveAddress(common.db, caller.owner.customerId, id);
  if (!next) {
    // The window always holds gapLimit addresses past the highest used: a missing one is a descriptor without a receive chain.
    const details: ErrorDetail[] = [{ attribute: 'referenceId', message: `subscription ${id} derives no receive address.` }];
    throw new ApiError('resource_not_found', `The ${CHAINS[s.blockchain].unit} wallet of subscription ${id} has no receive address to hand out.`, details);
  }
  return { value: next, ...(await common.credits.charge(caller.owner.customerId, BigInt(common.config.costs.getSubscription), caller.endpoint)) };
}
