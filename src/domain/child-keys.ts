/**
 * BIP32 public child derivation (CKDpub) for many indexes of one parent key: the hot loop of wallet-key
 * subscriptions (docs/concepts/wallet-keys.md#derivation-speed). @scure/bip32's `deriveChild` does one
 * HDKey per child (the parent point decompressed again, a constant-time multiplication, the child's own
 * hash160 and fingerprint): about 2,000 children/s on this machine. Here, per index, only what CKDpub needs:
 *
 *   I = HMAC-SHA512(chainCode, parentPublicKey || ser32(index)); child = parent + I_L * G
 *
 * HMAC-SHA512 is Node's (OpenSSL). `parent + I_L * G` is libsecp256k1's `secp256k1_ec_pubkey_tweak_add`
 * (the `secp256k1` package's prebuilt addon, the library Bitcoin Core uses) when it loads, else noble's
 * (the curve library under @scure/bip32) with one batched inversion per call. Not noble's multiplyUnsafe:
 * in @noble/curves 1.9.1, BASE.multiplyUnsafe gives wrong points for full-size scalars (child-keys.test.ts
 * would catch its return). Both are checked
 * against @scure/bip32's deriveChild in child-keys.test.ts. As BIP32 says, an index whose I_L is not below
 * the curve order or whose child is the point at infinity has no key (probability below 2^-127): this
 * throws there, as @scure/bip32 does.
 */
import { createHmac } from 'node:crypto';
import { createRequire } from 'node:module';
import { secp256k1 } from '@noble/curves/secp256k1';

interface NativeSecp256k1 {
  publicKeyTweakAdd(publicKey: Uint8Array, tweak: Uint8Array, compressed?: boolean): Uint8Array;
  publicKeyConvert(publicKey: Uint8Array, compressed?: boolean): Uint8Array;
}

/** libsecp256k1 through the `secp256k1` addon, or undefined (not installed, no prebuilt binary for this platform: its pure-JS fallback is slower than noble). */
function loadNative(): NativeSecp256k1 | undefined {
  try {
    const require = createRequire(import.meta.url);
    // The package's own entry falls back to elliptic when the addon does not load; its binding entry does not.
    return require('secp256k1/bindings') as NativeSecp256k1;
  } catch {
    return undefined;
  }
}

const native = loadNative();

/** Which implementation adds the tweak: 'libsecp256k1' (the addon) or 'noble'. */
export const CHILD_KEY_ENGINE: 'libsecp256k1' | 'noble' = native ? 'libsecp256k1' : 'noble';

const HARDENED = 0x80000000;
const N = secp256k1.CURVE.n;
const Point = secp256k1.ProjectivePoint;

/** `publicKey + tweak * G`, compressed (33 bytes); throws when the tweak is not below the order or the sum is the point at infinity. */
export function addTweak(publicKey: Uint8Array, tweak: Uint8Array, engine = CHILD_KEY_ENGINE): Uint8Array {
  if (engine === 'libsecp256k1' && native) return native.publicKeyTweakAdd(publicKey, tweak, true);
  const t = BigInt(`0x${Buffer.from(tweak).toString('hex')}`);
  if (t >= N) throw new Error('the tweak is not below the curve order');
  const sum = Point.BASE.multiply(t).add(Point.fromHex(publicKey));
  if (sum.equals(Point.ZERO)) throw new Error('the tweaked key is the point at infinity');
  return sum.toRawBytes(true);
}

/** The compressed public keys (33 bytes) of children from..to (inclusive, unhardened) of a parent. */
export function childPublicKeys(parentPublicKey: Uint8Array, chainCode: Uint8Array, from: number, to: number, engine = CHILD_KEY_ENGINE): Uint8Array[] {
  if (!(Number.isInteger(from) && Number.isInteger(to) && from >= 0 && to < HARDENED))
    throw new RangeError(`indexes ${from}..${to} are not unhardened BIP32 indexes`);
  if (parentPublicKey.length !== 33) throw new RangeError('the parent public key must be 33 bytes (compressed)');
  const data = Buffer.alloc(37);
  data.set(parentPublicKey, 0);
  const keys: Uint8Array[] = [];
  if (engine === 'libsecp256k1' && native) {
    // The parent uncompressed once: libsecp256k1 then reads it without a square root per child (about a tenth of a child's time).
    const parent = native.publicKeyConvert(parentPublicKey, false);
    for (let index = from; index <= to; index++) {
      data.writeUInt32BE(index, 33);
      const tweak = createHmac('sha512', chainCode).update(data).digest().subarray(0, 32);
      try {
        keys.push(native.publicKeyTweakAdd(parent, tweak, true));
      } catch (error) {
        throw new Error(`child ${index} has no key (BIP32: the next index is used instead): ${(error as Error).message}`);
      }
    }
    return keys;
  }
  const parent = Point.fromHex(parentPublicKey);
  const points: InstanceType<typeof Point>[] = [];
  for (let index = from; index <= to; index++) {
    data.writeUInt32BE(index, 33);
    const tweak = BigInt(`0x${createHmac('sha512', chainCode).update(data).digest('hex').slice(0, 64)}`);
    if (tweak >= N) throw new Error(`child ${index} has no key (BIP32: the next index is used instead): I_L is not below the curve order`);
    const child = tweak === 0n ? parent : Point.BASE.multiply(tweak).add(parent);
    if (child.equals(Point.ZERO)) throw new Error(`child ${index} has no key (BIP32: the next index is used instead): the point at infinity`);
    points.push(child);
  }
  for (const p of Point.normalizeZ(points)) keys.push(p.toRawBytes(true));
  return keys;
}

/**
 * CKDpub of one unhardened child: its compressed public key and chain code (I_R). What @scure/bip32's
 * deriveChild gives (without the child's HDKey: its hash160 and fingerprint, and a point decompressed
 * again): deriveWindow derives a window's branch node (`/0`, `/1`) with it, once per window.
 */
export function childKey(
  parentPublicKey: Uint8Array,
  chainCode: Uint8Array,
  index: number,
  engine = CHILD_KEY_ENGINE,
): { publicKey: Uint8Array; chainCode: Uint8Array } {
  if (!(Number.isInteger(index) && index >= 0 && index < HARDENED)) throw new RangeError(`index ${index} is not an unhardened BIP32 index`);
  if (parentPublicKey.length !== 33) throw new RangeError('the parent public key must be 33 bytes (compressed)');
  const data = Buffer.alloc(37);
  data.set(parentPublicKey, 0);
  data.writeUInt32BE(index, 33);
  const digest = createHmac('sha512', chainCode).update(data).digest();
  try {
    return { publicKey: addTweak(parentPublicKey, digest.subarray(0, 32), engine), chainCode: Uint8Array.from(digest.subarray(32)) };
  } catch (error) {
    throw new Error(`child ${index} has no key (BIP32: the next index is used instead): ${(error as Error).message}`);
  }
}

/**
 * Whether `publicKey` (33 bytes, compressed) is a point of the curve, by libsecp256k1's parser (a square root
 * in C); false where the addon does not load (the caller then asks noble).
 */
export function isCurvePoint(publicKey: Uint8Array): boolean {
  if (!native || publicKey.length !== 33) return false;
  try {
    native.publicKeyConvert(publicKey, true);
    return true;
  } catch {
    return false;
  }
}
