import { describe, expect, it } from 'vitest';
import { claimAgainAtOnce, claimRoom, worthAnotherPass } from './claiming.ts';

describe('claiming decisions', () => {
  const limits = { batchSize: 100, maxInFlight: 256 };

  it('claims up to a batch, never past maxInFlight, and not at all with less than half a claim of room', () => {
    expect(claimRoom(limits, 0)).toEqual({ room: 100, roomLimited: false });
    expect(claimRoom(limits, 200)).toEqual({ room: 56, roomLimited: false });
    expect(claimRoom(limits, 207)).toEqual({ room: 49, roomLimited: true });
    expect(claimRoom(limits, 256)).toEqual({ room: 0, roomLimited: true });
    // A batch larger than the in-flight budget: half the budget is the bar.
    expect(claimRoom({ batchSize: 100, maxInFlight: 10 }, 5)).toEqual({ room: 5, roomLimited: false });
    expect(claimRoom({ batchSize: 100, maxInFlight: 10 }, 6)).toEqual({ room: 4, roomLimited: true });
  });

  it('claims again at once after a full claim or a filled share, sleeps otherwise', () => {
    const claimed = (n: number, filled = false) => Array.from({ length: n }, (_, i) => ({ shareFilled: filled && i === 0 }));
    expect(claimAgainAtOnce(3, claimed(3))).toBe(true);
    expect(claimAgainAtOnce(3, claimed(2))).toBe(false);
    expect(claimAgainAtOnce(3, claimed(1, true))).toBe(true);
    expect(claimAgainAtOnce(0, claimed(0))).toBe(false); // no room: the finished callbacks wake it
    // A destination that took its share and is saturated now: nothing more of it would be claimed.
    const of = (destination: string, shareFilled: boolean) => ({ destination, shareFilled });
    expect(claimAgainAtOnce(10, [of('https://a:443', true), of('https://b:443', false)], () => ['https://a:443'])).toBe(false);
    expect(claimAgainAtOnce(10, [of('https://a:443', true), of('https://b:443', true)], () => ['https://a:443'])).toBe(true);
    expect(claimAgainAtOnce(2, [of('https://a:443', true), of('https://b:443', false)], () => ['https://a:443'])).toBe(true); // full
    // Full, and it reached every destination open to it, each saturated now: another claim would find nothing.
    expect(claimAgainAtOnce(2, [of('https://a:443', true), of('https://a:443', true)], () => ['https://a:443'], 1)).toBe(false);
    // ... but one it did not reach, or one not saturated, may give more.
    expect(claimAgainAtOnce(2, [of('https://a:443', true), of('https://a:443', true)], () => ['https://a:443'], 2)).toBe(true);
    expect(claimAgainAtOnce(2, [of('https://a:443', true), of('https://b:443', true)], () => ['https://a:443'], 2)).toBe(true);
  });

  it('passes again for a finished callback only when it frees room or a destination the claim skipped', () => {
    let asked = 0;
    const saturated = (list: string[]) => () => {
      asked++;
      return list;
    };
    const skipped = new Set(['https://a:443']);
    expect(worthAnotherPass({ roomLimited: true, skipped }, 'https://b:443', saturated([]))).toBe(true);
    expect(worthAnotherPass({ roomLimited: false, skipped }, 'https://b:443', saturated([]))).toBe(false);
    expect(asked).toBe(0); // the sender is asked only about a skipped destination
    expect(worthAnotherPass({ roomLimited: false, skipped }, 'https://a:443', saturated(['https://a:443']))).toBe(false);
    expect(worthAnotherPass({ roomLimited: false, skipped }, 'https://a:443', saturated([]))).toBe(true);
    expect(asked).toBe(2);
  });
});
