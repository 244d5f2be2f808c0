/**
 * One subscription row for the delivery-side benchmarks (delivery, recovery, retention): inserted
 * straight into the store, signed (the worker computes both signatures of every callback, as for most
 * subscriptions), with a random transaction id of its own.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { EventType } from '../src/domain/chains.ts';
import type { Db } from '../src/store/db.ts';
import { insertUnlessTwin } from '../src/store/subscriptions.ts';

export const BENCH_API_VERSION = '2021-03-20';

export async function insertBenchSubscription(db: Db, customerId: string, callbackUrl: string, eventType: EventType = 'TRANSACTION_MINED'): Promise<string> {
  const txid = `0x${randomBytes(32).toString('hex')}`;
  const mined = eventType === 'TRANSACTION_MINED';
  const created = await insertUnlessTwin(db, customerId, {
    id: randomUUID(),
    eventType,
    blockchain: 'ethereum',
    network: 'goerli',
    transactionId: mined ? txid : null,
    address: null,
    target: mined ? txid : null,
    receiveCallbackOn: null,
    amountHigherThan: null,
    blockHeight: null,
    callbackUrl,
    callbackHost: 'localhost',
    callbackSecretKey: `bench-secret-${randomBytes(8).toString('hex')}`,
    allowDuplicates: true,
    duplicateKey: randomBytes(32),
    apiVersion: BENCH_API_VERSION,
  });
  if (!created) throw new Error(`could not create a subscription for ${callbackUrl}`);
  return created.id;
}
