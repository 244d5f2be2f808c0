import { describe, expect, it } from 'vitest';
import { Fifo } from './fifo.ts';

describe('Fifo', () => {
  it('gives items back in order across compactions, interleaved with pushes', () => {
    const q = new Fifo<number>();
    const out: number[] = [];
    for (let i = 0; i < 5000; i++) {
      q.push(i);
      if (i % 3 === 0) out.push(q.shift() as number);
    }
    expect(q.length).toBe(5000 - out.length);
    for (let x = q.shift(); x !== undefined; x = q.shift()) out.push(x);
    expect(out).toEqual(Array.from({ length: 5000 }, (_, i) => i));
    expect(q.length).toBe(0);
    expect(q.shift()).toBeUndefined();
    q.push(7);
    q.clear();
    expect(q.length).toBe(0);
  });

  it('drains 200,000 items in linear time (Array.shift would move every element each time)', () => {
    const q = new Fifo<{ i: number }>();
    for (let i = 0; i < 200_000; i++) q.push({ i });
    let n = 0;
    while (q.shift() !== undefined) n++;
    expect(n).toBe(200_000);
  });
});
