import { describe, expect, it } from 'vitest';
import { LookupCache } from './lookup-cache.ts';

describe('LookupCache', () => {
  it('shares one lookup between concurrent callers; forgets failures and refused answers; drops the oldest when full', async () => {
    let calls = 0;
    const cache = new LookupCache<string | undefined>(2, (v) => v !== undefined);
    const load = (value: string | undefined) => async () => {
      calls++;
      return value;
    };
    expect(await Promise.all([cache.get('a', load('A')), cache.get('a', load('other'))])).toEqual(['A', 'A']);
    expect(calls).toBe(1);

    await expect(cache.get('b', () => Promise.reject(new Error('node down')))).rejects.toThrow('node down');
    expect(await cache.get('b', load('B'))).toBe('B'); // the failure was not kept

    expect(await cache.get('c', load(undefined))).toBeUndefined();
    expect(await cache.get('c', load('C'))).toBe('C'); // the refused answer was not kept

    // Full at 2 ('b', 'c' after 'a' was dropped when 'c' came in): 'a' is looked up again.
    calls = 0;
    expect(await cache.get('a', load('A2'))).toBe('A2');
    expect(calls).toBe(1);
  });
});
