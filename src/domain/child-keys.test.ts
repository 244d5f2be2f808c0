import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { HDKey } from '@scure/bip32';
import { describe, expect, it } from 'vitest';
import { TEST_MASTER } from '../../test/support/hd-keys.ts';
import { addTweak, CHILD_KEY_ENGINE, childKey, childPublicKeys } from './child-keys.ts';
import { deriveAddress, parseDescriptor, parseExtendedKey } from './wallet-keys.ts';
import { deriveWindow } from './wallet-windows.ts';

const hexOf = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');
const engines = ['libsecp256k1', 'noble'] as const;

describe('childPublicKeys: CKDpub equal to @scure/bip32 deriveChild', () => {
  it('runs with libsecp256k1 wherever the secp256k1 package is installed (a dependency with a prebuilt binary for linux-x64)', () => {
    let installed = true;
    try {
      createRequire(import.meta.url).resolve('secp256k1/bindings');
    } catch {
      installed = false; // a node_modules installed before the dependency was added: noble, slower, the same keys
    }
    expect(CHILD_KEY_ENGINE).toBe(installed ? 'libsecp256k1' : 'noble');
  });

  for (const engine of engines) {
    it(`${engine}: every index of two windows of two branches, and indexes near 2^31`, () => {
      for (const path of ["m/84'/0'/0'/0", "m/44'/2'/3'/1"]) {
        const parent = TEST_MASTER.derive(path);
        const publicParent = HDKey.fromExtendedKey(parent.publicExtendedKey);
        const pub = publicParent.publicKey as Uint8Array;
        const chainCode = publicParent.chainCode as Uint8Array;
        for (const [from, to] of [
          [0, 63],
          [1000, 1020],
          [0x7fffffff - 3, 0x7fffffff],
        ] as const) {
          const got = childPublicKeys(pub, chainCode, from, to, engine).map(hexOf);
          const expected = Array.from({ length: to - from + 1 }, (_, i) => hexOf(publicParent.deriveChild(from + i).publicKey as Uint8Array));
          expect(got).toEqual(expected);
        }
      }
    });
  }

  for (const engine of engines) {
    it(`${engine}: childKey gives @scure/bip32 deriveChild's public key and chain code (the branch node of a window)`, () => {
      for (const path of ["m/84'/0'/0'", "m/44'/2'/3'"]) {
        const parent = HDKey.fromExtendedKey(TEST_MASTER.derive(path).publicExtendedKey);
        for (const index of [0, 1, 7, 0x7fffffff]) {
          const got = childKey(parent.publicKey as Uint8Array, parent.chainCode as Uint8Array, index, engine);
          const expected = parent.deriveChild(index);
          expect([hexOf(got.publicKey), hexOf(got.chainCode)]).toEqual([hexOf(expected.publicKey as Uint8Array), hexOf(expected.chainCode as Uint8Array)]);
        }
      }
      expect(() => childKey(new Uint8Array(33), new Uint8Array(32), 0x80000000, engine)).toThrow(/unhardened/);
    });
  }

  it('refuses hardened and negative indexes and an uncompressed parent', () => {
    const parent = HDKey.fromExtendedKey(TEST_MASTER.derive("m/84'/0'/0'/0").publicExtendedKey);
    const pub = parent.publicKey as Uint8Array;
    const cc = parent.chainCode as Uint8Array;
    expect(() => childPublicKeys(pub, cc, 0x7fffffff, 0x80000000)).toThrow(/unhardened/);
    expect(() => childPublicKeys(pub, cc, -1, 2)).toThrow(/unhardened/);
    expect(() => childPublicKeys(new Uint8Array(65), cc, 0, 2)).toThrow(/33 bytes/);
  });

  it('addTweak: both engines agree on random tweaks, and refuse a tweak not below the order', () => {
    const pub = HDKey.fromExtendedKey(TEST_MASTER.derive("m/86'/0'/0'").publicExtendedKey).publicKey as Uint8Array;
    for (let i = 0; i < 20; i++) {
      const tweak = randomBytes(32);
      tweak[0] = (tweak[0] as number) & 0x7f;
      expect(hexOf(addTweak(pub, tweak, 'noble'))).toBe(hexOf(addTweak(pub, tweak, 'libsecp256k1')));
    }
    for (const engine of engines) expect(() => addTweak(pub, new Uint8Array(32).fill(0xff), engine)).toThrow();
  });

  it('deriveWindow gives what deriving each address from the key with @scure/bip32 gives (segwit, taproot, bitcoin-cash)', () => {
    const zpubKey = parseExtendedKey('bitcoin', 'mainnet', TEST_MASTER.derive("m/84'/0'/0'").publicExtendedKey, 'segwit');
    const tr = parseDescriptor('bitcoin', 'mainnet', `tr(${TEST_MASTER.derive("m/86'/0'/0'").publicExtendedKey}/<0;1>/*)`);
    const bch = parseExtendedKey('bitcoin-cash', 'mainnet', TEST_MASTER.derive("m/44'/145'/0'").publicExtendedKey);
    for (const parsed of [zpubKey, tr, bch]) {
      if (!parsed.ok) throw new Error(parsed.message);
      const window = deriveWindow(parsed.key, true, 5, 9, false);
      expect(window.map((r) => r.index)).toEqual([5, 6, 7, 8, 9]);
      expect(window.map((r) => r.derivationPath)).toEqual([5, 6, 7, 8, 9].map((i) => `m/1/${i}`));
      // deriveAddress: @scure/bip32's deriveChild at each step, every address put through validateAddress.
      const branch = parsed.key.branches.find((b) => b.change === 1);
      if (!branch) throw new Error('no change branch');
      expect(window.map((r) => r.address)).toEqual(window.map((r) => deriveAddress(parsed.key, branch, r.index).address));
    }
  });
});
