/**
 * The callback log and tools (extension): list a subscription's callbacks with their attempts, resend
 * one, and send a test callback now.
 */

import { randomBytes } from 'node:crypto';
import { prepareHeaders } from '../delivery/worker.ts';
import { callbackBody } from '../domain/callbacks.ts';
import { CHAINS } from '../domain/chains.ts';
import { ApiError, notFound } from '../domain/errors.ts';
import { isUuid } from '../domain/ids.ts';
import { unixSeconds } from '../domain/time.ts';
import * as store from '../store/callbacks.ts';
import { allowNetworksOf } from '../store/customers.ts';
import type { Subscription } from '../store/subscriptions.ts';
import { getSubscription } from '../store/subscriptions.ts';
import type { Caller, Common } from './context.ts';

async function ownSubscription(common: Common, caller: Caller, id: string): Promise<Subscription> {
  const found = isUuid(id) ? await getSubscription(common.db, caller.owner.customerId, id) : undefined;
  if (!found) throw notFound('subscription', id);
  return found;
}

export async function listCallbacks(common: Common, caller: Caller, subscriptionId: string, page: { limit: number; offset: number }) {
  await ownSubscription(common, caller, subscriptionId);
  const result = await store.listCallbacks(common.db, caller.owner.customerId, subscriptionId, page);
  return {
    value: result,
    ...(await common.credits.charge(caller.owner.customerId, BigInt(common.config.costs.getSubscription) * BigInt(result.items.length))),
  };
}

export async function resendCallback(common: Common, caller: Caller, callbackId: string) {
  if (!isUuid(callbackId)) throw notFound('callback', callbackId);
  const state = await store.requeueCallback(common.db, caller.owner.customerId, callbackId, new Date());
  if (state === 'not-found') throw notFound('callback', callbackId);
  if (state === 'pending') throw new ApiError('already_exists', 'This callback is still queued; it will be sent (again) by itself.');
  if (state === 'cancelled') throw new ApiError('invalid_data', 'This callback was cancelled with its subscription and cannot be sent again.');
  return {
    value: { callbackId, status: 'pending' },
    ...(await common.credits.charge(caller.owner.customerId, BigInt(common.config.costs.activateSubscription))),
  };
}

const EXAMPLE_TX_EVM = `0x${'5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060'}`;

/** A realistic item of the subscription's event type, with the subscription's own target. */
export function exampleItem(s: Subscription, now: Date): Record<string, unknown> {
  const { family, unit } = CHAINS[s.blockchain];
  const evm = family === 'evm';
  const minedInBlock = {
    height: 18_000_000,
    hash: evm ? `0x${'ab'.repeat(32)}` : 'ab'.repeat(32),
    timestamp: unixSeconds(now),
  };
  const base = { blockchain: s.blockchain, network: s.network };
  const exampleTx = evm ? EXAMPLE_TX_EVM : EXAMPLE_TX_EVM.slice(2);
  switch (s.eventType) {
    case 'TRANSACTION_MINED':
      return { ...base, transactionId: s.transactionId, minedInBlock };
    case 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED': {
      const tokenType = s.blockchain === 'bitcoin' ? 'OMNI' : s.blockchain === 'tron' ? 'TRC-20' : s.blockchain === 'binance-smart-chain' ? 'BEP-20' : 'ERC-20';
      const token =
        tokenType === 'OMNI'
          ? { name: 'TetherUS', propertyId: '31', transactionType: 'Simple Send', createdByTransactionId: exampleTx, amount: '25.5' }
          : {
              name: 'Tether USD',
              symbol: 'USDT',
              decimals: '6',
              amount: '25.5',
              contractAddress: s.blockchain === 'tron' ? 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t' : '0xdac17f958d2ee523a2206206994597c13d831ec7',
            };
      return { ...base, address: s.address, minedInBlock, transactionId: exampleTx, tokenType, token, direction: 'incoming' };
    }
    default:
      return {
        ...base,
        address: s.blockchain === 'tron' ? 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t' : '0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed',
        minedInBlock,
        parentTransactionId: exampleTx,
        operationId: 'call_0_1',
        amount: String(s.amountHigherThan ?? 0n),
        unit,
      };
  }
}

/** Sends an example callback now (header x-callback-test: true) and reports what the receiver did. */
export async function sendTestCallback(common: Common, caller: Caller, subscriptionId: string) {
  const s = await ownSubscription(common, caller, subscriptionId);
  if (!(await common.access.isDomainVerified(caller.owner.customerId, s.callbackHost))) {
    throw new ApiError('callback_url_not_verified', `The callbackUrl host '${s.callbackHost}' is not a verified callback domain of this customer.`);
  }
  const now = new Date();
  const idempotencyKey = randomBytes(32).toString('hex');
  const body = Buffer.from(callbackBody(s, idempotencyKey, exampleItem(s, now)));
  const headers = { ...prepareHeaders({ secret: s.callbackSecretKey, idempotencyKey }, body, now), 'x-callback-test': 'true' };
  const result = await common.sender.send('POST', s.callbackUrl, store.destinationOf(s.callbackUrl), body, headers, {
    allowNetworks: await allowNetworksOf(common.db, caller.owner.customerId),
  });
  if (result.errorDetail) {
    // The answer has the generic reason; the operator's log has what exactly happened, by requestId.
    common.logger.warn({ requestId: caller.requestId, subscriptionId, errorClass: result.errorClass, detail: result.errorDetail }, 'test callback failed');
  }
  const charge = await common.credits.charge(caller.owner.customerId, BigInt(common.config.costs.getSubscription));
  return {
    value: {
      idempotencyKey,
      httpStatus: result.httpStatus,
      durationMs: Math.round(result.durationMs),
      delivered: result.httpStatus !== null && result.httpStatus >= 200 && result.httpStatus < 300,
      errorClass: result.errorClass,
      errorMessage: result.errorMessage,
      responseBody: result.responseBody,
    },
    ...charge,
  };
}
