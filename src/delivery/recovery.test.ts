import { describe, expect, it } from 'vitest';
import { chunkPace } from './recovery.ts';

describe('chunkPace: recovered callbacks give way to a saturated live delivery', () => {
  it('full speed without a worker, when live delivery is light, or when live callbacks are not waiting', () => {
    expect(chunkPace(undefined, 500, 0.05)).toEqual({ size: 500, spacingMs: 0 });
    expect(chunkPace({ sentPerSecond: 99, lagMs: 5_000 }, 500, 0.05)).toEqual({ size: 500, spacingMs: 0 });
    expect(chunkPace({ sentPerSecond: 6_000, lagMs: 249 }, 500, 0.05)).toEqual({ size: 500, spacingMs: 0 });
  });

  it('saturated: the share of the live rate, two seconds a chunk, due one after the other', () => {
    // 5 % of 6,000/s = 300/s: 600 a chunk, capped at the chunk size; 3.33 ms apart.
    expect(chunkPace({ sentPerSecond: 6_000, lagMs: 250 }, 500, 0.05)).toEqual({ size: 500, spacingMs: 1000 / 300 });
    expect(chunkPace({ sentPerSecond: 1_000, lagMs: 1_000 }, 500, 0.05)).toEqual({ size: 100, spacingMs: 20 });
    // Never slower than 10/s.
    expect(chunkPace({ sentPerSecond: 100, lagMs: 1_000 }, 500, 0.05)).toEqual({ size: 20, spacingMs: 100 });
  });
});
