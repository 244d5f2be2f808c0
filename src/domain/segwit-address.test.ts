import { randomBytes } from 'node:crypto';
import { bech32, bech32m } from '@scure/base';
import { describe, expect, it } from 'vitest';
import { segwitAddress } from './segwit-address.ts';

describe('segwitAddress: what @scure/base spells', () => {
  it('version 0 (bech32) and 1 (bech32m), 20- and 32-byte programs, every prefix herald uses', () => {
    for (const hrp of ['bc', 'tb', 'bcrt', 'ltc', 'tltc', 'rltc']) {
      for (let n = 0; n < 200; n++) {
        const program = randomBytes(n % 2 === 0 ? 20 : 32);
        expect(segwitAddress(hrp, 0, program)).toBe(bech32.encode(hrp, [0, ...bech32.toWords(program)]));
        expect(segwitAddress(hrp, 1, program)).toBe(bech32m.encode(hrp, [1, ...bech32m.toWords(program)]));
      }
    }
  });

  it('BIP173 and BIP350 test vectors', () => {
    const h = (s: string) => Uint8Array.from(Buffer.from(s, 'hex'));
    expect(segwitAddress('bc', 0, h('751e76e8199196d454941c45d1b3a323f1433bd6'))).toBe('bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4');
    expect(segwitAddress('bc', 1, h('79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798'))).toBe(
      'bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqzk5jj0',
    );
  });

  it('refuses a bad version, program length or prefix', () => {
    expect(() => segwitAddress('bc', 17, new Uint8Array(20))).toThrow(RangeError);
    expect(() => segwitAddress('bc', 0, new Uint8Array(1))).toThrow(RangeError);
    expect(() => segwitAddress('BC', 0, new Uint8Array(20))).toThrow(/prefix/);
  });
});
