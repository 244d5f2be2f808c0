import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { FollowerGate } from './gate.ts';

/** A follower that applies blocks back to back (catching up): each step a few ms of I/O, the next one started in the same turn. */
function catchingUp(gate: FollowerGate, stepMs: number) {
  let running = true;
  const done = (async () => {
    while (running) {
      gate.enter();
      await sleep(stepMs).finally(() => gate.leave());
    }
  })();
  return {
    async stop() {
      running = false;
      await done;
    },
  };
}

describe('FollowerGate', () => {
  it('idle() resolves at once between steps, and only when the step in progress is over', async () => {
    const gate = new FollowerGate();
    await gate.idle();
    gate.enter();
    let resumed = false;
    const waiting = gate.idle().then(() => {
      resumed = true;
    });
    await sleep(20);
    expect(resumed).toBe(false);
    gate.leave();
    await waiting;
    expect(resumed).toBe(true);
  });

  it('quiet() resolves at once for a follower waiting for the chain, and after its step for one that stops there', async () => {
    const gate = new FollowerGate();
    const started = performance.now();
    await gate.quiet(1000);
    gate.enter();
    setTimeout(() => gate.leave(), 30);
    await gate.quiet(1000);
    expect(performance.now() - started).toBeLessThan(500);
  });

  it('quiet() holds back while the follower catches up, lets one through per maxWaitMs at a gap, and everything once it is caught up', async () => {
    const gate = new FollowerGate();
    const follower = catchingUp(gate, 5);
    const through: number[] = [];
    const started = performance.now();
    // Background work (a mempool burst) asking again as soon as it got through.
    const background = (async () => {
      for (let i = 0; i < 3; i++) {
        await gate.quiet(150);
        through.push(performance.now() - started);
      }
    })();
    await sleep(400);
    await follower.stop();
    await background;
    // Each pass came after its 150 ms (timers may fire late on a busy machine, never early).
    expect(through.length).toBe(3);
    expect(through[0]).toBeGreaterThanOrEqual(149);
    expect((through[1] as number) - (through[0] as number)).toBeGreaterThanOrEqual(149);
    // The third: at the deadline or when the follower stopped (caught up), whichever came first.
    expect(through[2]).toBeGreaterThanOrEqual(Math.min(399, (through[1] as number) + 149));
  });

  it('quiet() is never starved: a follower that never stops still lets the work through', async () => {
    const gate = new FollowerGate();
    const follower = catchingUp(gate, 2);
    const started = performance.now();
    for (let i = 0; i < 5; i++) await gate.quiet(20);
    const elapsed = performance.now() - started;
    await follower.stop();
    expect(elapsed).toBeGreaterThanOrEqual(99);
    expect(elapsed).toBeLessThan(5000);
  });

  it('nextBlockAt() forecasts the next applied block from the pace of the recent ones; steps that applied nothing do not count', async () => {
    const gate = new FollowerGate();
    const step = async (applied: boolean) => {
      gate.enter();
      gate.leave(applied);
    };
    for (let i = 0; i < 3; i++) {
      await step(true);
      await sleep(30);
    }
    expect(gate.nextBlockAt()).toBeUndefined(); // three starts: too few to tell a pace
    await step(false); // a head poll that found nothing
    await step(true);
    const next = gate.nextBlockAt();
    expect(next).toBeDefined();
    const pace = (next?.at as number) - performance.now();
    expect(pace).toBeGreaterThan(20); // about 30 ms from the last start (timers may fire late, never early)
    expect(pace).toBeLessThan(200);
    expect(next?.lateMs).toBeGreaterThan(5);
  });

  it('roomForFetch() starts any number of fetches far from the next block, one at a time near it, and all again once it came', async () => {
    const gate = new FollowerGate();
    for (let i = 0; i < 5; i++) {
      await sleep(40);
      gate.enter();
      gate.leave(true);
    }
    // No forecast yet or far from it: at once, whatever is in flight.
    const forecast = gate.nextBlockAt() as { at: number };
    expect(forecast.at - performance.now()).toBeGreaterThan(10);
    let inFlight = 5;
    await gate.roomForFetch(() => inFlight, 2);
    // Near the next block (a lead as long as the whole pace): held while one is in flight ...
    let through = false;
    const held = gate
      .roomForFetch(() => inFlight, 1000)
      .then(() => {
        through = true;
      });
    await sleep(10);
    expect(through).toBe(false);
    // ... and let through when none is.
    inFlight = 0;
    await held;
    expect(through).toBe(true);
  });

  it('roomForFetch() holds a second fetch near the next block until the live step has come and gone', async () => {
    // A slow pace (500 ms), so that the timers of a busy machine stay inside the forecast's window.
    const gate = new FollowerGate();
    for (let i = 0; i < 5; i++) {
      await sleep(500);
      gate.enter();
      gate.leave(true);
    }
    const { at } = gate.nextBlockAt() as { at: number };
    await sleep(Math.max(0, at - 150 - performance.now()));
    let after = false;
    const waiting = gate
      .roomForFetch(() => 1, 200)
      .then(() => {
        after = true;
      });
    await sleep(5);
    gate.enter();
    await sleep(5);
    expect(after).toBe(false);
    gate.leave(true);
    await waiting;
    expect(after).toBe(true);
  });

  it('roomForFetch() is never stuck: a forecast block that does not come stops holding fetches back', async () => {
    const gate = new FollowerGate();
    for (let i = 0; i < 5; i++) {
      await sleep(20);
      gate.enter();
      gate.leave(true);
    }
    await sleep(15);
    const started = performance.now();
    await gate.roomForFetch(() => 3, 15); // near the forecast, 3 in flight: held only until it is past
    expect(performance.now() - started).toBeLessThan(1000);
  });
});
