import { describe, expect, it } from 'vitest';
import { isUuid, uuidV7 } from './ids.ts';

describe('uuidV7', () => {
  it('is a version 7, variant 10 UUID whose first 48 bits are the milliseconds', () => {
    const at = Date.UTC(2026, 10, 25, 3, 0, 0, 123);
    const id = uuidV7(at);
    expect(isUuid(id)).toBe(true);
    expect(id[14]).toBe('7');
    expect(['8', '9', 'a', 'b']).toContain(id[19]);
    expect(Number.parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toBe(at);
  });

  it('sorts by time, and ids of one millisecond differ', () => {
    const ids = Array.from({ length: 2000 }, (_, i) => uuidV7(1_700_000_000_000 + Math.floor(i / 100)));
    expect(new Set(ids).size).toBe(ids.length);
    for (let i = 100; i < ids.length; i += 100) expect((ids[i - 1] as string) < (ids[i] as string)).toBe(true);
  });
});
