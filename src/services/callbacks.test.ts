/**
 * Test callbacks' example items (pure): the contract's shape for every chain family, with values no chain
 * produces (all-zero ids and block hash in the chain's spelling, zero amounts).
 */
import { describe, expect, it } from 'vitest';
import type { Blockchain, EventType, Network } from '../domain/chains.ts';
import type { Subscription } from '../domain/subscriptions.ts';
import { exampleItem } from './callbacks.ts';

const NOW = new Date('2026-01-02T03:04:05Z');
const ZERO = '0'.repeat(64);

function subscription(blockchain: Blockchain, network: Network, eventType: EventType, target: Partial<Subscription> = {}): Subscription {
  return {
    id: '6f1c3e2a-8d4b-4c5e-9f7a-1b2c3d4e5f60',
    customerId: '1',
    eventType,
    blockchain,
    network,
    transactionId: null,
    address: null,
    target: null,
    receiveCallbackOn: null,
    amountHigherThan: null,
    blockHeight: null,
    callbackUrl: 'https://hooks.example.com/cb',
    callbackHost: 'hooks.example.com',
    callbackSecretKey: null,
    allowDuplicates: false,
    duplicateKey: Buffer.alloc(32),
    isActive: true,
    deactivationReasons: [],
    apiVersion: '2021-03-20',
    createdAt: NOW,
    ...target,
  };
}

const minedInBlock = (hash: string) => ({ height: expect.any(Number), hash, timestamp: 1767323045 });

describe('exampleItem', () => {
  it('TRANSACTION_MINED: a zero transaction id and block hash, not the subscribed transaction', () => {
    const subscribed = 'a'.repeat(64);
    for (const [blockchain, network] of [
      ['bitcoin', 'mainnet'],
      ['litecoin', 'testnet'],
      ['xrp', 'mainnet'],
      ['tron', 'nile'],
    ] as const) {
      const item = exampleItem(subscription(blockchain, network, 'TRANSACTION_MINED', { transactionId: subscribed }), NOW);
      expect(item).toEqual({ blockchain, network, transactionId: ZERO, minedInBlock: minedInBlock(ZERO) });
    }
    const evm = exampleItem(subscription('ethereum', 'mainnet', 'TRANSACTION_MINED', { transactionId: `0x${subscribed}` }), NOW);
    expect(evm).toEqual({ blockchain: 'ethereum', network: 'mainnet', transactionId: `0x${ZERO}`, minedInBlock: minedInBlock(`0x${ZERO}`) });
  });

  it('ADDRESS_TOKENS_TRANSACTION_CONFIRMED on Omni: zero amount, zero ids', () => {
    const address = '1BoatSLRHtKNngkdXEeobR76b53LETtpyT';
    const item = exampleItem(subscription('bitcoin', 'mainnet', 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED', { address }), NOW);
    expect(item).toEqual({
      blockchain: 'bitcoin',
      network: 'mainnet',
      address,
      minedInBlock: minedInBlock(ZERO),
      transactionId: ZERO,
      tokenType: 'OMNI',
      token: { name: expect.any(String), propertyId: expect.any(String), transactionType: expect.any(String), createdByTransactionId: ZERO, amount: '0' },
      direction: 'incoming',
      safety: { verdict: 'ok', flags: [] },
    });
  });

  it('ADDRESS_TOKENS_TRANSACTION_CONFIRMED on Tron: a TRC-20 transfer of zero, ids without 0x', () => {
    const address = 'TLa2f6VPqDgRE67v1736s7bJ8Ray5wYjU7';
    const item = exampleItem(subscription('tron', 'mainnet', 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED', { address }), NOW);
    expect(item).toMatchObject({ address, transactionId: ZERO, minedInBlock: minedInBlock(ZERO), tokenType: 'TRC-20' });
    expect(item.token).toMatchObject({ amount: '0', decimals: expect.any(String), contractAddress: expect.stringMatching(/^T/) });
  });

  it('block events: the flat block item with a zero hash; BLOCK_HEIGHT_REACHED at the subscribed height', () => {
    for (const event of ['BLOCK_MINED', 'BLOCK_REVERTED'] as const) {
      expect(exampleItem(subscription('litecoin', 'testnet', event), NOW)).toEqual({
        blockchain: 'litecoin',
        network: 'testnet',
        height: expect.any(Number),
        hash: ZERO,
        timestamp: 1767323045,
      });
    }
    expect(exampleItem(subscription('ethereum', 'goerli', 'BLOCK_HEIGHT_REACHED', { blockHeight: 667_900 }), NOW)).toEqual({
      blockchain: 'ethereum',
      network: 'goerli',
      height: 667_900,
      hash: `0x${ZERO}`,
      timestamp: 1767323045,
    });
  });

  it('CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER: zero amount whatever the threshold', () => {
    const event = 'CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER';
    const item = exampleItem(subscription('binance-smart-chain', 'testnet', event, { amountHigherThan: 25n }), NOW);
    expect(item).toEqual({
      blockchain: 'binance-smart-chain',
      network: 'testnet',
      address: expect.stringMatching(/^0x[0-9a-f]{40}$/),
      minedInBlock: minedInBlock(`0x${ZERO}`),
      parentTransactionId: `0x${ZERO}`,
      operationId: expect.any(String),
      amount: '0',
      unit: 'BNB',
      safety: { verdict: 'ok', flags: [] },
    });
    expect(exampleItem(subscription('tron', 'nile', event, { amountHigherThan: 1n }), NOW)).toMatchObject({
      parentTransactionId: ZERO,
      amount: '0',
      unit: 'TRX',
    });
  });
});
