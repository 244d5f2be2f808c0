/**
 * Subscription use cases: create (one use case for every event type), list, get, delete, activate. Each charges its
 * credits in the same transaction as its write, so an error never costs anything.
 */

import { hash, randomUUID } from 'node:crypto';
import type { CostName } from '../config/config.ts';
import { validateAddress, validateTransactionId } from '../domain/addresses.ts';
import { BLOCKCHAINS, type Blockchain, CHAINS, EACH_CONFIRMATION_EVENTS, type EventType, isMainnet, type Network } from '../domain/chains.ts';
import {
  type ConfirmationPolicy,
  finalityRefusal,
  normalizedTiers,
  policyText,
  supportsFinality,
  TAKES_CONFIRMATIONS,
  tierProblems,
} from '../domain/confirmations.ts';
import {
  ApiError,
  type ErrorDetail,
  invalidData,
  notFound,
  pullOnlySubscription,
  truncate,
  callbackUrlNotVerified as unverifiedCallbackUrl,
} from '../domain/errors.ts';
import { isUuid, uuidV7 } from '../domain/ids.ts';
import { type NewSubscription, PAUSED_REASON, type Subscription } from '../domain/subscriptions.ts';
import { unixSeconds } from '../domain/time.ts';
import { createBlockJob } from '../store/block-jobs.ts';
import { cancelPendingCallbacks, destinationOf } from '../store/callbacks.ts';
import { getCursor, lockChain } from '../store/chain-state.ts';
import { DbError, type Queryable } from '../store/db.ts';
import { isDomainVerified } from '../store/domains.ts';
import * as store from '../store/subscriptions.ts';
import { assertQueueRoom } from './block-job-queue.ts';
import { defaultPolicyFor } from './confirmation-policies.ts';
import type { Caller, Charged, Common } from './context.ts';
import { chargeInTransaction } from './credits.ts';
import { assertChainFollowed } from './followed-chains.ts';
import { capReachedError } from './grouped-creates.ts';
import { activationScope, startRecoveryIn } from './recoveries.ts';
import { watchAfterCommit } from './subscribed-addresses.ts';

export interface SubscriptionItemInput {
  transactionId?: string;
  address?: string;
  amountHigherThan?: number;
  receiveCallbackOn?: number;
  /** Instead of receiveCallbackOn: confirmations by the callback's amount (docs/concepts/confirmations-and-reorganisations.md#confirmation-tiers-by-amount). */
  confirmationTiers?: { upTo?: string; confirmations: number }[];
  /** Instead of receiveCallbackOn: the chain's finality (docs/concepts/confirmations-and-reorganisations.md#finality). */
  finality?: 'finalized';
  /** Each-confirmation events: the last confirmation to report (stored as receiveCallbackOn). */
  confirmationsCount?: number;
  /** BLOCK_HEIGHT_REACHED. */
  blockHeightReached?: number;
  /** CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER: the token contract. */
  contractAddress?: string;
  /** Absent when address-coins-transactions-confirmed was given `callbackURL` instead. */
  callbackUrl?: string;
  /** address-coins-transactions-confirmed only: the SDK's spelling (docs/reference/api.md#address-coins-transactions-confirmed and #settled-request-fields). */
  callbackURL?: string;
  callbackSecretKey?: string;
  /** reverted-block also takes the strings "true" and "false" (docs/reference/api.md#reverted-block). */
  allowDuplicates?: boolean | 'true' | 'false';
  /** Backfill (extension): evaluate the chain's blocks from this height up to now for the new subscription. */
  fromBlockHeight?: number;
  /**
   * Extension: no callbackUrl (nor secret); the events are read from the event stream only
   * (docs/concepts/event-stream.md#pull-only-subscriptions).
   */
  pullOnly?: boolean;
}

/**
 * The events a backfill does not apply to: a mined transaction and a reached height are already looked
 * up at create (already-mined.ts), and a reverted block is not in the chain to evaluate again.
 */
const NOT_BACKFILLED: ReadonlySet<EventType> = new Set(['TRANSACTION_MINED', 'BLOCK_HEIGHT_REACHED', 'BLOCK_REVERTED']);

/**
 * Checks fromBlockHeight against the chain's processed height, read under the chain's lock in the
 * create's transaction: the backfill covers fromBlockHeight..that height, and every block applied after
 * the create commits is live following's (follower.ts holdForBackfills). Returns the backfill's last block.
 */
async function backfillEnd(tx: Queryable, common: Common, blockchain: Blockchain, network: Network, fromBlockHeight: number): Promise<number> {
  const chain = { blockchain, network };
  await lockChain(tx, chain);
  const cursor = await getCursor(tx, chain);
  const attribute = 'fromBlockHeight';
  if (!cursor) {
    throw invalidData([
      {
        attribute,
        message: `herald has not followed ${blockchain} ${network} yet, so there are no past blocks to backfill; create the subscription without fromBlockHeight.`,
      },
    ]);
  }
  if (fromBlockHeight > cursor.height) {
    throw invalidData([
      {
        attribute,
        message: `fromBlockHeight ${fromBlockHeight} is in the future: herald has processed ${blockchain} ${network} up to block ${cursor.height}. Give a height at most that, or leave fromBlockHeight out (live following sends the later blocks).`,
      },
    ]);
  }
  const lowest = common.config.chains.find((c) => c.blockchain === blockchain && c.network === network)?.lowestBlockHeight ?? 0;
  if (fromBlockHeight < lowest) {
    throw invalidData([
      {
        attribute,
        message: `The ${blockchain} ${network} node serves blocks from height ${lowest} only (it is pruned below): give a fromBlockHeight of at least ${lowest}.`,
      },
    ]);
  }
  const maxDepth = common.config.blockJobs.maxBackfillDepth;
  if (cursor.height - fromBlockHeight + 1 > maxDepth) {
    throw invalidData([
      {
        attribute,
        message: `A backfill reaches at most ${maxDepth} blocks back: give a fromBlockHeight of at least ${Math.max(0, cursor.height - maxDepth + 1)} (the chain is at block ${cursor.height}).`,
      },
    ]);
  }
  return cursor.height;
}

export const CREATE_COST: Record<EventType, CostName> = {
  TRANSACTION_MINED: 'transactionMined',
  ADDRESS_TOKENS_TRANSACTION_CONFIRMED: 'addressTokensTransactionsConfirmed',
  CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER: 'internalTransactionsForSpecificAmount',
  BLOCK_MINED: 'blockMined',
  BLOCK_HEIGHT_REACHED: 'blockHeightReached',
  BLOCK_REVERTED: 'revertedBlock',
  ADDRESS_TOKENS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION: 'addressTokensTransactionsConfirmedEachConfirmation',
  ADDRESS_INTERNAL_TRANSACTION_CONFIRMED: 'addressInternalTransactionsConfirmed',
  ADDRESS_INTERNAL_TRANSACTION_CONFIRMED_EACH_CONFIRMATION: 'addressInternalTransactionsConfirmedEachConfirmation',
  CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER: 'tokensTransfersForSpecificAmount',
  ADDRESS_COINS_TRANSACTION_CONFIRMED: 'addressCoinsTransactionsConfirmed',
  CONFIRMED_COINS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER: 'coinsTransactionsForSpecificAmount',
  ADDRESS_COINS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION: 'addressCoinsTransactionsConfirmedEachConfirmation',
  ADDRESS_COINS_TRANSACTION_UNCONFIRMED: 'addressCoinsTransactionsUnconfirmed',
  ADDRESS_TOKENS_TRANSACTION_UNCONFIRMED: 'addressTokensTransactionsUnconfirmed',
  // docs/concepts/wallet-keys.md: priced as an address coin subscription (one create, however many addresses it derives).
  XPUB_COINS_TRANSACTION_CONFIRMED: 'addressCoinsTransactionsConfirmed',
  XPUB_COINS_TRANSACTION_UNCONFIRMED: 'addressCoinsTransactionsUnconfirmed',
};

/**
 * Control characters (C0, DEL, C1): the URL parser silently drops a tab, CR or LF and keeps the rest, so the
 * URL stored and shown would not be the URL called; refused instead, with what to send.
 */
const CONTROL_CHARACTER = /\p{Cc}/u;

/** Parses the callback URL: https only, a host name, no credentials in it, no control characters. */
export function parseCallbackUrl(value: string): { host: string } | { error: string } {
  const control = CONTROL_CHARACTER.exec(value);
  if (control) {
    const code = `U+${(control[0].codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`;
    return {
      error: `The callbackUrl contains a control character (${code}, at position ${control.index + 1}): send the URL without line breaks, tabs or other control characters, percent-encoding any that belong in it (%0D, %0A).`,
    };
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return { error: `'${truncate(value)}' is not a valid URL. Give an absolute https URL such as https://example.com/callbacks.` };
  }
  if (url.protocol !== 'https:') return { error: `The callbackUrl must use https; '${url.protocol.slice(0, -1)}' is not supported.` };
  if (!url.hostname) return { error: 'The callbackUrl has no host name.' };
  if (url.username || url.password)
    return { error: 'The callbackUrl must not contain a user name or password; use callbackSecretKey to authenticate callbacks.' };
  return { host: url.hostname.replace(/^\[|\]$/g, '').toLowerCase() };
}

/**
 * The callback URL of a create request. address-coins-transactions-confirmed takes `callbackURL` (the
 * SDK's spelling) or `callbackUrl`, exactly one (docs/reference/api.md#settled-request-fields); the schema lets both be
 * optional there, so the rule is checked here. Every other endpoint's schema requires `callbackUrl`.
 */
function callbackUrlOf(item: SubscriptionItemInput): string {
  if (item.callbackURL !== undefined && item.callbackUrl !== undefined) {
    const message = 'Give the callback URL once: either callbackURL or callbackUrl, not both.';
    throw invalidData([
      { attribute: 'callbackURL', message },
      { attribute: 'callbackUrl', message },
    ]);
  }
  const value = item.callbackURL ?? item.callbackUrl;
  if (value === undefined) {
    throw new ApiError('missing_required_attributes', 'The callback URL is required: give callbackURL (or callbackUrl), an https URL.', [
      { attribute: 'callbackURL', message: 'Required (callbackUrl is accepted too): an https URL whose host is a verified callback domain.' },
    ]);
  }
  return value;
}

/**
 * The confirmation policy of an address subscription that takes receiveCallbackOn: confirmationTiers or
 * finality as given (at most one of the three), else the customer's default for the chain when
 * receiveCallbackOn is not given either, else none. Problems go to `details`.
 */
function policyOf(blockchain: Blockchain, item: SubscriptionItemInput, details: ErrorDetail[], defaultPolicy?: ConfirmationPolicy): ConfirmationPolicy | null {
  const given = (['receiveCallbackOn', 'confirmationTiers', 'finality'] as const).filter((k) => item[k] !== undefined);
  if (given.length > 1) {
    const message = `Give at most one of receiveCallbackOn, confirmationTiers and finality (this request gives ${given.join(' and ')}).`;
    for (const attribute of given) details.push({ attribute, message });
    return null;
  }
  if (item.finality !== undefined) {
    if (!supportsFinality(blockchain)) {
      details.push({ attribute: 'finality', message: finalityRefusal(blockchain) });
      return null;
    }
    return { finality: 'finalized' };
  }
  if (item.confirmationTiers !== undefined) {
    const problems = tierProblems(item.confirmationTiers);
    details.push(...problems);
    return problems.length > 0 ? null : { tiers: normalizedTiers(item.confirmationTiers) };
  }
  if (item.receiveCallbackOn !== undefined) return null;
  return defaultPolicy ?? null;
}

export function duplicateKey(
  eventType: EventType,
  blockchain: Blockchain,
  network: Network,
  target: string | null,
  threshold: string,
  callbackUrl: string | null,
): Buffer {
  // The one-shot hash, in hex, copied into a pooled Buffer: a Hash object and a digest() Buffer (its own
  // memory each) cost ten times as much, which a bulk create pays per item.
  return Buffer.from(hash('sha256', JSON.stringify([eventType, blockchain, network, target, threshold, callbackUrl]), 'hex'), 'hex');
}

export function assertMainnetAllowed(caller: Caller, network: Network): void {
  if (isMainnet(network) && !caller.owner.mainnetAllowed) {
    throw new ApiError(
      'feature_mainnets_not_allowed_for_plan',
      "This customer's plan does not include mainnet access. Use a test network, or ask the operator to enable mainnets.",
    );
  }
}

export function alreadyExists(): ApiError {
  return new ApiError(
    'already_exists',
    'An active subscription with the same event, target and callbackUrl already exists. Set allowDuplicates to true to create another.',
  );
}

/** Rejects when the plan's cap on active subscriptions is reached; holds the customer's cap lock until the transaction ends. */
export async function checkActiveCap(tx: Queryable, caller: Caller): Promise<void> {
  const cap = caller.owner.maxActiveSubscriptions;
  if (cap === null) return;
  await store.lockActiveCap(tx, caller.owner.customerId);
  const active = await store.countActive(tx, caller.owner.customerId);
  if (active >= cap) throw capReachedError(cap, active);
}

/**
 * Validates one create request's item and makes the row to insert (no database access): shared by the
 * single create and the bulk create. Throws the ApiError a single create answers.
 */
export function newSubscriptionOf(
  common: Pick<Common, 'config'>,
  caller: Caller,
  eventType: EventType,
  blockchain: Blockchain,
  network: Network,
  item: SubscriptionItemInput,
  /** The customer's default policy for the chain (services/confirmation-policies.ts), used when the item gives none. */
  defaultPolicy?: ConfirmationPolicy,
): { candidate: NewSubscription; host: string | null } {
  const details: ErrorDetail[] = [];
  let target: string | null = null;
  if (item.transactionId !== undefined) {
    const v = validateTransactionId(blockchain, network, item.transactionId);
    if (v.ok) target = v.normalized;
    else details.push({ attribute: 'transactionId', message: v.message });
  }
  if (item.address !== undefined) {
    const v = validateAddress(blockchain, network, item.address);
    if (v.ok) target = v.normalized;
    else details.push({ attribute: 'address', message: v.message });
  }
  // The token contract is the target of a token amount subscription (docs/reference/api.md#settled-duplicates).
  if (item.contractAddress !== undefined) {
    const v = validateAddress(blockchain, network, item.contractAddress);
    if (v.ok) target = v.normalized;
    else details.push({ attribute: 'contractAddress', message: v.message });
  }
  // A pull-only subscription has no URL (and no secret: nothing is signed); the schema says so too
  // (api/schemas.ts deliveryTarget), checked again here for any caller that skips it.
  let callbackUrl: string | null = null;
  let host: string | null = null;
  if (item.pullOnly === true) {
    for (const attribute of ['callbackUrl', 'callbackURL', 'callbackSecretKey'] as const) {
      if (item[attribute] !== undefined) details.push({ attribute, message: pullOnlyConflict(attribute) });
    }
  } else {
    callbackUrl = callbackUrlOf(item);
    const url = parseCallbackUrl(callbackUrl);
    if ('error' in url) details.push({ attribute: 'callbackUrl', message: url.error });
    else host = url.host;
  }
  const confirmationPolicy = TAKES_CONFIRMATIONS.has(eventType) ? policyOf(blockchain, item, details, defaultPolicy) : null;
  if (details.length > 0) throw invalidData(details);
  assertMainnetAllowed(caller, network);

  // The confirmation of the callback, or the last one reported by an each-confirmation event (docs/reference/api.md#settled-request-fields);
  // none when a confirmation policy (tiers, finality) decides instead.
  const receiveCallbackOn = TAKES_CONFIRMATIONS.has(eventType)
    ? confirmationPolicy
      ? null
      : (item.receiveCallbackOn ?? common.config.defaultConfirmations)
    : EACH_CONFIRMATION_EVENTS.has(eventType)
      ? (item.confirmationsCount ?? common.config.defaultConfirmations)
      : null;
  const amountHigherThan = item.amountHigherThan === undefined ? null : BigInt(item.amountHigherThan);
  const blockHeight = item.blockHeightReached ?? null;
  const allowDuplicates = item.allowDuplicates === true || item.allowDuplicates === 'true';
  const candidate: NewSubscription = {
    id: uuidV7(),
    eventType,
    blockchain,
    network,
    transactionId: item.transactionId ?? null,
    address: item.address ?? null,
    target,
    receiveCallbackOn,
    confirmationPolicy,
    amountHigherThan,
    blockHeight,
    contractAddress: item.contractAddress ?? null,
    callbackUrl,
    callbackHost: host,
    // Stored as given: NULL when absent, '' when given empty (neither signs; delivery signs with a non-empty key
    // only). Kept apart so that every create answer echoes an empty secret as given: the endpoints whose answer
    // leaves an absent secret out (docs/reference/api.md#address-tokens-transactions-confirmed-each-confirmation, the amount events) echo a given '' as the others do.
    callbackSecretKey: item.callbackSecretKey ?? null,
    allowDuplicates,
    // docs/reference/api.md#settled-duplicates: the height is the target of BLOCK_HEIGHT_REACHED; BLOCK_MINED and BLOCK_REVERTED have none;
    // a token amount subscription's are its contract (target) and its amount.
    duplicateKey: duplicateKey(
      eventType,
      blockchain,
      network,
      target,
      confirmationPolicy ? policyText(confirmationPolicy) : String(receiveCallbackOn ?? amountHigherThan ?? blockHeight ?? ''),
      callbackUrl,
    ),
    apiVersion: caller.apiVersion,
  };
  if (item.fromBlockHeight !== undefined && NOT_BACKFILLED.has(eventType)) {
    throw invalidData([
      {
        attribute: 'fromBlockHeight',
        message:
          eventType === 'BLOCK_REVERTED'
            ? 'A BLOCK_REVERTED subscription cannot be backfilled: blocks dropped in the past are no longer in the chain.'
            : 'This event is looked up in the past blocks at create already (a mined transaction, a reached height); leave fromBlockHeight out.',
      },
    ]);
  }
  return { candidate, host };
}

/** Why `attribute` is refused beside pullOnly: true (also the schema's message, api/validation.ts). */
export function pullOnlyConflict(attribute: string): string {
  return `The attribute '${attribute}' is not accepted with pullOnly: true: a pull-only subscription sends no callbacks (its events are read from the event stream). Remove it, or remove pullOnly to get callbacks.`;
}

export function callbackUrlNotVerified(host: string): ApiError {
  return unverifiedCallbackUrl(
    `The callbackUrl host '${truncate(host)}' is not a verified callback domain of this customer. Register and verify it first (POST /blockchain-events/callback-domains), or ask the operator (herald domains add --verified).`,
  );
}

export async function createSubscription(
  common: Common,
  caller: Caller,
  eventType: EventType,
  blockchain: Blockchain,
  network: Network,
  item: SubscriptionItemInput,
): Promise<Charged<Subscription>> {
  const customerId = caller.owner.customerId;
  const defaultPolicy = await defaultPolicyFor(common, customerId, eventType, { blockchain, network }, [item]);
  const { candidate, host } = newSubscriptionOf(common, caller, eventType, blockchain, network, item, defaultPolicy);
  await assertChainFollowed(common, blockchain, network);
  // Domain verification is about where callbacks go: a pull-only subscription sends none.
  if (host !== null && !(await common.access.isDomainVerified(customerId, host))) throw callbackUrlNotVerified(host);
  const cost = BigInt(common.config.costs[CREATE_COST[eventType]]);
  const cap = caller.owner.maxActiveSubscriptions;
  const { fromBlockHeight } = item;
  if (fromBlockHeight === undefined) {
    // Grouped with the customer's concurrent creates: charged in the transaction that inserts it.
    const created = await common.creates.create(customerId, { cap, cost, endpoint: caller.endpoint, candidate });
    if (!created) throw alreadyExists();
    await watchAfterCommit(common, { blockchain, network }, customerId, [created.subscription]);
    return { value: created.subscription, ...created.charge };
  }
  // A backfilled create is a transaction of its own (it also takes the chain's lock and makes a job).
  // Pay first, then insert; give the credits back if the insert is refused. (Inserting first would
  // let chain following match a subscription that might then go unpaid.)
  const charge = await common.credits.charge(customerId, cost, caller.endpoint);
  try {
    const created = await common.db.transaction('subscriptions:create-with-backfill', async (tx) => {
      if (cap !== null) await checkActiveCap(tx, caller);
      const toHeight = await backfillEnd(tx, common, blockchain, network, fromBlockHeight);
      await assertQueueRoom(tx, common, customerId, { blockchain, network }, toHeight - fromBlockHeight + 1);
      const inserted = await store.insertUnlessTwin(tx, customerId, candidate);
      if (!inserted) return inserted;
      const job = await createBlockJob(tx, {
        id: randomUUID(),
        kind: 'backfill',
        customerId,
        subscriptionId: inserted.id,
        chain: { blockchain, network },
        fromHeight: fromBlockHeight,
        toHeight,
      });
      return { ...inserted, backfill: { fromBlockHeight, toBlockHeight: toHeight, processedHeight: job.processedHeight, state: job.state } };
    });
    if (!created) throw alreadyExists();
    await watchAfterCommit(common, { blockchain, network }, customerId, [created]);
    return { value: created, ...charge };
  } catch (error) {
    await common.credits
      .refund(customerId, charge, caller.endpoint)
      .catch((refundError) =>
        common.logger.error({ err: refundError, customerId, credits: String(charge.consumed) }, 'could not give back the credits of a refused create'),
      );
    throw error;
  }
}

function assertUuid(id: string): void {
  if (!isUuid(id)) throw notFound('subscription', id);
}

export async function listSubscriptions(common: Common, caller: Caller, blockchain: Blockchain, network: Network, page: { limit: number; offset: number }) {
  const result = await store.listSubscriptions(common.db, caller.owner.customerId, blockchain, network, page);
  const cost = BigInt(common.config.costs.listSubscriptionsPerItem) * BigInt(result.items.length);
  return { value: result, ...(await common.credits.charge(caller.owner.customerId, cost, caller.endpoint)) };
}

/**
 * The normalised forms a search term takes as an address or transaction id of any chain (a Tron `41...`
 * hex address is its base58 form, an EVM address lower case, a cashaddr with its prefix): a subscription
 * is found by the spelling it was created with or by any other spelling of the same target.
 */
export function searchTargets(q: string): string[] {
  const targets = new Set([q, q.toLowerCase()]);
  for (const blockchain of BLOCKCHAINS) {
    for (const network of CHAINS[blockchain].networks) {
      for (const v of [validateAddress(blockchain, network, q), validateTransactionId(blockchain, network, q)]) if (v.ok) targets.add(v.normalized);
    }
  }
  return [...targets];
}

/** The cross-chain listing with filters and each subscription's delivery health (the console's list). Free. */
export async function searchSubscriptions(common: Common, caller: Caller, filter: store.SubscriptionFilter, page: { limit: number; offset: number }) {
  const targets = filter.q === undefined ? undefined : searchTargets(filter.q);
  const result = await store.searchSubscriptions(common.db, caller.owner.customerId, { ...filter, targets }, page);
  return { value: result, ...(await common.credits.charge(caller.owner.customerId, 0n, caller.endpoint)) };
}

export async function getSubscription(common: Common, caller: Caller, id: string): Promise<Charged<Subscription>> {
  assertUuid(id);
  const found = await store.getSubscriptionShown(common.db, caller.owner.customerId, id);
  if (!found) throw notFound('subscription', id);
  return { value: found, ...(await common.credits.charge(caller.owner.customerId, BigInt(common.config.costs.getSubscription), caller.endpoint)) };
}

export async function deleteSubscription(common: Common, caller: Caller, blockchain: Blockchain, network: Network, id: string): Promise<Charged<Subscription>> {
  assertUuid(id);
  const customerId = caller.owner.customerId;
  return await common.db.transaction('subscriptions:delete', async (tx) => {
    const deleted = await store.deleteSubscription(tx, customerId, blockchain, network, id);
    if (!deleted) throw notFound(`${blockchain} ${network} subscription`, id);
    await cancelPendingCallbacks(tx, customerId, id);
    return { value: deleted, ...(await chargeInTransaction(tx, customerId, BigInt(common.config.costs.deleteSubscription), caller.endpoint)) };
  });
}

/**
 * Activates a subscription; with `recoverSince` (Unix seconds), also starts a recovery of its failed
 * callbacks since then, in the same transaction (docs/guides/recover-and-replay.md "Recovering callbacks").
 */
export async function activateSubscription(
  common: Common,
  caller: Caller,
  id: string,
  options: { recoverSince?: number } = {},
): Promise<Charged<Subscription & { recoveryId?: string }>> {
  assertUuid(id);
  const now = new Date();
  const scope = options.recoverSince === undefined ? undefined : activationScope(id, options.recoverSince, now);
  const customerId = caller.owner.customerId;
  const result = await common.db.transaction('subscriptions:activate', async (tx) => {
    const found = await store.getSubscription(tx, customerId, id, { forUpdate: true });
    if (!found) throw notFound('subscription', id);
    assertMainnetAllowed(caller, found.network);
    if (found.callbackHost === null && scope) throw pullOnlySubscription(id, 'recoverSince (a recovery of its callbacks)');
    if (!found.isActive) {
      if (found.callbackHost !== null && !(await isDomainVerified(tx, customerId, found.callbackHost))) {
        throw unverifiedCallbackUrl(
          `The callbackUrl host '${truncate(found.callbackHost)}' is no longer a verified callback domain of this customer. Verify it again before activating.`,
        );
      }
      await store.lockDuplicateIdentity(tx, customerId, found.duplicateKey);
      if (!found.allowDuplicates && (await store.findActiveDuplicate(tx, customerId, found.duplicateKey, found.id))) throw alreadyExists();
      await checkActiveCap(tx, caller);
    }
    const activated = found.isActive
      ? found
      : await store.setActive(tx, customerId, id).catch((error) => {
          // An active twin without allowDuplicates appeared meanwhile: the unique index refuses this one.
          throw error instanceof DbError && error.isUniqueViolation ? alreadyExists() : error;
        });
    const charge = await chargeInTransaction(tx, customerId, BigInt(common.config.costs.activateSubscription), caller.endpoint);
    // After the activation's own charge: the recovery needs the price of one callback beyond it.
    const recovery = scope ? await startRecoveryIn(tx, common, customerId, scope) : undefined;
    return { value: recovery ? { ...activated, recoveryId: recovery.id } : activated, ...charge };
  });
  const { blockchain, network } = result.value;
  await watchAfterCommit(common, { blockchain, network }, customerId, [result.value]);
  return result;
}

/** A subscription's duplicate identity with another callback URL (as its create computed it). */
function duplicateKeyWith(s: Subscription, callbackUrl: string): Buffer {
  const policy = s.confirmationPolicy ? policyText(s.confirmationPolicy) : null;
  if (s.walletKey) {
    const key = s.walletKey;
    return duplicateKey(
      s.eventType,
      s.blockchain,
      s.network,
      `${key.field}:${key.text}:${key.derivation ?? ''}`,
      `${policy ?? s.receiveCallbackOn}:${key.gapLimit}`,
      callbackUrl,
    );
  }
  return duplicateKey(
    s.eventType,
    s.blockchain,
    s.network,
    s.target,
    policy ?? String(s.receiveCallbackOn ?? s.amountHigherThan ?? s.blockHeight ?? ''),
    callbackUrl,
  );
}

/**
 * Changes a subscription's callback URL (docs/reference/api.md#change-a-callback-url): https, on a
 * verified callback domain; its pending callbacks go to the new URL from their next attempt. Refused
 * (already_exists) when an active twin without allowDuplicates has the new URL. Costs as a secret rotation.
 */
export async function changeCallbackUrl(common: Common, caller: Caller, id: string, callbackUrl: string): Promise<Charged<Subscription>> {
  assertUuid(id);
  const url = parseCallbackUrl(callbackUrl);
  if ('error' in url) throw invalidData([{ attribute: 'callbackUrl', message: url.error }]);
  const customerId = caller.owner.customerId;
  return await common.db.transaction('subscriptions:change-url', async (tx) => {
    const found = await store.getSubscription(tx, customerId, id, { forUpdate: true });
    if (!found) throw notFound('subscription', id);
    if (found.callbackUrl === null) throw pullOnlySubscription(id, 'a callback URL change');
    if (!(await isDomainVerified(tx, customerId, url.host))) throw callbackUrlNotVerified(url.host);
    const key = duplicateKeyWith(found, callbackUrl);
    if (found.isActive) {
      await store.lockDuplicateIdentity(tx, customerId, key);
      if (!found.allowDuplicates && (await store.findActiveDuplicate(tx, customerId, key, found.id))) throw alreadyExists();
    }
    const changed = await store
      .changeCallbackUrl(tx, customerId, id, { url: callbackUrl, host: url.host, destination: destinationOf(callbackUrl), duplicateKey: key })
      .catch((error) => {
        throw error instanceof DbError && error.isUniqueViolation ? alreadyExists() : error;
      });
    if (!changed) throw notFound('subscription', id);
    return { value: changed, ...(await chargeInTransaction(tx, customerId, BigInt(common.config.costs.rotateSecret), caller.endpoint)) };
  });
}

/**
 * Pauses a subscription (docs/reference/api.md#pause-a-subscription): inactive, its last deactivation
 * reason `paused`; POST .../activate resumes it. Pausing an inactive subscription changes nothing. Free.
 */
export async function pauseSubscription(common: Common, caller: Caller, id: string, now: Date = new Date()): Promise<Charged<Subscription>> {
  assertUuid(id);
  const customerId = caller.owner.customerId;
  return await common.db.transaction('subscriptions:pause', async (tx) => {
    const paused = await store.pause(tx, customerId, id, PAUSED_REASON, unixSeconds(now));
    const value = paused ?? (await store.getSubscription(tx, customerId, id));
    if (!value) throw notFound('subscription', id);
    return { value, ...(await chargeInTransaction(tx, customerId, 0n, caller.endpoint)) };
  });
}

/** Longest overlap of a secret rotation: a week, so an old secret cannot be kept signing for ever. */
export const MAX_ROTATION_OVERLAP_SECONDS = 7 * 24 * 3600;
export const DEFAULT_ROTATION_OVERLAP_SECONDS = 24 * 3600;

/**
 * Replaces the callback secret. For `overlapSeconds` (default 24 h) callbacks carry signatures by both
 * the new and the replaced secret, so a receiver can switch at its own pace; then only the new one.
 * Costs as activate, charged in the same transaction as the write.
 */
export async function rotateSecret(
  common: Common,
  caller: Caller,
  id: string,
  input: { callbackSecretKey: string; overlapSeconds?: number },
  now: Date = new Date(),
): Promise<Charged<Subscription>> {
  assertUuid(id);
  if (input.callbackSecretKey.length === 0) {
    throw invalidData([
      { attribute: 'callbackSecretKey', message: 'The new callbackSecretKey must not be empty: signing cannot be turned off by a rotation.' },
    ]);
  }
  const overlap = input.overlapSeconds ?? DEFAULT_ROTATION_OVERLAP_SECONDS;
  const customerId = caller.owner.customerId;
  return await common.db.transaction('subscriptions:rotate-secret', async (tx) => {
    const found = await store.getSubscription(tx, customerId, id);
    if (found && found.callbackUrl === null) throw pullOnlySubscription(id, 'a secret rotation');
    const rotated = await store.rotateSecret(tx, customerId, id, input.callbackSecretKey, new Date(now.getTime() + overlap * 1000));
    if (!rotated) throw notFound('subscription', id);
    return { value: rotated, ...(await chargeInTransaction(tx, customerId, BigInt(common.config.costs.rotateSecret), caller.endpoint)) };
  });
}
