import { describe, expect, it } from 'vitest';
import { compareBaseUnits, finalityRefusal, normalizedTiers, supportsFinality, tierConfirmations, tierProblems } from './confirmations.ts';

const TIERS = [{ upTo: '1', confirmations: 1 }, { upTo: '10', confirmations: 3 }, { confirmations: 6 }];

describe('confirmation tiers', () => {
  it('accepts the documented example and stores the last tier without upTo', () => {
    expect(tierProblems(TIERS)).toEqual([]);
    expect(normalizedTiers([{ upTo: '1.50', confirmations: 1 }, { confirmations: 2 }])).toEqual([
      { upTo: '1.5', confirmations: 1 },
      { upTo: null, confirmations: 2 },
    ]);
  });

  it('refuses tiers out of order, an upTo on the last tier, a missing upTo before it, bad amounts and confirmations out of range', () => {
    const attributes = (tiers: Parameters<typeof tierProblems>[0]) => tierProblems(tiers).map((p) => p.attribute);
    expect(attributes([{ upTo: '10', confirmations: 1 }, { upTo: '10.0', confirmations: 2 }, { confirmations: 3 }])).toEqual(['confirmationTiers[1].upTo']);
    expect(
      attributes([
        { upTo: '1', confirmations: 1 },
        { upTo: '5', confirmations: 2 },
      ]),
    ).toEqual(['confirmationTiers[1].upTo']);
    expect(attributes([{ confirmations: 1 }, { confirmations: 2 }])).toEqual(['confirmationTiers[0].upTo']);
    expect(attributes([{ upTo: '-1', confirmations: 1 }, { confirmations: 2 }])).toEqual(['confirmationTiers[0].upTo']);
    expect(attributes([{ upTo: '1e3', confirmations: 1 }, { confirmations: 2 }])).toEqual(['confirmationTiers[0].upTo']);
    expect(attributes([{ upTo: '1', confirmations: 0 }, { confirmations: 101 }])).toEqual([
      'confirmationTiers[0].confirmations',
      'confirmationTiers[1].confirmations',
    ]);
    expect(attributes([])).toEqual(['confirmationTiers']);
    expect(tierProblems([{ upTo: '2', confirmations: 1 }, { upTo: '1', confirmations: 2 }, { confirmations: 3 }])[0]?.message).toMatch(/ascending/);
  });

  it('gives the confirmations of the first tier whose upTo is at or above the amount, exactly in base units', () => {
    const tiers = normalizedTiers(TIERS);
    expect(tierConfirmations(tiers, 100_000_000n, 8)).toBe(1); // 1 LTC: upTo is inclusive
    expect(tierConfirmations(tiers, 100_000_001n, 8)).toBe(3);
    expect(tierConfirmations(tiers, 1_000_000_000n, 8)).toBe(3);
    expect(tierConfirmations(tiers, 1_000_000_001n, 8)).toBe(6);
    expect(tierConfirmations(tiers, 10n ** 30n, 18)).toBe(6);
    // A token of 0 decimals against a fractional upTo.
    expect(tierConfirmations(normalizedTiers([{ upTo: '0.5', confirmations: 1 }, { confirmations: 2 }]), 1n, 0)).toBe(2);
    expect(compareBaseUnits(5n, 1, '0.50')).toBe(0);
    expect(compareBaseUnits(49n, 2, '0.5')).toBe(-1);
  });
});

describe('finality', () => {
  it('is read where the chain has a signal and refused elsewhere with the chain named', () => {
    expect(['ethereum', 'binance-smart-chain', 'tron', 'xrp', 'dash'].every((c) => supportsFinality(c as never))).toBe(true);
    expect(supportsFinality('litecoin')).toBe(false);
    expect(finalityRefusal('litecoin')).toMatch(/not available on litecoin/);
  });
});
