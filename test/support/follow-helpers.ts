/**
 * Helpers of the end-to-end chain-following tests: wait for the follower (GET /blockchain-events/status),
 * subscribe, read what the receiver got for a subscription, check a callback's signature.
 *
 * The app, customer and receiver are started in a beforeAll, after the helpers are made: `context` is read
 * at each call.
 */
import { createHmac } from 'node:crypto';
import { expect } from 'vitest';
import type { TestApp, TestCustomer } from '../harness.ts';
import type { ReceivedRequest, Receiver } from './receiver.ts';
import { until } from './wait.ts';

export interface FollowContext {
  t: TestApp;
  customer: TestCustomer;
  receiver: Receiver;
  blockchain: string;
  network: string;
}

export type Callback = ReceivedRequest & { json: { idempotencyKey: string; referenceId: string; data: { item: Record<string, unknown> } } };

/** A received callback's x-callback-sequence, as a number (docs/concepts/callbacks-and-retries.md#callback-order-x-callback-sequence). */
export const sequenceOf = (r: ReceivedRequest): number => Number(r.headers['x-callback-sequence']);

/**
 * The callbacks in the order herald produced them, x-callback-sequence's: delivery is concurrent and
 * promises no arrival order (two blocks' callbacks on two connections can arrive either way). Each must
 * carry a sequence number.
 */
export function inSequenceOrder<T extends ReceivedRequest>(received: readonly T[]): T[] {
  expect(received.every((r) => Number.isSafeInteger(sequenceOf(r)))).toBe(true);
  return [...received].sort((x, y) => sequenceOf(x) - sequenceOf(y));
}

export function followHelpers(context: () => FollowContext, secret: string) {
  const chainPath = () => `/blockchain-events/${context().blockchain}/${context().network}`;

  /** Waits (up to `timeoutMs`) until the service has processed block `height`; gives the chain's status item. */
  async function processed(height: number, timeoutMs?: number) {
    const { t, customer, blockchain, network } = context();
    let last = '';
    try {
      return await until(
        `the follower to process block ${height}`,
        async () => {
          const res = await t.request('GET', '/blockchain-events/status', { key: customer.key });
          last = res.text;
          const item = res.body?.data?.items?.find((i: { blockchain: string; network: string }) => i.blockchain === blockchain && i.network === network);
          return item?.processedHeight >= height ? item : undefined;
        },
        timeoutMs,
      );
    } catch (error) {
      throw new Error(`${(error as Error).message}; last status: ${last}`);
    }
  }

  /** Subscribes to `event` with `item`, callbacks to /hooks/`hook`; gives the created subscription. */
  async function subscribe(event: string, item: Record<string, unknown>, hook = event): Promise<{ referenceId: string; item: Record<string, unknown> }> {
    const { t, customer, receiver } = context();
    const res = await t.request('POST', `${chainPath()}/subscriptions/${event}`, {
      key: customer.key,
      body: { data: { item: { callbackUrl: `${receiver.url}/hooks/${hook}`, callbackSecretKey: secret, ...item } } },
    });
    expect(res.status, res.text).toBeLessThan(300);
    return { referenceId: res.body.data.item.referenceId as string, item: res.body.data.item };
  }

  /** A TRANSACTION_MINED subscription; gives its referenceId. */
  async function subscribeMined(transactionId: string, hook: string): Promise<string> {
    const { t, customer, receiver } = context();
    const res = await t.request('POST', `${chainPath()}/subscriptions/transaction-mined`, {
      key: customer.key,
      body: { data: { item: { transactionId, callbackUrl: `${receiver.url}/hooks/${hook}`, callbackSecretKey: secret } } },
    });
    expect(res.status, res.text).toBe(200);
    return res.body.data.item.referenceId as string;
  }

  /**
   * Waits until the follower's matching indexes hold every subscription created so far. Subscription changes
   * reach the follower as LISTEN/NOTIFY announcements, asynchronously: `ingest.settled()` alone can return
   * before one arrives (seen on a loaded machine), and a block matched meanwhile misses the subscription. A
   * reload reads them all from the database, as the service does when its listener reconnects.
   */
  async function indexed(): Promise<void> {
    const { t } = context();
    await t.app.ingest?.reload();
    await t.app.ingest?.settled();
  }

  /**
   * Each received request with its body parsed once. Tests poll callbacksOf for hundreds of subscriptions
   * every 20 ms; parsing every body on every call starved the in-process service of its event loop (a
   * follower applying one block every two seconds).
   */
  const parsed = new WeakMap<ReceivedRequest, Callback>();
  const withJson = (r: ReceivedRequest): Callback => {
    let callback = parsed.get(r);
    if (!callback) {
      callback = { ...r, json: JSON.parse(r.rawBody.toString('utf8')) };
      parsed.set(r, callback);
    }
    return callback;
  };

  /** The callbacks received so far for the subscription `referenceId`, bodies parsed. */
  function callbacksOf(referenceId: string): Callback[] {
    return context()
      .receiver.received.map(withJson)
      .filter((r) => r.json.referenceId === referenceId);
  }

  /** The callback's x-signature is the HMAC-SHA256 of its raw body with the subscription's secret. */
  function expectSigned(r: ReceivedRequest | undefined): void {
    expect(r?.headers['x-signature']).toBe(
      createHmac('sha256', secret)
        .update(r?.rawBody ?? '')
        .digest('hex'),
    );
  }

  return { processed, subscribe, subscribeMined, indexed, callbacksOf, expectSigned };
}
