import { describe, expect, it } from 'vitest';
import { MAX_SHARE, MIN_SHARE, PROBE_EVERY_MS, RecoveryPace, START_SHARE } from './recovery-pace.ts';

describe('RecoveryPace: the share of a saturated live rate a recovery takes, adapted to what it costs', () => {
  it('probes first, then grows while the live rate holds two chunks in a row, up to the ceiling', () => {
    const pace = new RecoveryPace();
    expect(pace.needsProbe()).toBe(true);
    expect(pace.share).toBe(START_SHARE);
    pace.probed(2_000);
    expect(pace.needsProbe()).toBe(false);
    pace.observed(1_990, 2_000); // within 2 %: costs nothing measurable ...
    expect(pace.share).toBe(START_SHARE);
    pace.observed(1_995, 2_000); // ... twice in a row
    expect(pace.share).toBeCloseTo(START_SHARE * 1.25);
    pace.observed(1_990, 2_000);
    pace.observed(1_940, 2_000); // 3 %: not held, not dropped: the count starts again
    pace.observed(1_990, 2_000);
    expect(pace.share).toBeCloseTo(START_SHARE * 1.25);
    for (let i = 0; i < 40; i++) pace.observed(2_050, 100);
    expect(pace.share).toBe(MAX_SHARE);
  });

  it('keeps the share while the drop is small, halves it beyond 4 %, never below the floor', () => {
    const pace = new RecoveryPace(0.4);
    pace.probed(1_000);
    pace.observed(970, 2_000); // 3 %: between the thresholds
    expect(pace.share).toBe(0.4);
    pace.observed(950, 2_000); // 5 %: too much
    expect(pace.share).toBeCloseTo(0.2);
    for (let i = 0; i < 20; i++) pace.observed(500, 100);
    expect(pace.share).toBe(MIN_SHARE);
    expect(MIN_SHARE).toBeLessThan(START_SHARE);
  });

  it('probes again after a while of recovering: the machine load moves the reference, not the share', () => {
    const pace = new RecoveryPace();
    pace.probed(3_000);
    pace.observed(3_000, PROBE_EVERY_MS - 1);
    expect(pace.needsProbe()).toBe(false);
    pace.observed(3_000, 1);
    expect(pace.needsProbe()).toBe(true);
    pace.probed(1_500); // the machine got busier: the same live rate now passes as held
    const share = pace.share;
    pace.observed(1_480, 2_000);
    pace.observed(1_490, 2_000);
    expect(pace.share).toBeGreaterThan(share);
    expect(pace.reference).toBe(1_500);
  });

  it('a probe that saw no live callback leaves the share alone', () => {
    const pace = new RecoveryPace();
    pace.probed(0);
    pace.observed(0, 2_000);
    expect(pace.share).toBe(START_SHARE);
  });
});
