/**
 * The record of benchmark runs (bench/results.ts, docs/benchmarks.md): each run's line says when, which
 * commit, on what machine under what load, then the benchmark's own figures with their baselines.
 */
import { describe, expect, it } from 'vitest';
import { resultLine, runContext } from '../bench/results.ts';

describe('bench/results/<name>.jsonl lines', () => {
  it('carry the date, the commit, the machine and its load around the run, then the figures', () => {
    const context = runContext();
    expect(context.commit).toMatch(/^[0-9a-f]{40}$/);
    expect(typeof context.dirty).toBe('boolean');
    expect(context.machine.cores).toBeGreaterThan(0);
    expect(context.loadAverage.before).toHaveLength(3);

    const figures = { bench: 'delivery', throughput: { callbacksPerSecond: 1838 }, ceiling: { perSecond: 6259 }, ratioToCeiling: 0.294 };
    const line = resultLine('delivery', context, figures, new Date('2026-12-02T01:24:29.847Z'), [1.234, 2, 3]);
    expect(line).not.toContain('\n');
    const parsed = JSON.parse(line);
    expect(parsed).toMatchObject({
      ...figures,
      at: '2026-12-02T01:24:29.847Z',
      commit: context.commit,
      machine: context.machine,
      loadAverage: { before: context.loadAverage.before, after: [1.23, 2, 3] },
    });
    expect(Object.keys(parsed).slice(0, 6)).toEqual(['at', 'bench', 'commit', 'dirty', 'machine', 'loadAverage']);
  });
});
