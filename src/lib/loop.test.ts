import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { Alarm, Backoff, backoffMs, sleep, startPollLoop } from './loop.ts';

const elapsed = async (work: () => Promise<unknown>) => {
  const started = performance.now();
  await work();
  return performance.now() - started;
};

describe('sleep', () => {
  it('waits, ends at once when its signal aborts, and leaves no listener behind', async () => {
    expect(await elapsed(() => sleep(30))).toBeGreaterThanOrEqual(25);
    const stop = new AbortController();
    setTimeout(() => stop.abort(), 10);
    expect(await elapsed(() => sleep(5_000, stop.signal))).toBeLessThan(1_000);
    expect(await elapsed(() => sleep(5_000, stop.signal))).toBeLessThan(50); // already aborted

    const kept = new AbortController();
    const sleeping = sleep(5, kept.signal);
    expect(getEventListeners(kept.signal, 'abort')).toHaveLength(1);
    await sleeping;
    expect(getEventListeners(kept.signal, 'abort')).toHaveLength(0);
  });
});

describe('Alarm', () => {
  it('ends the sleep in progress when rung', async () => {
    const alarm = new Alarm();
    setTimeout(() => alarm.ring(), 10);
    expect(await elapsed(() => alarm.sleep(5_000))).toBeLessThan(1_000);
    // Spent: the ring ended that sleep and is not kept for the next one.
    expect(await elapsed(() => alarm.sleep(30))).toBeGreaterThanOrEqual(25);
  });

  it('keeps a ring that comes after the sleep ended, before the sleeper resumed', async () => {
    const alarm = new Alarm();
    const first = alarm.sleep(5_000);
    alarm.ring(); // ends it
    alarm.ring(); // the loop has not resumed yet: news for the next sleep, not lost
    await first;
    expect(await elapsed(() => alarm.sleep(5_000))).toBeLessThan(50);
  });

  it('keeps a ring that comes while nobody sleeps (the next sleep returns at once) until reset', async () => {
    const alarm = new Alarm();
    alarm.ring();
    expect(await elapsed(() => alarm.sleep(5_000))).toBeLessThan(50);
    alarm.reset();
    expect(await elapsed(() => alarm.sleep(30))).toBeGreaterThanOrEqual(25);
  });
});

describe('Backoff', () => {
  it('doubles from the first wait up to the cap, at most maxDoublings times, and starts again after a success', () => {
    const backoff = new Backoff({ firstMs: 100, maxMs: 1_000 });
    expect([backoff.next(), backoff.next(), backoff.next(), backoff.next(), backoff.next()]).toEqual([100, 200, 400, 800, 1_000]);
    expect(backoff.failures).toBe(5);
    backoff.reset();
    expect([backoff.current(), backoff.next()]).toEqual([0, 100]);
    expect([1, 2, 3, 4, 5].map((f) => backoffMs(f, { firstMs: 20, maxMs: 60_000, maxDoublings: 2 }))).toEqual([20, 40, 80, 80, 80]);
  });
});

describe('startPollLoop', () => {
  it('passes again at once when asked, sleeps pollMs otherwise, is woken by news, and stops the pass in progress', async () => {
    const passes: number[] = [];
    const started = performance.now();
    let more = 2;
    const loop = startPollLoop({
      pass: async () => {
        passes.push(performance.now() - started);
        return more-- > 0;
      },
      pollMs: 5_000,
      backoff: { firstMs: 10, maxMs: 10 },
      onError: () => undefined,
    });
    await sleep(50);
    expect(passes.length).toBe(3); // two with more to do, then asleep for pollMs
    loop.wake();
    await sleep(50);
    expect(passes.length).toBe(4);
    await loop.stop();
  });

  it('backs off after failures, logs each with the count in a row, and a pass sees the stop', async () => {
    const failures: number[] = [];
    let calls = 0;
    let sawStop = false;
    const loop = startPollLoop({
      pass: async (signal) => {
        calls++;
        if (calls <= 3) throw new Error('node down');
        await sleep(5_000, signal);
        sawStop = signal.aborted;
        return false;
      },
      pollMs: 5_000,
      backoff: { firstMs: 10, maxMs: 20 },
      onError: (_, inARow) => failures.push(inARow),
    });
    const stopped = await elapsed(async () => {
      for (let i = 0; i < 100 && calls < 4; i++) await sleep(10);
      await loop.stop();
    });
    expect(failures).toEqual([1, 2, 3]);
    expect(sawStop).toBe(true);
    expect(stopped).toBeLessThan(2_000);
  });
});
