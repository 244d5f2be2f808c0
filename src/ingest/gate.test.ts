import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { FollowerGate } from './gate.ts';

/**
 * A follower that applies blocks back to back (catching up): each step a few ms of I/O, the next one started in
 * the same turn; `applied`: its steps count as applied blocks (the forecast's pace).
 */
function catchingUp(gate: FollowerGate, stepMs: number, applied = false) {
  let running = true;
  const done = (async () => {
    while (running) {
      gate.enter();
      await sleep(stepMs).finally(() => gate.leave(applied));
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

  it('nextBlockAt() expects the next block at once after a step that took longer than the pace (it came meanwhile)', async () => {
    const gate = new FollowerGate();
    for (let i = 0; i < 5; i++) {
      await sleep(30);
      gate.enter();
      gate.leave(true);
    }
    gate.enter();
    await sleep(80); // a slow step: the next block is due 30 ms after its start
    gate.leave(true);
    const next = gate.nextBlockAt() as { at: number };
    expect(Math.abs(next.at - performance.now())).toBeLessThan(20);
  });

  it('roomForFetch() starts any number of fetches far from the next block, none near it (the live block finds none at the node), and all again once it came', async () => {
    // A slow pace (300 ms), so that the timers of a busy machine stay inside the forecast's window.
    const gate = new FollowerGate();
    for (let i = 0; i < 5; i++) {
      await sleep(300);
      gate.enter();
      gate.leave(true);
    }
    // No forecast yet or far from it: at once, whatever is in flight.
    const { at } = gate.nextBlockAt() as { at: number };
    expect(at - performance.now()).toBeGreaterThan(100);
    await gate.roomForFetch(() => 5, 2);
    // Near the next block (within the fetch's lead): held, even with nothing in flight ...
    await sleep(Math.max(0, at - 100 - performance.now()));
    let through = false;
    const held = gate
      .roomForFetch(() => 0, 150)
      .then(() => {
        through = true;
      });
    await sleep(20);
    expect(through).toBe(false);
    // ... through the live step ...
    gate.enter();
    await sleep(10);
    expect(through).toBe(false);
    // ... and let through once it is over.
    gate.leave(true);
    await held;
    expect(through).toBe(true);
  });

  it('clearOfNextBlock() holds work that would still run when the next block is expected, and lets it through once the step came and went', async () => {
    const gate = new FollowerGate();
    await gate.clearOfNextBlock(1000); // no forecast: at once
    for (let i = 0; i < 5; i++) {
      await sleep(300);
      gate.enter();
      gate.leave(true);
    }
    const { at } = gate.nextBlockAt() as { at: number };
    const started = performance.now();
    await gate.clearOfNextBlock(50); // far from it: at once
    expect(performance.now() - started).toBeLessThan(100);
    await sleep(Math.max(0, at - 40 - performance.now()));
    let through = false;
    const held = gate.clearOfNextBlock(50).then(() => {
      through = true;
    });
    await sleep(10);
    expect(through).toBe(false);
    gate.enter();
    await sleep(5);
    gate.leave(true);
    await held;
    expect(through).toBe(true);
  });

  it('clearOfNextBlock() is never starved: with blocks back to back (no clear room), work goes through once it was held a whole block interval', async () => {
    const gate = new FollowerGate();
    const follower = catchingUp(gate, 4, true);
    await sleep(60); // a forecast: a block every 4 ms or so
    const started = performance.now();
    for (let i = 0; i < 5; i++) await gate.clearOfNextBlock(20);
    const elapsed = performance.now() - started;
    await follower.stop();
    expect(elapsed).toBeLessThan(5000);
  });

  it('roomForFetch() held a whole block interval goes through only when no fetch is in flight', async () => {
    const gate = new FollowerGate();
    const follower = catchingUp(gate, 4, true);
    await sleep(60);
    let inFlight = 1;
    let through = false;
    const held = gate
      .roomForFetch(() => inFlight, 20)
      .then(() => {
        through = true;
      });
    await sleep(100); // many block intervals
    expect(through).toBe(false);
    inFlight = 0;
    await held;
    await follower.stop();
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
