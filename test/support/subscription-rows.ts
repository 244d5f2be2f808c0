/**
 * A subscription row for tests that insert one by SQL (store/subscriptions.ts insertUnlessTwin) instead of
 * through the API: an Ethereum mainnet subscription with a verified sample callback URL, each field overridable.
 */
import { randomUUID } from 'node:crypto';
import type { NewSubscription } from '../../src/domain/subscriptions.ts';
import { SAMPLE } from '../harness.ts';

export function ethereumSubscription(fields: Pick<NewSubscription, 'eventType' | 'target'> & Partial<NewSubscription>): NewSubscription {
  return {
    id: randomUUID(),
    blockchain: 'ethereum',
    network: 'mainnet',
    transactionId: null,
    address: null,
    receiveCallbackOn: null,
    amountHigherThan: null,
    blockHeight: null,
    callbackUrl: SAMPLE.callbackUrl,
    callbackHost: 'hooks.example.com',
    callbackSecretKey: null,
    allowDuplicates: true,
    duplicateKey: Buffer.from(randomUUID()),
    apiVersion: '2021-03-20',
    ...fields,
  };
}
