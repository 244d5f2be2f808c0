import { describe, expect, it } from 'vitest';
import { normalizedBlock as block, indexableSubscription } from '../../test/support/matching-fixtures.ts';
import type { NormalizedBlock, TokenTransfer } from '../chains/types.ts';
import type { IndexableSubscription } from '../domain/subscriptions.ts';
import { callbackItem, type IdempotencyParts, idempotencyKey, matchIdempotencyKey } from './identity.ts';
import { SubscriptionIndex } from './index.ts';
import { type Match, matchBlock, matchRevertedBlock } from './match.ts';

const SUB_ID = '5f0c8a52-3b7e-4c1d-9a2b-0e6f4d3c2b1a';
const A = `0x${'a'.repeat(40)}`;
const B = `0x${'b'.repeat(40)}`;
const TX = `0x${'1'.repeat(64)}`;
const TOKEN = `0x${'7'.repeat(40)}`;
/** The hash of normalizedBlock's block 100. */
const HASH_1 = `0x${'b1'.repeat(32)}`;
const HASH_2 = `0x${'b2'.repeat(32)}`;

const PARTS: IdempotencyParts = {
  subscriptionId: SUB_ID,
  blockchain: 'ethereum',
  network: 'mainnet',
  blockHash: HASH_1,
  transactionId: TX,
  position: 'log:4',
  direction: 'incoming',
};

/** The one match of a single subscription on `fields`' block. */
function matchOne(sub: Partial<IndexableSubscription>, fields: Partial<NormalizedBlock>, chain: 'ethereum' | 'bitcoin' | 'tron' = 'ethereum'): Match {
  const network = chain === 'tron' ? 'nile' : 'mainnet';
  const index = new SubscriptionIndex(chain, network);
  index.add(indexableSubscription({ id: SUB_ID, customerId: '1', blockchain: chain, network, ...sub }));
  const matches = matchBlock(index, block(fields), chain);
  expect(matches).toHaveLength(1);
  return matches[0] as Match;
}

const tokenMatch = (t: Partial<TokenTransfer>, chain: 'ethereum' | 'bitcoin' = 'ethereum') =>
  matchOne(
    { eventType: 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED', target: B },
    { tokenTransfers: [{ transactionId: TX, logIndex: 4, tokenType: 'ERC-20', contract: TOKEN, from: A, to: B, ...t }] },
    chain,
  );

const MINED_IN = { height: 100, hash: HASH_1, timestamp: 1_700_000_000 };

describe('idempotencyKey', () => {
  it('is 64 lower-case hex, the same for the same event in the same block', () => {
    const key = idempotencyKey(PARTS);
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    expect(idempotencyKey({ ...PARTS })).toBe(key);
    // Pinned (and recomputed independently: sha256 of '<byte length>:<value>' per part, in order):
    // a change of encoding would re-key every callback in flight.
    expect(key).toBe('1dbae1ddf19deaa89be10ac5f0fdc99bc09d27d78802bc297cbcd7fdf4a3c664');
  });

  it('changes with the block hash and with every other part', () => {
    const key = idempotencyKey(PARTS);
    const variants: IdempotencyParts[] = [
      { ...PARTS, blockHash: HASH_2 },
      { ...PARTS, subscriptionId: '5f0c8a52-3b7e-4c1d-9a2b-0e6f4d3c2b1b' },
      { ...PARTS, blockchain: 'ethereum-classic' },
      { ...PARTS, network: 'goerli' },
      { ...PARTS, transactionId: `0x${'2'.repeat(64)}` },
      { ...PARTS, position: 'log:5' },
      { ...PARTS, position: null },
      { ...PARTS, direction: 'outgoing' },
      { ...PARTS, direction: null },
    ];
    const keys = new Set([key, ...variants.map(idempotencyKey)]);
    expect(keys.size).toBe(variants.length + 1);
  });

  it('cannot be fooled by moving characters from one part to the next', () => {
    const a = idempotencyKey({ ...PARTS, transactionId: 'ab', position: 'c' });
    const b = idempotencyKey({ ...PARTS, transactionId: 'a', position: 'bc' });
    const c = idempotencyKey({ ...PARTS, position: '-' });
    expect(new Set([a, b, c, idempotencyKey({ ...PARTS, position: null })]).size).toBe(4);
  });

  it('is derived from a match, its chain and its block', () => {
    const match = tokenMatch({ amount: 1n });
    const chain = { blockchain: 'ethereum', network: 'mainnet' } as const;
    expect(matchIdempotencyKey(match, chain, { hash: HASH_1 })).toBe(idempotencyKey(PARTS));
    expect(matchIdempotencyKey(match, chain, { hash: HASH_2 })).toBe(idempotencyKey({ ...PARTS, blockHash: HASH_2 }));
  });
});

describe('callbackItem', () => {
  const eth = { blockchain: 'ethereum', network: 'mainnet' } as const;

  it('builds TRANSACTION_MINED', () => {
    const match = matchOne({ target: TX }, { transactionIds: [TX] });
    expect(callbackItem(match, block({}), eth)).toEqual({ blockchain: 'ethereum', network: 'mainnet', transactionId: TX, minedInBlock: MINED_IN });
  });

  it('builds a fungible token transfer, amount scaled by the decimals', () => {
    const match = tokenMatch({ amount: 1_500_000n });
    expect(callbackItem(match, block({}), eth, { name: 'Tether USD', symbol: 'USDT', decimals: 6 })).toEqual({
      blockchain: 'ethereum',
      network: 'mainnet',
      address: B,
      minedInBlock: MINED_IN,
      transactionId: TX,
      tokenType: 'ERC-20',
      token: { name: 'Tether USD', symbol: 'USDT', decimals: '6', amount: '1.5', contractAddress: TOKEN },
      direction: 'incoming',
    });
  });

  it('builds an NFT transfer with its token id and no amount', () => {
    const match = tokenMatch({ tokenType: 'ERC-721', tokenId: '123456789012345678901234567890' });
    const item = callbackItem(match, block({}), eth, { name: 'Kitties', symbol: 'CK', decimals: 0 });
    expect(item.tokenType).toBe('ERC-721');
    expect(item.token).toEqual({ name: 'Kitties', symbol: 'CK', tokenId: '123456789012345678901234567890', contractAddress: TOKEN });
  });

  it('builds an Omni transfer in the Omni shape', () => {
    const btcB = '1BoatSLRHtKNngkdXEeobR76b53LETtpyT';
    const match = matchOne(
      { eventType: 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED', target: btcB, blockchain: 'bitcoin' },
      { tokenTransfers: [{ transactionId: 'ff'.repeat(32), logIndex: 0, tokenType: 'OMNI', contract: '31', from: 'x', to: btcB, amount: 2_500_000_000n }] },
      'bitcoin',
    );
    const item = callbackItem(
      match,
      block({}),
      { blockchain: 'bitcoin', network: 'mainnet' },
      {
        name: 'TetherUS',
        symbol: 'USDT',
        decimals: 8,
        createdByTransactionId: '5ed3694e8a4fa8d3ec5c75eb6789492c69e65511522b220e94ab51da2b6dd53f',
      },
    );
    expect(item).toMatchObject({ blockchain: 'bitcoin', tokenType: 'OMNI', direction: 'incoming', address: btcB });
    expect(item.token).toEqual({
      name: 'TetherUS',
      propertyId: '31',
      transactionType: 'Simple Send',
      createdByTransactionId: '5ed3694e8a4fa8d3ec5c75eb6789492c69e65511522b220e94ab51da2b6dd53f',
      amount: '25',
    });
  });

  it('says what it knows of a token without metadata: base units, empty name and symbol', () => {
    const item = callbackItem(tokenMatch({ amount: 1_500_000n }), block({}), eth);
    expect(item.token).toEqual({ name: '', symbol: '', decimals: '0', amount: '1500000', contractAddress: TOKEN });
  });

  it('builds an internal transfer with the recipient, amount in the native unit and the unit', () => {
    const match = matchOne(
      { eventType: 'CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER', amountHigherThan: 1n, blockchain: 'tron', network: 'nile' },
      { internalTransfers: [{ parentTransactionId: TX, operationId: 'call_0_2', from: A, to: B, amount: 1_250_000n }] },
      'tron',
    );
    expect(callbackItem(match, block({}), { blockchain: 'tron', network: 'nile' })).toEqual({
      blockchain: 'tron',
      network: 'nile',
      address: B,
      minedInBlock: MINED_IN,
      parentTransactionId: TX,
      operationId: 'call_0_2',
      amount: '1.25',
      unit: 'TRX',
    });
  });

  it('builds ADDRESS_INTERNAL_TRANSACTION_CONFIRMED: the subscribed spelling, the native unit and the direction', () => {
    const match = matchOne(
      { eventType: 'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED', target: A },
      { internalTransfers: [{ parentTransactionId: TX, operationId: 'call_0_1', from: B, to: A, amount: 1_500_000_000_000_000_000n }] },
    );
    const spelled = A.toUpperCase().replace('0X', '0x');
    expect(callbackItem(match, block({}), eth, undefined, spelled)).toEqual({
      blockchain: 'ethereum',
      network: 'mainnet',
      address: spelled,
      minedInBlock: MINED_IN,
      parentTransactionId: TX,
      operationId: 'call_0_1',
      amount: '1.5',
      unit: 'ETH',
      direction: 'incoming',
    });
  });

  it('builds CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER: the transfer and the token object, no address or direction', () => {
    const match = matchOne(
      { eventType: 'CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER', target: TOKEN, amountHigherThan: 1n },
      { tokenTransfers: [{ transactionId: TX, logIndex: 3, tokenType: 'ERC-20', contract: TOKEN, from: A, to: B, amount: 1_500_000n }] },
    );
    expect(callbackItem(match, block({}), eth, { name: 'Tether USD', symbol: 'USDT', decimals: 6 })).toEqual({
      blockchain: 'ethereum',
      network: 'mainnet',
      transactionId: TX,
      minedInBlock: MINED_IN,
      tokenType: 'ERC-20',
      token: { name: 'Tether USD', symbol: 'USDT', decimals: '6', amount: '1.5', contractAddress: TOKEN },
    });
  });
});

describe('block events', () => {
  const eth = { blockchain: 'ethereum', network: 'mainnet' } as const;
  const FLAT = { blockchain: 'ethereum', network: 'mainnet', height: 100, hash: HASH_1, timestamp: 1_700_000_000 };

  it('BLOCK_MINED and BLOCK_HEIGHT_REACHED: a flat item of the block; the key changes with the block hash (a replacement block gets a new one)', () => {
    for (const match of [matchOne({ eventType: 'BLOCK_MINED' }, {}), matchOne({ eventType: 'BLOCK_HEIGHT_REACHED', blockHeight: 100 }, {})]) {
      expect(callbackItem(match, block({}), eth)).toEqual(FLAT);
      const key = matchIdempotencyKey(match, eth, { hash: HASH_1 });
      expect(key).toBe(idempotencyKey({ ...PARTS, transactionId: null, position: null, direction: null }));
      expect(key).toMatch(/^[0-9a-f]{64}$/);
      expect(matchIdempotencyKey(match, eth, { hash: HASH_2 })).not.toBe(key);
    }
  });

  it('BLOCK_REVERTED: the flat item of the dropped block', () => {
    const index = new SubscriptionIndex('ethereum', 'mainnet');
    index.add(indexableSubscription({ id: SUB_ID, customerId: '1', eventType: 'BLOCK_REVERTED' }));
    const [match] = matchRevertedBlock(index);
    expect(callbackItem(match as Match, { height: 100, hash: HASH_1, timestamp: 1_700_000_000 }, eth)).toEqual(FLAT);
  });
});
