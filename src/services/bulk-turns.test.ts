import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { ChunkTurns } from './bulk-turns.ts';

describe('ChunkTurns', () => {
  it('runs one write at a time, in the order asked, each after the rest that follows the one before', async () => {
    const turns = new ChunkTurns(0.5);
    const events: { name: string; what: 'start' | 'end'; at: number }[] = [];
    const t0 = performance.now();
    const write = (name: string, ms: number) =>
      turns.run(async () => {
        events.push({ name, what: 'start', at: performance.now() - t0 });
        await sleep(ms);
        events.push({ name, what: 'end', at: performance.now() - t0 });
        return name;
      });
    const answers = await Promise.all([write('a', 60), write('b', 20), write('c', 20)]);
    expect(answers).toEqual(['a', 'b', 'c']);
    expect(events.map((e) => `${e.what} ${e.name}`)).toEqual(['start a', 'end a', 'start b', 'end b', 'start c', 'end c']);
    const at = (what: 'start' | 'end', name: string) => events.find((e) => e.what === what && e.name === name)?.at ?? Number.NaN;
    // a took at least 60 ms: b waits at least 30 ms more (half of it); b took 20: c waits at least 10.
    expect(at('start', 'b') - at('end', 'a')).toBeGreaterThanOrEqual(28);
    expect(at('start', 'c') - at('end', 'b')).toBeGreaterThanOrEqual(9);
  });

  it('answers the caller without waiting for the rest, and a failed write gives the turn on', async () => {
    const turns = new ChunkTurns(10);
    const started = performance.now();
    await turns.run(() => sleep(20));
    // The rest (about 200 ms) delays the next turn, not this answer.
    expect(performance.now() - started).toBeLessThan(150);
    const failing = turns.run(async () => {
      throw new Error('lost the database');
    });
    await expect(failing).rejects.toThrow('lost the database');
    await expect(turns.run(async () => 'next')).resolves.toBe('next');
  });
});
