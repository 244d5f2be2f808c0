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
});
