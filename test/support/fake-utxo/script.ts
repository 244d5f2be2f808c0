/**
 * Output scripts of the fake nodes: building the standard ones and describing any script the way the
 * nodes do (type name, address, asm, descriptor), and the fake wallet's keys, signatures and scriptSigs.
 * Keys are deterministic pseudo keys (the fake verifies no signature), but every byte has the shape of
 * the real thing, so the raw transactions parse and Core-style asm decodes the sighash.
 */
import { sha256 } from '@noble/hashes/sha256';
import type { DialectParams } from './dialects.ts';
import { base58checkAddress, cashAddress, concat, hash160, pushData, segwitAddress, toHex, utf8, withChecksum } from './encoding.ts';

export type AddressType = 'p2pkh' | 'p2sh' | 'p2wpkh';

export interface ScriptInfo {
  /** Core's output type name. */
  type: string;
  /** The one address of a standard script, as the node prints it. */
  address?: string;
  asm: string;
  hex: string;
  /** Core >= 23 `desc` (with checksum). */
  desc: string;
  /** `reqSigs` of pre-22 Core and the forks (1 for the single-key types). */
  reqSigs?: number;
}

export const p2pkhScript = (hash: Uint8Array): Uint8Array => concat(Uint8Array.of(0x76, 0xa9, 0x14), hash, Uint8Array.of(0x88, 0xac));
export const p2shScript = (hash: Uint8Array): Uint8Array => concat(Uint8Array.of(0xa9, 0x14), hash, Uint8Array.of(0x87));
export const p2wpkhScript = (hash: Uint8Array): Uint8Array => concat(Uint8Array.of(0x00, 0x14), hash);
export const nullDataScript = (data: Uint8Array): Uint8Array => concat(Uint8Array.of(0x6a), pushData(data));

export function addressOf(params: DialectParams, kind: AddressType, hash: Uint8Array): string {
  if (kind === 'p2wpkh') {
    if (!params.hrp) throw new Error(`${params.dialect} has no segwit addresses`);
    return segwitAddress(params.hrp, 0, hash);
  }
  const type = kind === 'p2pkh' ? 0 : 1;
  if (params.cashPrefix) return cashAddress(params.cashPrefix, type, hash);
  return base58checkAddress(type === 0 ? params.p2pkh : params.p2sh, params.versionBytes, hash);
}

export const bytesEqual = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && a.every((x, i) => x === b[i]);

/** Core's ScriptToAsmStr for the data pushes the fake produces (pushes of <= 4 bytes print as numbers). */
function pushesAsm(script: Uint8Array, from: number): string {
  const parts: string[] = [];
  let i = from;
  while (i < script.length) {
    const op = script[i] as number;
    let len: number;
    let start: number;
    if (op > 0 && op < 0x4c) {
      len = op;
      start = i + 1;
    } else if (op === 0x4c) {
      len = script[i + 1] as number;
      start = i + 2;
    } else {
      parts.push(op === 0 ? '0' : `OP_UNKNOWN`);
      i += 1;
      continue;
    }
    const data = script.subarray(start, start + len);
    parts.push(len <= 4 ? scriptNumText(data) : toHex(data));
    i = start + len;
  }
  return parts.join(' ');
}

function scriptNumText(data: Uint8Array): string {
  if (data.length === 0) return '0';
  let v = 0n;
  data.forEach((b, i) => {
    v |= BigInt(i === data.length - 1 ? b & 0x7f : b) << BigInt(8 * i);
  });
  return (((data[data.length - 1] as number) & 0x80) !== 0 ? -v : v).toString();
}

export function describeScript(params: DialectParams, script: Uint8Array): ScriptInfo {
  const hexText = toHex(script);
  const raw = (): ScriptInfo => ({ type: 'nonstandard', asm: pushesAsm(script, 0), hex: hexText, desc: withChecksum(`raw(${hexText})`) });
  const standard = (type: string, address: string, asm: string): ScriptInfo => ({
    type,
    address,
    asm,
    hex: hexText,
    desc: withChecksum(`addr(${address})`),
    reqSigs: 1,
  });
  const n = script.length;
  if (n === 25 && script[0] === 0x76 && script[1] === 0xa9 && script[2] === 0x14 && script[23] === 0x88 && script[24] === 0xac) {
    const h = script.subarray(3, 23);
    return standard('pubkeyhash', addressOf(params, 'p2pkh', h), `OP_DUP OP_HASH160 ${toHex(h)} OP_EQUALVERIFY OP_CHECKSIG`);
  }
  if (n === 23 && script[0] === 0xa9 && script[1] === 0x14 && script[22] === 0x87) {
    const h = script.subarray(2, 22);
    return standard('scripthash', addressOf(params, 'p2sh', h), `OP_HASH160 ${toHex(h)} OP_EQUAL`);
  }
  if (params.hrp && n === 22 && script[0] === 0x00 && script[1] === 0x14) {
    const h = script.subarray(2);
    return standard('witness_v0_keyhash', segwitAddress(params.hrp, 0, h), `0 ${toHex(h)}`);
  }
  if (n >= 1 && script[0] === 0x6a) {
    return { type: 'nulldata', asm: `OP_RETURN ${pushesAsm(script, 1)}`.trimEnd(), hex: hexText, desc: withChecksum(`raw(${hexText})`) };
  }
  if ((n === 35 && script[0] === 0x21) || (n === 67 && script[0] === 0x41)) {
    if (script[n - 1] !== 0xac) return raw();
    const pubkey = script.subarray(1, n - 1);
    // Old Core and the forks print the P2PKH address of a bare pubkey output; Core >= 22 prints none.
    return {
      type: 'pubkey',
      address: addressOf(params, 'p2pkh', hash160(pubkey)),
      asm: `${toHex(pubkey)} OP_CHECKSIG`,
      hex: hexText,
      desc: withChecksum(`pk(${toHex(pubkey)})`),
      reqSigs: 1,
    };
  }
  return raw();
}

/** The fake wallet's key number `index`: a compressed-pubkey-shaped value and its hash160. */
export function fakeKey(seed: string, index: number): { pubkey: Uint8Array; hash: Uint8Array } {
  const pubkey = concat(Uint8Array.of(0x02 + (index % 2)), sha256(utf8(`herald-fake-utxo-key/${seed}/${index}`)));
  return { pubkey, hash: hash160(pubkey) };
}

/** A DER-shaped ECDSA signature plus sighash byte, deterministic in what it "signs". */
export function fakeSignature(message: string, sighash: number): Uint8Array {
  const r = sha256(utf8(`r/${message}`));
  const s = sha256(utf8(`s/${message}`));
  r[0] = ((r[0] as number) & 0x7f) | 0x01; // positive, no padding byte needed
  s[0] = ((s[0] as number) & 0x3f) | 0x01; // low-S
  return concat(Uint8Array.of(0x30, 0x44, 0x02, 0x20), r, Uint8Array.of(0x02, 0x20), s, Uint8Array.of(sighash));
}

const SIGHASH_NAMES: Record<number, string> = { 1: 'ALL', 65: 'ALL|FORKID' };

/** Core's asm of a scriptSig (signature pushes end in the decoded sighash, e.g. "[ALL]"). */
export function scriptSigAsm(parts: readonly Uint8Array[]): string {
  return parts
    .map((p) => {
      const isSig = p.length > 8 && p[0] === 0x30;
      const name = isSig ? SIGHASH_NAMES[p[p.length - 1] as number] : undefined;
      return name ? `${toHex(p.subarray(0, p.length - 1))}[${name}]` : toHex(p);
    })
    .join(' ');
}
