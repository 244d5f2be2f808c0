import { describe, expect, it } from 'vitest';
import { DerivedAddressTable } from './derived-addresses.ts';

const rows = (prefix: string, change: boolean, from: number, to: number, name = (i: number) => `${change ? 'c' : 'r'}${i}`) =>
  Array.from({ length: to - from + 1 }, (_, k) => ({ address: name(from + k), derivationPath: `${prefix}/${from + k}`, change, index: from + k }));

describe('DerivedAddressTable', () => {
  it('keeps each address with its subscription, chain, index and path; skips an address the subscription has', () => {
    const t = new DerivedAddressTable();
    expect(t.add('A', rows('m/0', false, 0, 1))).toBe(false); // unknown owner
    expect(t.addOwner('A')).toBe(0);
    expect(t.addOwner('A')).toBe(0); // known: the same ordinal
    expect(t.ownerOf('A')).toBe(0);
    expect(t.add('A', [...rows("m/84'/0'/0'/0", false, 0, 2), ...rows("m/84'/0'/0'/1", true, 0, 1)])).toBe(true);
    t.add('A', rows("m/84'/0'/0'/0", false, 1, 3)); // 1 and 2 again: skipped
    expect(t.size).toBe(6);
    expect(t.has('r3')).toBe(true);
    expect(t.has('x')).toBe(false);
    expect(t.entriesOf('x')).toBeUndefined();
    expect(t.entriesOf('r3')).toEqual([{ subscriptionId: 'A', owner: 0, change: false, index: 3, derivationPath: "m/84'/0'/0'/0/3" }]);
    expect(t.entriesOf('c1')).toEqual([{ subscriptionId: 'A', owner: 0, change: true, index: 1, derivationPath: "m/84'/0'/0'/1/1" }]);
  });

  it('an address of three subscriptions: all three, oldest first; forgetting one (first, middle, last) keeps the others', () => {
    for (const gone of ['A', 'B', 'C']) {
      const t = new DerivedAddressTable();
      for (const id of ['A', 'B', 'C']) {
        t.addOwner(id);
        t.add(
          id,
          rows(`m/${id}`, false, 0, 4, (i) => (i === 2 ? 'shared' : `${id}${i}`)),
        );
      }
      expect(t.entriesOf('shared')?.map((e) => `${e.subscriptionId}:${e.derivationPath}`)).toEqual(['A:m/A/2', 'B:m/B/2', 'C:m/C/2']);
      // The same entries read field by field (matching's path: no object per entry).
      const fields: string[] = [];
      const out = new Int32Array(1);
      t.findEach(['shared'], 1, out);
      for (let at = out[0] as number; at >= 0; at = t.nextOf(at)) fields.push(`${t.ownerAt(at)}:${t.pathAt(at)}:${t.indexAt(at)}:${t.isChangeAt(at)}`);
      expect(fields).toEqual(['0:m/A/2:2:false', '1:m/B/2:2:false', '2:m/C/2:2:false']);
      t.remove(gone);
      expect(t.size).toBe(10);
      expect(t.entriesOf('shared')?.map((e) => e.subscriptionId)).toEqual(['A', 'B', 'C'].filter((id) => id !== gone));
      expect(t.has(`${gone}0`)).toBe(false);
      // The freed entries are reused, and the id can come back.
      const ordinal = t.addOwner(gone);
      expect(ordinal).toBe(['A', 'B', 'C'].indexOf(gone)); // the freed ordinal, reused
      t.add(
        gone,
        rows(`m/${gone}`, true, 0, 4, (i) => `${gone}-new${i}`),
      );
      expect(t.size).toBe(15);
      expect(t.entriesOf(`${gone}-new4`)).toEqual([{ subscriptionId: gone, owner: ordinal, change: true, index: 4, derivationPath: `m/${gone}/4` }]);
      for (const id of ['A', 'B', 'C']) t.remove(id);
      expect(t.size).toBe(0);
      expect(t.has('shared')).toBe(false);
      expect(t.ownerOf(gone)).toBeUndefined();
    }
  });

  it('grows past its first capacity', () => {
    const t = new DerivedAddressTable();
    t.addOwner('A');
    t.add('A', rows('m/0', false, 0, 4999));
    expect(t.size).toBe(5000);
    expect(t.entriesOf('r4999')?.[0]?.derivationPath).toBe('m/0/4999');
    expect(t.entriesOf('r0')?.[0]?.index).toBe(0);
  });
});
