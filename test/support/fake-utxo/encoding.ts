/**
 * Bytes for the fake Bitcoin-family nodes: double SHA-256 ids shown big-endian (as the nodes print them),
 * the wire serialisation helpers (little-endian integers, CompactSize), address encoders (base58check,
 * BIP-173/350 segwit, Bitcoin Cash cashaddr) and output-descriptor checksums (BIP-380), so what the fake
 * prints is what a real node would print for the same script.
 */
import { ripemd160 } from '@noble/hashes/ripemd160';
import { sha256 } from '@noble/hashes/sha256';
import { bech32, bech32m, createBase58check, hex } from '@scure/base';

const b58check = createBase58check(sha256);

export const sha256d = (data: Uint8Array): Uint8Array => sha256(sha256(data));
export const hash160 = (data: Uint8Array): Uint8Array => ripemd160(sha256(data));
export const toHex = (data: Uint8Array): string => hex.encode(data);
export const fromHex = (text: string): Uint8Array => hex.decode(text);

/** A 32-byte hash in the byte order nodes display (reversed). */
export const displayHex = (hash: Uint8Array): string => hex.encode(Uint8Array.from(hash).reverse());
/** Display hex back to internal (serialised) byte order. */
export const internalBytes = (display: string): Uint8Array => hex.decode(display).reverse();

export const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text);

export function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

export class ByteWriter {
  private readonly chunks: Uint8Array[] = [];
  private length = 0;

  bytes(data: Uint8Array): this {
    this.chunks.push(data);
    this.length += data.length;
    return this;
  }
  u8(n: number): this {
    return this.bytes(Uint8Array.of(n & 0xff));
  }
  u16(n: number): this {
    return this.bytes(Uint8Array.of(n & 0xff, (n >>> 8) & 0xff));
  }
  u32(n: number): this {
    const b = new Uint8Array(4);
    new DataView(b.buffer).setUint32(0, n >>> 0, true);
    return this.bytes(b);
  }
  i64(n: bigint): this {
    const b = new Uint8Array(8);
    new DataView(b.buffer).setBigInt64(0, n, true);
    return this.bytes(b);
  }
  /** Bitcoin's CompactSize. */
  varint(n: number): this {
    if (n < 0xfd) return this.u8(n);
    if (n <= 0xffff) return this.u8(0xfd).u16(n);
    return this.u8(0xfe).u32(n);
  }
  varbytes(data: Uint8Array): this {
    return this.varint(data.length).bytes(data);
  }
  build(): Uint8Array {
    const out = new Uint8Array(this.length);
    let at = 0;
    for (const c of this.chunks) {
      out.set(c, at);
      at += c.length;
    }
    return out;
  }
}

/** Big-endian u32/u16 of Omni payloads. */
export function beBytes(n: bigint, size: number): Uint8Array {
  const out = new Uint8Array(size);
  let v = n;
  for (let i = size - 1; i >= 0; i--) {
    out[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  return out;
}

export function base58checkAddress(version: number, versionBytes: 1 | 2, hash: Uint8Array): string {
  const prefix = versionBytes === 2 ? Uint8Array.of(version >> 8, version & 0xff) : Uint8Array.of(version);
  return b58check.encode(Uint8Array.of(...prefix, ...hash));
}

export function segwitAddress(hrp: string, version: number, program: Uint8Array): string {
  const words = [version, ...bech32.toWords(program)];
  return version === 0 ? bech32.encode(hrp, words) : bech32m.encode(hrp, words);
}

// Cashaddr (spec "cashaddr.md" of the Bitcoin Cash specification): bech32's alphabet, a 40-bit BCH code.
const CASH_CHARSET = 'qpzry9x8gf2tvdw0s3jn54khce6mua7l';
const CASH_GENERATORS = [0x98f2bc8e61n, 0x79b76d99e2n, 0xf33e5fb3c4n, 0xae2eabe2a8n, 0x1e4f43e470n];

function cashPolymod(values: readonly number[]): bigint {
  let c = 1n;
  for (const value of values) {
    const top = c >> 35n;
    c = ((c & 0x07ffffffffn) << 5n) ^ BigInt(value);
    for (let i = 0; i < 5; i++) if ((top >> BigInt(i)) & 1n) c ^= CASH_GENERATORS[i] as bigint;
  }
  return c ^ 1n;
}

/** `type` 0 = P2PKH, 1 = P2SH; a 20-byte hash (size code 0). */
export function cashAddress(prefix: string, type: 0 | 1, hash: Uint8Array): string {
  const words = bech32.toWords(Uint8Array.of(type << 3, ...hash));
  const prefixWords = [...prefix].map((c) => c.charCodeAt(0) & 31);
  const mod = cashPolymod([...prefixWords, 0, ...words, 0, 0, 0, 0, 0, 0, 0, 0]);
  const checksum = Array.from({ length: 8 }, (_, i) => Number((mod >> BigInt(5 * (7 - i))) & 31n));
  return `${prefix}:${[...words, ...checksum].map((w) => CASH_CHARSET.charAt(w)).join('')}`;
}

// Output descriptor checksum (BIP-380), as Core appends to every `desc` it prints.
const DESC_INPUT_CHARSET = '0123456789()[],\'/*abcdefgh@:$%{}IJKLMNOPQRSTUVWXYZ&+-.;<=>?!^_|~ijklmnopqrstuvwxyzABCDEFGH`#"\\ ';
const DESC_GENERATORS = [0xf5dee51989n, 0xa9fdca3312n, 0x1bab10e32dn, 0x3706b1677an, 0x644d626ffdn];

function descPolymod(symbols: readonly number[]): bigint {
  let chk = 1n;
  for (const value of symbols) {
    const top = chk >> 35n;
    chk = ((chk & 0x7ffffffffn) << 5n) ^ BigInt(value);
    for (let i = 0; i < 5; i++) if ((top >> BigInt(i)) & 1n) chk ^= DESC_GENERATORS[i] as bigint;
  }
  return chk;
}

export function descriptorChecksum(descriptor: string): string {
  const symbols: number[] = [];
  let groups: number[] = [];
  for (const c of descriptor) {
    const v = DESC_INPUT_CHARSET.indexOf(c);
    if (v < 0) throw new Error(`character ${JSON.stringify(c)} cannot appear in a descriptor`);
    symbols.push(v & 31);
    groups.push(v >> 5);
    if (groups.length === 3) {
      symbols.push((groups[0] as number) * 9 + (groups[1] as number) * 3 + (groups[2] as number));
      groups = [];
    }
  }
  if (groups.length === 1) symbols.push(groups[0] as number);
  else if (groups.length === 2) symbols.push((groups[0] as number) * 3 + (groups[1] as number));
  const checksum = descPolymod([...symbols, 0, 0, 0, 0, 0, 0, 0, 0]) ^ 1n;
  return Array.from({ length: 8 }, (_, i) => CASH_CHARSET.charAt(Number((checksum >> BigInt(5 * (7 - i))) & 31n))).join('');
}

export const withChecksum = (descriptor: string): string => `${descriptor}#${descriptorChecksum(descriptor)}`;

/** A script push of `data` (direct push or OP_PUSHDATA1). */
export function pushData(data: Uint8Array): Uint8Array {
  if (data.length < 0x4c) return Uint8Array.of(data.length, ...data);
  if (data.length <= 0xff) return Uint8Array.of(0x4c, data.length, ...data);
  throw new Error('push too large');
}

/** BIP-34 height push of a coinbase script (CScriptNum, minimal). */
export function scriptNum(n: number): Uint8Array {
  if (n === 0) return Uint8Array.of(0);
  if (n >= 1 && n <= 16) return Uint8Array.of(0x50 + n);
  const bytes: number[] = [];
  let v = n;
  while (v > 0) {
    bytes.push(v & 0xff);
    v = Math.floor(v / 256);
  }
  if (((bytes[bytes.length - 1] as number) & 0x80) !== 0) bytes.push(0);
  return pushData(Uint8Array.from(bytes));
}

/** Decodes a cashaddr string (with or without prefix) to its type (0 P2PKH, 1 P2SH) and hash; no checksum check. */
export function decodeCashAddress(address: string, prefix: string): { type: number; hash: Uint8Array } | undefined {
  const lower = address.toLowerCase();
  const body = lower.startsWith(`${prefix}:`) ? lower.slice(prefix.length + 1) : lower.includes(':') ? undefined : lower;
  if (body === undefined || body.length < 42) return undefined;
  const words = [...body].map((c) => CASH_CHARSET.indexOf(c));
  if (words.includes(-1)) return undefined;
  const payload = bech32.fromWordsUnsafe(words.slice(0, -8));
  if (payload?.length !== 21) return undefined;
  return { type: (payload[0] as number) >> 3, hash: payload.subarray(1) };
}

/** Decodes base58check to version and 20-byte hash; undefined when it is not one. */
export function decodeBase58Address(address: string, versionBytes: 1 | 2): { version: number; hash: Uint8Array } | undefined {
  let raw: Uint8Array;
  try {
    raw = b58check.decode(address);
  } catch {
    return undefined;
  }
  if (raw.length !== versionBytes + 20) return undefined;
  const version = versionBytes === 2 ? ((raw[0] as number) << 8) | (raw[1] as number) : (raw[0] as number);
  return { version, hash: raw.subarray(versionBytes) };
}

/** Decodes a segwit address to witness version and program; undefined when it is not one. */
export function decodeSegwitAddress(address: string, hrp: string): { version: number; program: Uint8Array } | undefined {
  const lower = address.toLowerCase();
  if (!lower.startsWith(`${hrp}1`)) return undefined;
  const decoded = bech32.decodeUnsafe(lower as `${string}1${string}`) ?? bech32m.decodeUnsafe(lower as `${string}1${string}`);
  if (!decoded || decoded.prefix !== hrp) return undefined;
  const [version = -1, ...rest] = decoded.words;
  const program = bech32.fromWordsUnsafe(rest);
  return program ? { version, program } : undefined;
}
