/**
 * Address and transaction-id validation for every chain in chains.ts. Pure: no I/O, never throws.
 *
 * A validator returns either the canonical spelling (so that two spellings of one address or
 * transaction id match the same subscription) or one English sentence a person can act on: it names
 * the chain and network, what is wrong, and what was expected.
 */

import { createHash } from 'node:crypto';
import { keccak_256 } from '@noble/hashes/sha3';
import { type BytesCoder, base58, base58xrp, bech32, bech32m, createBase58check, hex } from '@scure/base';
import { type Blockchain, CHAINS, type ChainFamily, isBlockchain, isNetwork, type Network, networksText, supportsNetwork } from './chains.ts';

export type Validated = { ok: true; normalized: string } | { ok: false; message: string };

/** Longer than any address or id we know (cashaddr with a 512-bit hash is 112 chars); bounds work. */
const MAX_LENGTH = 128;
const SHOWN_LENGTH = 60;

/** SHA-256 by Node's native implementation: a base58check address takes two, and blocks convert thousands. */
const sha256 = (data: Uint8Array): Uint8Array => createHash('sha256').update(data).digest();
const b58check = createBase58check(sha256);
const ok = (normalized: string): Validated => ({ ok: true, normalized });
const fail = (message: string): Validated => ({ ok: false, message });

/** Quotes user input for a message: bounded, and invisible or line-breaking characters escaped so
 * the message stays one readable line whatever was sent. */
function show(value: string): string {
  const chars = Array.from(value);
  const cut = chars.length > SHOWN_LENGTH ? `${chars.slice(0, SHOWN_LENGTH - 3).join('')}...` : value;
  const escaped = cut.replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu, (c) => `\\u{${(c.codePointAt(0) ?? 0).toString(16)}}`);
  return `'${escaped}'`;
}

/** Checks what every validator needs, returning a message when something is off. Arguments are
 * `unknown` because callers may be plain JavaScript or unvalidated JSON. */
function checkInput(kind: string, blockchain: unknown, network: unknown, value: unknown): string | undefined {
  if (typeof blockchain !== 'string' || !isBlockchain(blockchain)) {
    return `Unknown blockchain ${show(String(blockchain))}: expected one of ${Object.keys(CHAINS).join(', ')}.`;
  }
  if (typeof network !== 'string' || !isNetwork(network) || !supportsNetwork(blockchain, network)) {
    return `${blockchain} has no network ${show(String(network))}: expected ${networksText(blockchain)}.`;
  }
  const label = `${blockchain} ${network} ${kind}`;
  const aLabel = `${/^(?:[aeiou]|xrp)/.test(blockchain) ? 'an' : 'a'} ${label}`; // "an ethereum", "an xrp"
  if (typeof value !== 'string') return `Expected ${aLabel} as a string, but got ${value === null ? 'null' : typeof value}.`;
  if (value.length === 0) return `Expected ${aLabel}, but got an empty string.`;
  if (value.length > MAX_LENGTH) return `${show(value)} is ${value.length} characters long; no ${label} is longer than ${MAX_LENGTH} characters.`;
  // Rejected rather than trimmed: silently editing an identifier hides a client bug.
  if (value.trim() !== value) return `${show(value)} has leading or trailing whitespace; remove it, no ${label} contains any.`;
  return undefined;
}

/** Decodes base58 + 4-byte double-sha256 checksum. Returns the payload even when the checksum is
 * wrong (`valid: false`) so callers can say "typo" instead of "not an address" when the shape fits. */
function unbase58(coder: BytesCoder, s: string, payloadLength: number): { payload: Uint8Array; valid: boolean } | undefined {
  let raw: Uint8Array;
  try {
    raw = coder.decode(s);
  } catch {
    return undefined;
  }
  if (raw.length !== payloadLength + 4) return undefined;
  const payload = raw.subarray(0, payloadLength);
  const sum = sha256(sha256(payload));
  return { payload, valid: raw.subarray(payloadLength).every((byte, i) => byte === sum[i]) };
}

const TYPO = 'its checksum does not match, so it probably contains a typo';

function evmAddress(label: string, s: string): Validated {
  if (!/^0x[0-9a-fA-F]{40}$/.test(s)) {
    return fail(`${show(s)} is not a valid ${label} address: expected 0x followed by 40 hexadecimal characters.`);
  }
  const body = s.slice(2);
  const lower = body.toLowerCase();
  // EIP-55: a letter is upper case exactly when the matching nibble of keccak256(lower-case hex) is >= 8.
  // Single-case bodies carry no checksum and are accepted, as every wallet does.
  if (body !== lower && body !== body.toUpperCase()) {
    const hash = hex.encode(keccak_256(lower));
    const matches = [...body].every((c, i) => c === (Number.parseInt(hash.charAt(i), 16) >= 8 ? c.toUpperCase() : c.toLowerCase()));
    if (!matches) {
      return fail(`${show(s)} is not a valid ${label} address: its mixed-case EIP-55 checksum does not match, so it probably contains a typo.`);
    }
  }
  return ok(`0x${lower}`);
}

function tronAddress(label: string, s: string): Validated {
  const hexForm = /^(?:0x)?(41[0-9a-fA-F]{40})$/.exec(s);
  if (hexForm?.[1]) return ok(b58check.encode(hex.decode(hexForm[1].toLowerCase())));
  const decoded = s.startsWith('T') ? unbase58(base58, s, 21) : undefined;
  if (decoded && decoded.payload[0] === 0x41) {
    return decoded.valid ? ok(s) : fail(`${show(s)} is not a valid ${label} address: ${TYPO}.`);
  }
  return fail(
    `${show(s)} is not a valid ${label} address: expected a base58 address starting with T (34 characters) or its hex form, 41 followed by 40 hexadecimal characters.`,
  );
}

function xrpAddress(label: string, s: string): Validated {
  // X-addresses pack a destination tag into the address; we watch accounts, so insist on the account.
  if (/^[XT]/.test(s) && s.length === 47) {
    return fail(`${show(s)} is an X-address; use the classic ${label} address of the account instead (it starts with r).`);
  }
  const decoded = s.startsWith('r') ? unbase58(base58xrp, s, 21) : undefined;
  if (decoded && decoded.payload[0] === 0x00) {
    return decoded.valid ? ok(s) : fail(`${show(s)} is not a valid ${label} address: ${TYPO}.`);
  }
  return fail(`${show(s)} is not a valid ${label} address: expected a classic address, r followed by 24 to 34 base58 characters.`);
}

interface UtxoNet {
  versions: readonly number[]; // base58check versions; for bitcoin-cash ordered [P2PKH, P2SH]
  hrps?: readonly string[]; // segwit human-readable parts (BIP-173)
  cash?: readonly string[]; // cashaddr prefixes; the first is the one normalized addresses carry
  forms: string; // the accepted forms as a person recognises them (leading characters), for messages
}
// Zcash uses two-byte base58 versions; every other chain one.
type UtxoChain = { versionBytes?: 2; mainnet: UtxoNet; testnet: UtxoNet };

const withSegwit = (legacy: string, segwit: string) => `a legacy address starting with ${legacy}, or a segwit address starting with ${segwit}`;
const withCash = (prefix: string, legacy: string) =>
  `a cashaddr address such as ${prefix}:q... or ${prefix}:p... (prefix optional), or a legacy address starting with ${legacy}`;

const UTXO: Readonly<Record<string, UtxoChain>> = {
  bitcoin: {
    mainnet: { versions: [0x00, 0x05], hrps: ['bc'], forms: withSegwit('1 or 3', 'bc1') },
    testnet: { versions: [0x6f, 0xc4], hrps: ['tb', 'bcrt'], forms: withSegwit('m, n or 2', 'tb1 or bcrt1') },
  },
  litecoin: {
    mainnet: { versions: [0x30, 0x32, 0x05], hrps: ['ltc'], forms: withSegwit('L, M or 3', 'ltc1') },
    testnet: { versions: [0x6f, 0x3a, 0xc4], hrps: ['tltc', 'rltc'], forms: withSegwit('m, n, Q or 2', 'tltc1 or rltc1') },
  },
  dogecoin: {
    mainnet: { versions: [0x1e, 0x16], forms: 'a base58 address starting with D, 9 or A' },
    testnet: { versions: [0x71, 0xc4], forms: 'a base58 address starting with n or 2' },
  },
  dash: {
    mainnet: { versions: [0x4c, 0x10], forms: 'a base58 address starting with X or 7' },
    testnet: { versions: [0x8c, 0x13], forms: 'a base58 address starting with y, 8 or 9' },
  },
  zcash: {
    versionBytes: 2,
    mainnet: { versions: [0x1cb8, 0x1cbd], forms: 'a transparent address starting with t1 or t3' },
    testnet: { versions: [0x1d25, 0x1cba], forms: 'a transparent address starting with tm or t2' },
  },
  'bitcoin-cash': {
    mainnet: { versions: [0x00, 0x05], cash: ['bitcoincash'], forms: withCash('bitcoincash', '1 or 3') },
    testnet: { versions: [0x6f, 0xc4], cash: ['bchtest', 'bchreg'], forms: withCash('bchtest', 'm, n or 2') },
  },
};

/** A defect found in something that clearly tries to be an address of this chain and network. */
type Parsed = string | { problem: string } | undefined;

function parseBase58(chain: UtxoChain, net: UtxoNet, s: string): Parsed {
  const versionBytes = chain.versionBytes ?? 1;
  const decoded = unbase58(base58, s, versionBytes + 20);
  if (!decoded) return undefined;
  const [first = 0, second = 0] = decoded.payload;
  const version = versionBytes === 2 ? (first << 8) | second : first;
  if (!net.versions.includes(version)) return undefined;
  if (!decoded.valid) return { problem: TYPO };
  if (!net.cash?.[0]) return s;
  // bitcoin-cash: store the cashaddr form, so legacy and cashaddr spellings are one subscription.
  const type = net.versions.indexOf(version); // 0 = P2PKH, 1 = P2SH; size code 0 = 160 bits
  return cashaddrEncode(net.cash[0], Uint8Array.of(type << 3, ...decoded.payload.subarray(1)));
}

/** BIP-173 / BIP-350 segwit address. */
function parseSegwit(net: UtxoNet, s: string): Parsed {
  const hrp = s.slice(0, Math.max(0, s.lastIndexOf('1'))).toLowerCase();
  if (!hrp || !net.hrps?.includes(hrp)) return undefined;
  const lower = s.toLowerCase();
  if (s !== lower && s !== s.toUpperCase()) return { problem: 'it mixes upper- and lower-case letters, which bech32 does not allow' };
  const asBech32 = bech32.decodeUnsafe(lower);
  const asBech32m = bech32m.decodeUnsafe(lower);
  const decoded = asBech32 ?? asBech32m;
  if (!decoded) return { problem: `its bech32 checksum does not match or it contains characters bech32 does not use, so it probably contains a typo` };
  const [version = -1, ...rest] = decoded.words;
  const program = bech32.fromWordsUnsafe(rest);
  if (version > 16 || version < 0 || !program) return { problem: 'it does not contain a valid segwit witness program' };
  if (version === 0 && !asBech32) return { problem: 'witness version 0 must be encoded with bech32, not bech32m (BIP-350)' };
  if (version > 0 && !asBech32m) return { problem: `witness version ${version} must be encoded with bech32m, not bech32 (BIP-350)` };
  const size = program.length;
  if (version === 0 ? size !== 20 && size !== 32 : size < 2 || size > 40) {
    return { problem: `a version ${version} witness program must be ${version === 0 ? '20 or 32' : '2 to 40'} bytes long, not ${size}` };
  }
  return lower;
}

// Cashaddr (BCH spec "cashaddr.md"): bech32's alphabet and 5-bit grouping, a 40-bit BCH checksum.
const CASH_CHARSET = 'qpzry9x8gf2tvdw0s3jn54khce6mua7l';
const CASH_GENERATORS = [0x98f2bc8e61n, 0x79b76d99e2n, 0xf33e5fb3c4n, 0xae2eabe2a8n, 0x1e4f43e470n];
/** Hash size in bytes by the version byte's low three bits. */
const CASH_HASH_SIZES = [20, 24, 28, 32, 40, 48, 56, 64];

/**
 * The 40-bit BCH-code checksum that cashaddr and output descriptors (BIP380, domain/wallet-keys.ts) share,
 * each with its own generators; the caller applies the final xor.
 */
export function bchPolymod(generators: readonly bigint[], values: readonly number[]): bigint {
  let c = 1n;
  for (const value of values) {
    const top = c >> 35n;
    c = ((c & 0x07ffffffffn) << 5n) ^ BigInt(value);
    generators.forEach((generator, i) => {
      if ((top >> BigInt(i)) & 1n) c ^= generator;
    });
  }
  return c;
}

const cashPolymod = (values: readonly number[]): bigint => bchPolymod(CASH_GENERATORS, values) ^ 1n;

/** The checksum covers the lower 5 bits of each prefix character, a zero separator, then the data. */
const cashPrefixWords = (prefix: string): number[] => [...prefix].map((c) => c.charCodeAt(0) & 31);

function cashaddrEncode(prefix: string, payload: Uint8Array): string {
  // bech32.toWords is the same 8-to-5-bit regrouping (zero padded) that cashaddr specifies.
  const words = bech32.toWords(payload);
  const mod = cashPolymod([...cashPrefixWords(prefix), 0, ...words, 0, 0, 0, 0, 0, 0, 0, 0]);
  const checksum = Array.from({ length: 8 }, (_, i) => Number((mod >> BigInt(5 * (7 - i))) & 31n));
  return `${prefix}:${[...words, ...checksum].map((w) => CASH_CHARSET.charAt(w)).join('')}`;
}

function parseCashaddr(net: UtxoNet, s: string): Parsed {
  if (!net.cash) return undefined;
  const lower = s.toLowerCase();
  const colon = lower.indexOf(':');
  const body = lower.slice(colon + 1);
  // Without a prefix the network cannot be read off the string: try each of this network's prefixes.
  const prefixes = colon === -1 ? net.cash : net.cash.filter((p) => p === lower.slice(0, colon));
  const words = [...body].map((c) => CASH_CHARSET.indexOf(c));
  // Report defects only for strings that plainly try to be cashaddr, else another form may fit.
  const plausible = colon !== -1 || /^[qp]/.test(body);
  if (prefixes.length === 0 || !plausible) return undefined;
  if (words.length < 42 || words.includes(-1)) {
    return { problem: 'cashaddr expects 42 or more characters from the bech32 alphabet (no 1, b, i or o) after the prefix' };
  }
  if (s !== lower && s !== s.toUpperCase()) return { problem: 'it mixes upper- and lower-case letters, which cashaddr does not allow' };
  const prefix = prefixes.find((p) => cashPolymod([...cashPrefixWords(p), 0, ...words]) === 0n);
  if (!prefix) return { problem: TYPO };
  const payload = bech32.fromWordsUnsafe(words.slice(0, -8));
  const version = payload?.[0] ?? 0x80;
  if (!payload || version & 0x80 || payload.length - 1 !== CASH_HASH_SIZES[version & 7]) {
    return { problem: 'its version byte does not match the length of its hash' };
  }
  const type = version >> 3;
  if (type > 1) return { problem: `it has address type ${type}, but only P2PKH (q...) and P2SH (p...) addresses can be watched` };
  return `${prefix}:${body}`;
}

function parseUtxo(chain: UtxoChain, net: UtxoNet, s: string): Parsed {
  const results = [parseBase58(chain, net, s), parseSegwit(net, s), parseCashaddr(net, s)];
  return results.find((r) => typeof r === 'string') ?? results.find((r) => r !== undefined);
}

function utxoAddress(label: string, s: string, blockchain: Blockchain, network: Network): Validated {
  const chain = UTXO[blockchain];
  if (!chain) return fail(`Addresses of ${blockchain} cannot be validated: no address rules are known for it.`);
  const [thisNet, otherNet] = network === 'mainnet' ? [chain.mainnet, chain.testnet] : [chain.testnet, chain.mainnet];
  const mine = parseUtxo(chain, thisNet, s);
  if (typeof mine === 'string') return ok(mine);
  // A valid address of the sibling network beats a defect report: it is the likelier explanation.
  if (typeof parseUtxo(chain, otherNet, s) === 'string') {
    const other = network === 'mainnet' ? 'testnet' : 'mainnet';
    return fail(`${show(s)} is a ${blockchain} ${other} address, but this request is for ${label}.`);
  }
  if (mine) return fail(`${show(s)} is not a valid ${label} address: ${mine.problem}.`);
  if (blockchain === 'zcash' && /^(?:zs|zc|zt|u1|utest1)/.test(s)) {
    return fail(`${show(s)} is a zcash shielded or unified address, but only transparent ${label} addresses can be watched: expected ${thisNet.forms}.`);
  }
  return fail(`${show(s)} is not a valid ${label} address: expected ${thisNet.forms}.`);
}

/** Every chain's id is a 32-byte hash in hex; they differ in the 0x prefix and the canonical case. */
function hexTxid(label: string, s: string, prefix: 'required' | 'optional' | 'none', upper = false): Validated {
  const has0x = s.startsWith('0x');
  const body = has0x && prefix !== 'none' ? s.slice(2) : s;
  const expected = { required: '0x followed by 64', optional: '64 (optionally prefixed with 0x)', none: '64' }[prefix];
  let why: string | undefined;
  if (prefix === 'none' && has0x && /^[0-9a-fA-F]{64}$/.test(s.slice(2))) why = 'it must not start with 0x';
  else if (!/^[0-9a-fA-F]*$/.test(body)) why = 'it contains characters that are not hexadecimal';
  else if (body.length !== 64) why = `it has ${body.length} hexadecimal characters`;
  else if (prefix === 'required' && !has0x) why = 'the 0x prefix is missing';
  if (why) return fail(`${show(s)} is not a valid ${label} transaction id: ${why}; expected ${expected} hexadecimal characters.`);
  return ok(upper ? body.toUpperCase() : `${prefix === 'required' ? '0x' : ''}${body.toLowerCase()}`);
}

type Check = (label: string, value: string, blockchain: Blockchain, network: Network) => Validated;

const ADDRESS_CHECKS: Readonly<Record<ChainFamily, Check>> = { evm: evmAddress, tron: tronAddress, xrp: xrpAddress, utxo: utxoAddress };

const TXID_CHECKS: Readonly<Record<ChainFamily, Check>> = {
  evm: (label, value) => hexTxid(label, value, 'required'),
  tron: (label, value) => hexTxid(label, value, 'optional'),
  xrp: (label, value) => hexTxid(label, value, 'none', true), // rippled prints hashes in upper case
  utxo: (label, value) => hexTxid(label, value, 'none'),
};

function run(kind: string, checks: Readonly<Record<ChainFamily, Check>>, blockchain: Blockchain, network: Network, value: string): Validated {
  // try/catch is the last line of defence for "never throws": a bug becomes a failed validation, not a 500.
  try {
    const bad = checkInput(kind, blockchain, network, value);
    return bad ? fail(bad) : checks[CHAINS[blockchain].family](`${blockchain} ${network}`, value, blockchain, network);
  } catch (error) {
    return fail(`The ${kind} could not be checked because of an internal error (${String(error)}); please report this.`);
  }
}

export function validateAddress(blockchain: Blockchain, network: Network, address: string): Validated {
  return run('address', ADDRESS_CHECKS, blockchain, network, address);
}

export function validateTransactionId(blockchain: Blockchain, network: Network, txid: string): Validated {
  return run('transaction id', TXID_CHECKS, blockchain, network, txid);
}
