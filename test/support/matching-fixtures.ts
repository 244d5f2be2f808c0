/**
 * What the matcher's unit tests (src/matching/*.test.ts) build their cases from: a normalised block with
 * nothing in it and a subscription as the matcher's index holds it, each filled or overridden by the test.
 */
import { randomUUID } from 'node:crypto';
import type { NormalizedBlock } from '../../src/chains/types.ts';
import type { IndexableSubscription } from '../../src/domain/subscriptions.ts';

/** Block 100 of an Ethereum-style chain (hash 0xb1b1…, parent 0xb0b0…), empty but for `fields`. */
export function normalizedBlock(fields: Partial<NormalizedBlock> = {}): NormalizedBlock {
  return {
    height: 100,
    hash: `0x${'b1'.repeat(32)}`,
    parentHash: `0x${'b0'.repeat(32)}`,
    timestamp: 1_700_000_000,
    transactionIds: [],
    tokenTransfers: [],
    internalTransfers: [],
    coinMovements: [],
    ...fields,
  };
}

/** An active TRANSACTION_MINED subscription of customer 7 on Ethereum mainnet, no target yet, a new id; `fields` override. */
export function indexableSubscription(fields: Partial<IndexableSubscription> = {}): IndexableSubscription {
  return {
    id: randomUUID(),
    customerId: '7',
    eventType: 'TRANSACTION_MINED',
    blockchain: 'ethereum',
    network: 'mainnet',
    target: null,
    receiveCallbackOn: null,
    amountHigherThan: null,
    isActive: true,
    ...fields,
  };
}
