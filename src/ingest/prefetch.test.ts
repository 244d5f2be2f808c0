import { describe, expect, it } from 'vitest';
import type { NormalizedBlock } from '../chains/types.ts';
import { BlockPrefetcher } from './prefetch.ts';

function fakeAdapter(failing = new Set<number>()) {
  const calls: number[] = [];
  return {
    calls,
    async getBlock(height: number): Promise<NormalizedBlock> {
      calls.push(height);
      if (failing.has(height)) {
        failing.delete(height);
        throw new Error(`node failed at ${height}`);
      }
      return {
        height,
        hash: `h${height}`,
        parentHash: `h${height - 1}`,
        timestamp: 0,
        transactionIds: [],
        tokenTransfers: [],
        internalTransfers: [],
        coinMovements: [],
      };
    },
  };
}

describe('BlockPrefetcher', () => {
  it('fetches up to depth blocks ahead, never past the head, each once', async () => {
    const adapter = fakeAdapter();
    const p = new BlockPrefetcher(adapter, 3);
    expect((await p.get(10, 100)).height).toBe(10);
    expect(adapter.calls).toEqual([10, 11, 12]);
    expect((await p.get(11, 100)).height).toBe(11);
    expect((await p.get(12, 13)).height).toBe(12);
    expect(adapter.calls).toEqual([10, 11, 12, 13]);
    await p.get(13, 13);
    expect(adapter.calls).toEqual([10, 11, 12, 13]);
  });

  it('a failed fetch ahead is fetched again when asked for; clear() forgets what was fetched', async () => {
    const adapter = fakeAdapter(new Set([6]));
    const p = new BlockPrefetcher(adapter, 2);
    await p.get(5, 10);
    await new Promise((r) => setTimeout(r, 0));
    expect((await p.get(6, 10)).height).toBe(6);
    expect(adapter.calls.filter((h) => h === 6)).toHaveLength(2);
    p.clear();
    await p.get(7, 10);
    expect(adapter.calls.filter((h) => h === 7)).toHaveLength(2);
  });
});
