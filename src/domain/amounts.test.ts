import { describe, expect, it } from 'vitest';
import { formatUnits } from './amounts.ts';

describe('formatUnits', () => {
  it.each([
    [0n, 18, '0'],
    [1n, 18, '0.000000000000000001'],
    [1500000000000000000n, 18, '1.5'],
    [100000000n, 8, '1'],
    [123456789n, 8, '1.23456789'],
    [-250n, 2, '-2.5'],
    [7n, 0, '7'],
    [2n ** 255n, 18, '57896044618658097711785492504343953926634992332820282019728.792003956564819968'],
  ])('%s with %i decimals is %s', (value, decimals, expected) => {
    expect(formatUnits(value, decimals)).toBe(expected);
  });
});
