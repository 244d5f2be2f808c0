import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY_POLICY, nextRetryDelayMs, parseRetryAfter, type RetryPolicy } from './policy.ts';

const middle = () => 0.5; // 2 * 0.5 - 1 = 0: no jitter
const lowest = () => 0;
const highest = () => 1 - Number.EPSILON / 2; // the largest double below 1

describe('nextRetryDelayMs', () => {
  it('follows the contract schedule: 9 retries, then none (10 attempts in all)', () => {
    const delays: (number | null)[] = [];
    for (let attemptsMade = 1; attemptsMade <= 11; attemptsMade++) {
      delays.push(nextRetryDelayMs(attemptsMade, DEFAULT_RETRY_POLICY, { random: middle }));
    }
    expect(delays).toEqual([30_000, 120_000, 600_000, 1_800_000, 3_600_000, 7_200_000, 14_400_000, 28_800_000, 43_200_000, null, null]);
    // "about 28 h in all"
    const totalHours = delays.reduce<number>((sum, d) => sum + (d ?? 0), 0) / 3_600_000;
    expect(totalHours).toBeCloseTo(27.7, 1);
  });

  it.each(DEFAULT_RETRY_POLICY.scheduleSeconds.map((seconds, i) => [i + 1, seconds]))(
    'attempt %i: jitter stays within +-20 %% of %i s',
    (attemptsMade, seconds) => {
      const low = nextRetryDelayMs(attemptsMade, DEFAULT_RETRY_POLICY, { random: lowest });
      const high = nextRetryDelayMs(attemptsMade, DEFAULT_RETRY_POLICY, { random: highest });
      expect(low).toBe(seconds * 800);
      expect(high).toBe(seconds * 1200);
    },
  );

  it('spreads delays with Math.random when no random is given', () => {
    for (let i = 0; i < 200; i++) {
      const delay = nextRetryDelayMs(1, DEFAULT_RETRY_POLICY) ?? Number.NaN;
      expect(delay).toBeGreaterThanOrEqual(24_000);
      expect(delay).toBeLessThanOrEqual(36_000);
      expect(Number.isInteger(delay)).toBe(true);
    }
  });

  it('honours Retry-After instead of the schedule, without jitter', () => {
    expect(nextRetryDelayMs(1, DEFAULT_RETRY_POLICY, { retryAfterSeconds: 300, random: lowest })).toBe(300_000);
    expect(nextRetryDelayMs(5, DEFAULT_RETRY_POLICY, { retryAfterSeconds: 10, random: highest })).toBe(10_000);
  });

  it('caps Retry-After at 12 h and never goes below 1 s', () => {
    expect(nextRetryDelayMs(1, DEFAULT_RETRY_POLICY, { retryAfterSeconds: 43_201 })).toBe(43_200_000);
    expect(nextRetryDelayMs(1, DEFAULT_RETRY_POLICY, { retryAfterSeconds: 10 ** 12 })).toBe(43_200_000);
    expect(nextRetryDelayMs(1, DEFAULT_RETRY_POLICY, { retryAfterSeconds: Number.POSITIVE_INFINITY })).toBe(43_200_000);
    expect(nextRetryDelayMs(1, DEFAULT_RETRY_POLICY, { retryAfterSeconds: 0 })).toBe(1_000);
    expect(nextRetryDelayMs(1, DEFAULT_RETRY_POLICY, { retryAfterSeconds: -5 })).toBe(1_000);
  });

  it('ignores a NaN Retry-After and falls back to the schedule', () => {
    expect(nextRetryDelayMs(2, DEFAULT_RETRY_POLICY, { retryAfterSeconds: Number.NaN, random: middle })).toBe(120_000);
  });

  it('gives no retry after the last one, even with Retry-After', () => {
    expect(nextRetryDelayMs(10, DEFAULT_RETRY_POLICY, { retryAfterSeconds: 5 })).toBeNull();
  });

  it('uses the policy it is given', () => {
    const policy: RetryPolicy = { scheduleSeconds: [1, 2], jitter: 0, maxRetryAfterSeconds: 60 };
    expect(nextRetryDelayMs(1, policy, { random: lowest })).toBe(1_000);
    expect(nextRetryDelayMs(2, policy, { random: highest })).toBe(2_000);
    expect(nextRetryDelayMs(3, policy)).toBeNull();
    expect(nextRetryDelayMs(1, policy, { retryAfterSeconds: 3600 })).toBe(60_000);
    expect(nextRetryDelayMs(1, { ...policy, scheduleSeconds: [] })).toBeNull();
  });

  it.each([0, -1, 1.5, Number.NaN])('refuses attemptsMade %s', (attemptsMade) => {
    expect(() => nextRetryDelayMs(attemptsMade, DEFAULT_RETRY_POLICY)).toThrow(RangeError);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.UTC(2024, 0, 15, 12, 0, 0); // Mon, 15 Jan 2024 12:00:00 GMT

  it.each([
    ['120', 120],
    ['0', 0],
    ['  7  ', 7],
    ['007', 7],
    ['86400', 86_400],
    ['-5', 0],
  ])('delta-seconds %j is %i', (value, expected) => {
    expect(parseRetryAfter(value, now)).toBe(expected);
  });

  it.each([
    ['Mon, 15 Jan 2024 12:02:00 GMT', 120], // IMF-fixdate
    ['Mon, 15 Jan 2024 12:00:00 GMT', 0],
    ['Mon, 15 Jan 2024 11:00:00 GMT', 0], // in the past
    ['Tue, 16 Jan 2024 12:00:00 GMT', 86_400],
    ['Monday, 15-Jan-24 13:00:00 GMT', 3_600], // obsolete RFC 850 form
    ['Mon Jan 15 12:00:30 2024', 30], // obsolete asctime form, GMT
    ['Mon Jan  1 00:00:00 2024', 0],
    ['Thu, 29 Feb 2024 00:00:00 GMT', 3_844_800], // leap day exists in 2024
  ])('HTTP-date %j is %i s from now', (value, expected) => {
    expect(parseRetryAfter(value, now)).toBe(expected);
  });

  it('rounds a date a fraction of a second away up, never early', () => {
    expect(parseRetryAfter('Mon, 15 Jan 2024 12:00:01 GMT', now + 400)).toBe(1);
  });

  it('reads an RFC 850 two-digit year more than 50 years ahead as the past century', () => {
    expect(parseRetryAfter('Sunday, 06-Nov-94 08:49:37 GMT', now)).toBe(0);
  });

  it('takes the first of repeated headers', () => {
    expect(parseRetryAfter(['30', '60'], now)).toBe(30);
  });

  it.each([
    [undefined],
    [''],
    ['   '],
    [[]],
    ['soon'],
    ['1.5'],
    ['1e3'],
    ['0x10'],
    ['+5'],
    ['120 s'],
    ['2024-01-15T12:02:00Z'],
    ['Mon, 15 Jan 2024 12:02:00'], // no GMT
    ['Mon, 15 Jan 2024 12:02:00 UTC'],
    ['mon, 15 jan 2024 12:02:00 gmt'], // HTTP-date is case-sensitive
    ['Mon, 31 Feb 2024 12:00:00 GMT'], // no such day
    ['Mon, 15 Foo 2024 12:00:00 GMT'],
    ['Mon, 15 Jan 2024 25:00:00 GMT'],
    ['Mon, 15 Jan 2024 12:61:00 GMT'],
    ['Mon, 5 Jan 2024 12:00:00 GMT'], // IMF-fixdate needs two day digits
  ])('%j is not a Retry-After', (value) => {
    expect(parseRetryAfter(value, now)).toBeUndefined();
  });
});
