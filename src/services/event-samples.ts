/**
 * The events catalogue (docs/reference/events/README.md#samples): a sample callback body of every event type
 * (the subscriptions' and the DROPPED ones), built by the code that builds test callbacks (exampleItem),
 * so a sample is what a test callback of that event would be; and sending one to a URL of the customer's,
 * signed as a real callback is and marked as a test (data.isTest, an idempotencyKey starting with test-,
 * x-callback-test). test/event-samples.test.ts checks every sample on every chain against the callback
 * schemas of the OpenAPI document.
 */

import { randomBytes } from 'node:crypto';
import { sha256 } from '@noble/hashes/sha256';
import { createBase58check } from '@scure/base';
import type { SendResult } from '../delivery/sender.ts';
import { prepareHeaders } from '../delivery/worker.ts';
import { callbackBody } from '../domain/callbacks.ts';
import {
  type Blockchain,
  CALLBACK_EVENT_TYPES,
  type CallbackEventType,
  CHAINS,
  DROPPED_EVENTS,
  EVENT_BLOCKCHAINS,
  type EventType,
  type Network,
  SAFETY_EVENTS,
  XPUB_BLOCKCHAINS,
} from '../domain/chains.ts';
import { ApiError, callbackUrlNotVerified, invalidData, notFound, pullOnlySubscription, truncate } from '../domain/errors.ts';
import { isUuid } from '../domain/ids.ts';
import type { SubscribedWalletKey, Subscription } from '../domain/subscriptions.ts';
import { deriveWindow, parseSubscribedKey } from '../domain/wallet-windows.ts';
import { destinationOf } from '../store/callbacks.ts';
import { allowNetworksOf } from '../store/customers.ts';
import { getSubscription } from '../store/subscriptions.ts';
import { exampleItem, TEST_IDEMPOTENCY_PREFIX } from './callbacks.ts';
import type { Caller, Common } from './context.ts';
import { InFlightCap } from './in-flight-cap.ts';

/** A sample belongs to no subscription: its referenceId is the nil UUID. */
export const SAMPLE_REFERENCE_ID = '00000000-0000-0000-0000-000000000000';
/** The idempotencyKey shown in the catalogue (a sent sample gets a random one, as a test callback). */
export const SAMPLE_IDEMPOTENCY_KEY = `${TEST_IDEMPOTENCY_PREFIX}${'0'.repeat(64 - TEST_IDEMPOTENCY_PREFIX.length)}`;

/**
 * The BIP32 test vector 1's master public key (a published test key, nobody's wallet): the wallet-key
 * samples' key, and on the chains that have them, the address events' sample address (its first receive
 * address on that chain, derived as herald derives a subscribed key's).
 */
const SAMPLE_XPUB = 'xpub661MyMwAqRbcFtXgS5sYJABqqG9YLmC4Q1Rdap9gSE8NqtwybGhePY2gZ29ESFjqJoCu1Rupje8YtGqsefD265TMg7usUDFdp6W1EGMcet8';
/** xrp has no wallet keys in herald: the genesis account, a well-known address. */
const XRP_SAMPLE_ADDRESS = 'rHb9CJAWyB4rj91VRWn96DkukG4bwdtyTh';

const base58check = createBase58check(sha256);
/** The same key with the test networks' version bytes (tpub), for the Bitcoin family's testnets. */
const SAMPLE_TPUB = base58check.encode(Uint8Array.from([0x04, 0x35, 0x87, 0xcf, ...base58check.decode(SAMPLE_XPUB).slice(4)]));

function sampleKey(blockchain: Blockchain, network: Network): { key: SubscribedWalletKey; address: string } | undefined {
  if (!XPUB_BLOCKCHAINS.includes(blockchain)) return undefined;
  const text = CHAINS[blockchain].family === 'utxo' && network !== 'mainnet' ? SAMPLE_TPUB : SAMPLE_XPUB;
  const key: SubscribedWalletKey = { field: 'extendedPublicKey', text, derivation: null, gapLimit: 20, regtest: false };
  const parsed = parseSubscribedKey(blockchain, network, key);
  const first = parsed.ok ? deriveWindow(parsed.key, false, 0, 0, false)[0] : undefined;
  return first ? { key, address: first.address } : undefined;
}

/** The event a DROPPED event is sent on (an unconfirmed subscription's), or the event itself. */
export function subscriptionEventOf(event: CallbackEventType): EventType {
  const found = Object.entries(DROPPED_EVENTS).find(([, dropped]) => dropped === event);
  return (found ? found[0] : event) as EventType;
}

/** The blockchains an event type is sent on. */
export function blockchainsOf(event: CallbackEventType): readonly Blockchain[] {
  return EVENT_BLOCKCHAINS[subscriptionEventOf(event)];
}

/** The subscription a sample stands for: the event's, on that chain, with sample targets. */
function sampleSubscription(event: EventType, blockchain: Blockchain, network: Network, now: Date): Subscription {
  const key = sampleKey(blockchain, network);
  const family = CHAINS[blockchain].family;
  const address = blockchain === 'xrp' ? XRP_SAMPLE_ADDRESS : (key?.address ?? null);
  return {
    id: SAMPLE_REFERENCE_ID,
    customerId: '0',
    eventType: event,
    blockchain,
    network,
    transactionId: family === 'evm' ? `0x${'0'.repeat(64)}` : '0'.repeat(64),
    address,
    target: null,
    receiveCallbackOn: 3,
    amountHigherThan: 1n,
    blockHeight: null,
    contractAddress: blockchain === 'tron' ? 'TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t' : '0xdac17f958d2ee523a2206206994597c13d831ec7',
    callbackUrl: null,
    callbackHost: null,
    callbackSecretKey: null,
    allowDuplicates: false,
    duplicateKey: Buffer.alloc(32),
    isActive: true,
    deactivationReasons: [],
    apiVersion: '',
    createdAt: now,
    walletKey: event.startsWith('XPUB_') ? (key?.key ?? null) : null,
  };
}

/** The `data.item` of a sample: a test callback's, and for a DROPPED event the unconfirmed one's without its verdict, replaced. */
export function sampleItem(event: CallbackEventType, blockchain: Blockchain, network: Network, now: Date): Record<string, unknown> {
  const on = subscriptionEventOf(event);
  const item = exampleItem(sampleSubscription(on, blockchain, network, now), now);
  if (on === event) return item;
  const { safety: _verdict, ...announced } = item;
  const zero = CHAINS[blockchain].family === 'evm' ? `0x${'0'.repeat(63)}1` : `${'0'.repeat(63)}1`;
  return { ...announced, reason: 'replaced', replacedByTransactionId: zero };
}

/** The whole body of a sample as herald would POST it (a test callback: data.isTest). */
export function sampleBody(event: CallbackEventType, blockchain: Blockchain, network: Network, now: Date, apiVersion: string) {
  return JSON.parse(
    callbackBody({ id: SAMPLE_REFERENCE_ID, apiVersion, eventType: event }, SAMPLE_IDEMPOTENCY_KEY, sampleItem(event, blockchain, network, now), {
      isTest: true,
    }),
  ) as Record<string, unknown>;
}

/** The chain a sample is shown on: the one asked for when the event is sent there, else the event's first. */
export function sampleChain(event: CallbackEventType, blockchain?: Blockchain, network?: Network): { blockchain: Blockchain; network: Network } {
  const chains = blockchainsOf(event);
  const chosen = blockchain && chains.includes(blockchain) ? blockchain : (chains[0] as Blockchain);
  const networks = CHAINS[chosen].networks;
  return { blockchain: chosen, network: network && networks.includes(network) ? network : (networks[0] as Network) };
}

export interface CatalogueEntry {
  event: CallbackEventType;
  /** The subscription event whose subscriptions receive it (itself, but for the DROPPED events). */
  subscriptionEvent: EventType;
  blockchains: readonly Blockchain[];
  safety: boolean;
  blockchain: Blockchain;
  network: Network;
  sample: Record<string, unknown>;
}

/** Every callback event type with its sample (on `blockchain` where the event is sent there). Free: it reads nothing. */
export function catalogue(now: Date, apiVersion: string, blockchain?: Blockchain, network?: Network): CatalogueEntry[] {
  return CALLBACK_EVENT_TYPES.map((event) => {
    const chain = sampleChain(event, blockchain, network);
    const on = subscriptionEventOf(event);
    return {
      event,
      subscriptionEvent: on,
      blockchains: blockchainsOf(event),
      safety: on === event && SAFETY_EVENTS.has(on),
      ...chain,
      sample: sampleBody(event, chain.blockchain, chain.network, now, apiVersion),
    };
  });
}

/**
 * Samples being sent per customer, per API process: each holds a connection to the customer's URL for up
 * to the delivery timeout, so a burst of them is refused at once (429) rather than queued
 * (docs/reference/api.md#send-a-sample-callback).
 */
export const SAMPLES_IN_FLIGHT_PER_CUSTOMER = 2;
const inFlight = new InFlightCap(SAMPLES_IN_FLIGHT_PER_CUSTOMER);

export interface SendSampleInput {
  /** Send to this subscription's callbackUrl, signed with its secret(s)... */
  referenceId?: string;
  /** ...or to this URL (on a verified callback domain), signed with this secret when one is given. */
  callbackUrl?: string;
  callbackSecretKey?: string;
  blockchain?: Blockchain;
  network?: Network;
}

function destination(url: string): { url: string; host: string } {
  const parsed = URL.canParse(url) ? new URL(url) : undefined;
  if (parsed?.protocol !== 'https:') throw invalidData([{ attribute: 'callbackUrl', message: 'Give an https URL on one of your verified callback domains.' }]);
  return { url, host: parsed.hostname.toLowerCase() };
}

/**
 * Sends the sample of `event` now and reports the receiver's answer, as a test callback does (charged as
 * one, costs.getSubscription; given back when the send throws). Signed as a real callback: the
 * subscription's secret (and the one a rotation replaced, during its overlap), or the secret given.
 */
export async function sendSample(common: Common, caller: Caller, event: CallbackEventType, input: SendSampleInput) {
  const customerId = caller.owner.customerId;
  if ((input.referenceId === undefined) === (input.callbackUrl === undefined)) {
    throw invalidData([{ attribute: 'callbackUrl', message: 'Give either referenceId (a subscription of yours) or callbackUrl, not both.' }]);
  }
  if (input.referenceId !== undefined && input.callbackSecretKey !== undefined) {
    throw invalidData([{ attribute: 'callbackSecretKey', message: "A sample sent to a subscription is signed with the subscription's own secret." }]);
  }
  const now = new Date();
  let to: { url: string; host: string };
  let secret: string | null = input.callbackSecretKey ?? null;
  let previousSecret: string | null = null;
  let target = { referenceId: SAMPLE_REFERENCE_ID, apiVersion: caller.apiVersion };
  if (input.referenceId !== undefined) {
    const s = isUuid(input.referenceId) ? await getSubscription(common.db, customerId, input.referenceId) : undefined;
    if (!s) throw notFound('subscription', input.referenceId);
    if (s.callbackUrl === null || s.callbackHost === null) throw pullOnlySubscription(s.id, 'a sample callback');
    to = { url: s.callbackUrl, host: s.callbackHost };
    secret = s.callbackSecretKey;
    previousSecret = s.previousSecretUntil && s.previousSecretUntil > now ? (s.previousCallbackSecretKey ?? null) : null;
    target = { referenceId: s.id, apiVersion: s.apiVersion };
  } else {
    to = destination(input.callbackUrl as string);
  }
  if (!(await common.access.isDomainVerified(customerId, to.host))) {
    throw callbackUrlNotVerified(
      `The callbackUrl host '${truncate(to.host)}' is not a verified callback domain of this customer. Register and verify it (POST /blockchain-events/callback-domains) before sending a sample to it.`,
    );
  }
  const release = inFlight.tryEnter(customerId);
  if (!release) {
    throw new ApiError(
      'request_limit_reached',
      `This customer has ${SAMPLES_IN_FLIGHT_PER_CUSTOMER} sample callbacks being sent already, the most it may have at once. Send this one when one of them has been answered.`,
    );
  }
  try {
    const allowNetworks = await allowNetworksOf(common.db, customerId);
    const charge = await common.credits.charge(customerId, BigInt(common.config.costs.getSubscription), caller.endpoint);
    const chain = sampleChain(event, input.blockchain, input.network);
    const idempotencyKey = TEST_IDEMPOTENCY_PREFIX + randomBytes(32).toString('hex').slice(TEST_IDEMPOTENCY_PREFIX.length);
    const body = Buffer.from(
      callbackBody(
        { id: target.referenceId, apiVersion: target.apiVersion, eventType: event },
        idempotencyKey,
        sampleItem(event, chain.blockchain, chain.network, now),
        { isTest: true },
      ),
    );
    const headers = { ...prepareHeaders({ secret, previousSecret, idempotencyKey, sequence: 0 }, body, now), 'x-callback-test': 'true' };
    let result: SendResult;
    try {
      result = await common.sender.send('POST', to.url, destinationOf(to.url), body, headers, { allowNetworks, timeoutCoversWait: true });
    } catch (error) {
      await common.credits
        .refund(customerId, charge, caller.endpoint)
        .catch((refundError) =>
          common.logger.error(
            { err: refundError, customerId, credits: String(charge.consumed) },
            'could not give back the credits of a failed sample callback',
          ),
        );
      throw error;
    }
    if (result.errorDetail) {
      common.logger.warn({ requestId: caller.requestId, event, errorClass: result.errorClass, detail: result.errorDetail }, 'sample callback failed');
    }
    return {
      value: {
        event,
        blockchain: chain.blockchain,
        network: chain.network,
        callbackUrl: to.url,
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
  } finally {
    release();
  }
}
