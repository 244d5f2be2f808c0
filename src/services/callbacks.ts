/**
 * The callback log and tools (extension): list a subscription's callbacks with their attempts, resend
 * one, and send a test callback now.
 */

import { randomBytes } from 'node:crypto';
import type { SendResult } from '../delivery/sender.ts';
import { prepareHeaders } from '../delivery/worker.ts';
import { callbackBody } from '../domain/callbacks.ts';
import { CHAINS, SAFETY_EVENTS } from '../domain/chains.ts';
import { ApiError, callbackUrlNotVerified, notFound, pullOnlySubscription, truncate } from '../domain/errors.ts';
import { isUuid } from '../domain/ids.ts';
import type { Subscription } from '../domain/subscriptions.ts';
import { unixSeconds } from '../domain/time.ts';
import { deriveWindow, parseSubscribedKey } from '../domain/wallet-windows.ts';
import * as store from '../store/callbacks.ts';
import { allowNetworksOf } from '../store/customers.ts';
import { noteTestCallbackDelivered } from '../store/overview.ts';
import { getSubscription } from '../store/subscriptions.ts';
import type { Caller, Charged, Common } from './context.ts';
import { chargeInTransaction } from './credits.ts';

async function ownSubscription(common: Common, caller: Caller, id: string): Promise<Subscription> {
  const found = isUuid(id) ? await getSubscription(common.db, caller.owner.customerId, id) : undefined;
  if (!found) throw notFound('subscription', id);
  return found;
}

/**
 * A page of the log, charged per callback listed. The page's own statements prove the subscription is
 * the caller's (no look-up before them), and the charge, a read's, does not wait for the WAL flush
 * (CreditCharger.charge): the log's p99 target (docs/operations/retention.md).
 */
export async function listCallbacks(common: Common, caller: Caller, subscriptionId: string, page: { limit: number; offset: number }) {
  const result = isUuid(subscriptionId) ? await store.listCallbacks(common.db, caller.owner.customerId, subscriptionId, page) : undefined;
  if (!result?.subscriptionFound) throw notFound('subscription', subscriptionId);
  const cost = BigInt(common.config.costs.getSubscription) * BigInt(result.items.length);
  return {
    value: { total: result.total, items: result.items },
    ...(await common.credits.charge(caller.owner.customerId, cost, caller.endpoint, { read: true })),
  };
}

/** How far back the delivery log reads when no since is given (docs/reference/api.md#list-the-callbacks-of-every-subscription). */
export const DELIVERIES_DEFAULT_WINDOW_S = 7 * 86_400;

/**
 * The customer's callbacks across subscriptions, newest first (the console's Deliveries page), charged
 * as the subscription's callback log is: per callback returned.
 */
export async function listDeliveries(
  common: Common,
  caller: Caller,
  filter: Omit<store.DeliveryLogFilter, 'since' | 'until'> & { since?: number; until?: number },
  page: { limit: number; offset: number },
  now: Date,
) {
  if (filter.subscriptionId !== undefined && !isUuid(filter.subscriptionId)) throw notFound('subscription', filter.subscriptionId);
  const until = filter.until === undefined ? new Date(now.getTime() + 1000) : new Date(filter.until * 1000);
  const since = filter.since === undefined ? new Date(until.getTime() - DELIVERIES_DEFAULT_WINDOW_S * 1000) : new Date(filter.since * 1000);
  const result = await store.listDeliveries(common.db, caller.owner.customerId, { ...filter, since, until }, page);
  const cost = BigInt(common.config.costs.getSubscription) * BigInt(result.items.length);
  return { value: { ...result, since, until }, ...(await common.credits.charge(caller.owner.customerId, cost, caller.endpoint, { read: true })) };
}

/** One callback with its exact body and every attempt's response excerpt (the console's callback page). Free. */
export async function getCallback(common: Common, caller: Caller, callbackId: string): Promise<Charged<store.CallbackDetail>> {
  const found = isUuid(callbackId) ? await store.getCallback(common.db, caller.owner.customerId, callbackId) : undefined;
  if (!found) throw notFound('callback', callbackId);
  return { value: found, ...(await common.credits.charge(caller.owner.customerId, 0n, caller.endpoint)) };
}

/**
 * Queues a delivered or failed callback again. The charge is taken in the transaction that queues it:
 * a 402 rolls the requeue back, so nothing is sent and no worker is woken.
 */
export async function resendCallback(common: Common, caller: Caller, callbackId: string): Promise<Charged<{ callbackId: string; status: 'pending' }>> {
  if (!isUuid(callbackId)) throw notFound('callback', callbackId);
  const customerId = caller.owner.customerId;
  return await common.db.transaction('callbacks:resend', async (tx) => {
    const state = await store.requeueCallback(tx, customerId, callbackId, new Date());
    if (state === 'not-found') throw notFound('callback', callbackId);
    if (typeof state === 'object') throw pullOnlySubscription(state.pullOnly, 'a resend');
    if (state === 'subscription-deleted') {
      throw new ApiError(
        'resource_not_found',
        `The subscription of callback '${callbackId}' was deleted, so its callbacks cannot be sent again. Create a new subscription to receive further events.`,
      );
    }
    if (state === 'pending') throw new ApiError('already_exists', 'This callback is still queued; it will be sent (again) by itself.');
    // A deleted subscription's callbacks were answered above; what is left cancelled was reorganised away.
    if (state === 'cancelled') {
      throw new ApiError('invalid_data', 'This callback was cancelled because its block left the canonical chain; it cannot be sent again.');
    }
    const charge = await chargeInTransaction(tx, customerId, BigInt(common.config.costs.activateSubscription), caller.endpoint);
    return { value: { callbackId, status: 'pending' }, ...charge };
  });
}

/** Test callbacks' idempotencyKey starts with this; the whole key stays 64 characters like a real one. */
export const TEST_IDEMPOTENCY_PREFIX = 'test-';

function testIdempotencyKey(): string {
  return TEST_IDEMPOTENCY_PREFIX + randomBytes(32).toString('hex').slice(TEST_IDEMPOTENCY_PREFIX.length);
}

/**
 * An item of the subscription's event type in the contract's shape, with values no chain can produce:
 * all-zero transaction ids and block hash (in the chain's spelling) and zero amounts. A receiver that
 * misses the isTest marker still cannot match it to a real transaction or credit anything.
 */
export function exampleItem(s: Subscription, now: Date): Record<string, unknown> {
  const item = exampleEventItem(s, now);
  // A test callback moves nothing: its verdict is ok (docs/concepts/deposit-safety.md).
  return SAFETY_EVENTS.has(s.eventType) ? { ...item, safety: { verdict: 'ok', flags: [] } } : item;
}

function exampleEventItem(s: Subscription, now: Date): Record<string, unknown> {
  const { family, unit } = CHAINS[s.blockchain];
  const zeroHash = family === 'evm' ? `0x${'0'.repeat(64)}` : '0'.repeat(64);
  const minedInBlock = { height: 18_000_000, hash: zeroHash, timestamp: unixSeconds(now) };
  const base = { blockchain: s.blockchain, network: s.network };
  switch (s.eventType) {
    case 'TRANSACTION_MINED':
      return { ...base, transactionId: zeroHash, minedInBlock };
    case 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED':
    case 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION': {
      const tokenType = s.blockchain === 'bitcoin' ? 'OMNI' : s.blockchain === 'tron' ? 'TRC-20' : s.blockchain === 'binance-smart-chain' ? 'BEP-20' : 'ERC-20';
      const token =
        tokenType === 'OMNI'
          ? { name: 'TetherUS', propertyId: '31', transactionType: 'Simple Send', createdByTransactionId: zeroHash, amount: '0' }
          : {
              name: 'Tether USD',
              symbol: 'USDT',
              decimals: '6',
              amount: '0',
              contractAddress: s.blockchain === 'tron' ? 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t' : '0xdac17f958d2ee523a2206206994597c13d831ec7',
            };
      const item = { ...base, address: s.address, minedInBlock, transactionId: zeroHash, tokenType, token, direction: 'incoming' };
      const target = s.receiveCallbackOn ?? 1;
      return s.eventType === 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED' ? item : { ...item, currentConfirmations: target, targetConfirmations: target };
    }
    case 'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED':
    case 'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED_EACH_CONFIRMATION': {
      const item = {
        ...base,
        address: s.address,
        minedInBlock,
        parentTransactionId: zeroHash,
        operationId: 'call_0_1',
        amount: '0',
        unit,
        direction: 'incoming',
      };
      const target = s.receiveCallbackOn ?? 1;
      return s.eventType === 'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED' ? item : { ...item, currentConfirmations: target, targetConfirmations: target };
    }
    case 'CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER': {
      const tokenType = s.blockchain === 'tron' ? 'TRC-20' : s.blockchain === 'binance-smart-chain' ? 'BEP-20' : 'ERC-20';
      const token = { name: '', symbol: '', decimals: '0', amount: '0', contractAddress: s.contractAddress ?? '' };
      return { ...base, transactionId: zeroHash, minedInBlock, tokenType, token };
    }
    case 'BLOCK_MINED':
    case 'BLOCK_REVERTED':
      return { ...base, height: minedInBlock.height, hash: zeroHash, timestamp: minedInBlock.timestamp };
    case 'BLOCK_HEIGHT_REACHED':
      return { ...base, height: s.blockHeight ?? minedInBlock.height, hash: zeroHash, timestamp: minedInBlock.timestamp };
    case 'ADDRESS_COINS_TRANSACTION_CONFIRMED':
    case 'ADDRESS_COINS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION': {
      const item = { ...base, address: s.address, minedInBlock, transactionId: zeroHash, amount: '0', unit, direction: 'incoming' };
      const target = s.receiveCallbackOn ?? 1;
      return s.eventType === 'ADDRESS_COINS_TRANSACTION_CONFIRMED' ? item : { ...item, currentConfirmations: target, targetConfirmations: target };
    }
    case 'CONFIRMED_COINS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER':
      return { ...base, transactionId: zeroHash, minedInBlock, amount: '0', unit };
    case 'ADDRESS_COINS_TRANSACTION_UNCONFIRMED':
      return {
        ...base,
        address: s.address,
        transactionId: zeroHash,
        amount: '0',
        unit,
        direction: 'incoming',
        firstSeenInMempoolTimestamp: minedInBlock.timestamp,
      };
    case 'ADDRESS_TOKENS_TRANSACTION_UNCONFIRMED': {
      const token = { name: '', symbol: '', decimals: '0', amount: '0', contractAddress: '0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed' };
      return {
        ...base,
        address: s.address,
        transactionId: zeroHash,
        tokenType: 'ERC-20',
        token,
        direction: 'incoming',
        firstSeenInMempoolTimestamp: minedInBlock.timestamp,
      };
    }
    // docs/concepts/wallet-keys.md: the wallet's first receive address, nothing moved.
    case 'XPUB_COINS_TRANSACTION_CONFIRMED':
    case 'XPUB_COINS_TRANSACTION_UNCONFIRMED': {
      const key = s.walletKey;
      const parsed = key ? parseSubscribedKey(s.blockchain, s.network, key) : undefined;
      const first = parsed?.ok ? deriveWindow(parsed.key, false, 0, 0, key?.regtest ?? false)[0] : undefined;
      const moved = {
        direction: 'incoming',
        amount: '0',
        unit,
        addresses: [{ address: first?.address ?? '', derivationPath: first?.derivationPath ?? 'm/0/0', change: false, received: '0', sent: '0' }],
      };
      const head = { ...base, ...(key && { [key.field]: key.text }), transactionId: zeroHash };
      return s.eventType === 'XPUB_COINS_TRANSACTION_CONFIRMED'
        ? { ...head, minedInBlock, ...moved }
        : { ...head, ...moved, firstSeenInMempoolTimestamp: minedInBlock.timestamp };
    }
    default:
      return {
        ...base,
        address: s.blockchain === 'tron' ? 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t' : '0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed',
        minedInBlock,
        parentTransactionId: zeroHash,
        operationId: 'call_0_1',
        amount: '0',
        unit,
      };
  }
}

/**
 * Sends an example callback now and reports what the receiver did. It is marked as a test inside the
 * signed body (data.isTest, an idempotencyKey starting with 'test-', zero ids and amounts) and, for
 * receivers that look at headers, with x-callback-test: true and x-callback-sequence: 0 (outside the
 * subscription's sequence, which starts at 1).
 *
 * The POST cannot sit inside a database transaction (it takes seconds and leaves this machine), so
 * the charge is taken and committed first: a 402 means nothing was sent. Once charged, an attempt
 * reported back (even a refused or failed one: that report is what the call is for) is paid for; a
 * send that throws instead becomes an error answer, and errors cost nothing, so the charge is given back.
 */
export async function sendTestCallback(common: Common, caller: Caller, subscriptionId: string) {
  const customerId = caller.owner.customerId;
  const s = await ownSubscription(common, caller, subscriptionId);
  if (s.callbackUrl === null || s.callbackHost === null) throw pullOnlySubscription(subscriptionId, 'a test callback');
  const { callbackUrl } = s;
  if (!(await common.access.isDomainVerified(customerId, s.callbackHost))) {
    throw callbackUrlNotVerified(
      `The callbackUrl host '${truncate(s.callbackHost)}' is no longer a verified callback domain of this customer. Verify it again (POST /blockchain-events/callback-domains/{domain}/verify) before sending a test callback.`,
    );
  }
  const allowNetworks = await allowNetworksOf(common.db, customerId);
  const charge = await common.credits.charge(customerId, BigInt(common.config.costs.getSubscription), caller.endpoint);
  const now = new Date();
  const idempotencyKey = testIdempotencyKey();
  const body = Buffer.from(callbackBody(s, idempotencyKey, exampleItem(s, now), { isTest: true }));
  // Signed as a real callback would be now (both secrets during a rotation's overlap). Sequence 0: no
  // callback of the subscription's stream has it, so a receiver checking for gaps is not misled.
  const previousSecret = s.previousSecretUntil && s.previousSecretUntil > now ? (s.previousCallbackSecretKey ?? null) : null;
  const headers = {
    ...prepareHeaders({ secret: s.callbackSecretKey, previousSecret, idempotencyKey, sequence: 0 }, body, now),
    'x-callback-test': 'true',
  };
  let result: SendResult;
  try {
    // The customer waits for this answer: the timeout covers the wait for a free connection to the destination too.
    result = await common.sender.send('POST', callbackUrl, store.destinationOf(callbackUrl), body, headers, { allowNetworks, timeoutCoversWait: true });
  } catch (error) {
    await common.credits
      .refund(customerId, charge, caller.endpoint)
      .catch((refundError) =>
        common.logger.error({ err: refundError, customerId, credits: String(charge.consumed) }, 'could not give back the credits of a failed test callback'),
      );
    throw error;
  }
  if (result.httpStatus !== null) {
    // The receiver answered: if its destination was parked (unreachable), its callbacks go now, not at
    // the probe's next retry, which may be hours away (docs/concepts/delivery.md). A failure here
    // leaves the parking to its probe: the customer's answer is the test callback's.
    const destination = store.destinationOf(callbackUrl);
    await store
      .releaseParkedDestination(common.db, destination)
      .then((released) => released && common.logger.info({ destination, subscriptionId }, 'a test callback reached a parked destination: released'))
      .catch((error) => common.logger.warn({ err: error, destination }, 'could not release a parked destination after a test callback'));
  }
  if (result.errorDetail) {
    // The answer has the generic reason; the operator's log has what exactly happened, by requestId.
    common.logger.warn({ requestId: caller.requestId, subscriptionId, errorClass: result.errorClass, detail: result.errorDetail }, 'test callback failed');
  }
  const delivered = result.httpStatus !== null && result.httpStatus >= 200 && result.httpStatus < 300;
  // The console's first-run checklist ends with a delivered test callback (docs/getting-started/console.md).
  if (delivered) await noteTestCallbackDelivered(common.db, customerId, now);
  return {
    value: {
      idempotencyKey,
      httpStatus: result.httpStatus,
      durationMs: Math.round(result.durationMs),
      delivered,
      errorClass: result.errorClass,
      errorMessage: result.errorMessage,
      responseBody: result.responseBody,
    },
    ...charge,
  };
}
