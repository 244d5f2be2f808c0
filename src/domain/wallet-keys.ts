/**
 * Wallet keys: an account's extended public key (xpub, ypub, zpub, tpub, upub, vpub, Ltub, Mtub, ...) or a
 * BIP380 output descriptor (pkh, sh(wpkh), wpkh, tr over such a key), parsed and checked, and the
 * addresses derived from it (docs/concepts/wallet-keys.md). Pure: no I/O, never throws; a key or descriptor
 * that cannot be used comes back as one sentence a person can act on, naming what is wrong.
 *
 * Derivation is @scure/bip32 (audited); addresses are encoded here from the derived public key and then
 * put through validateAddress, so that a derived address is spelt exactly as a subscribed one is (the
 * canonical form matching compares: cashaddr for bitcoin-cash, lower-case bech32).
 */
import { createHash, hash } from 'node:crypto';
import { schnorr, secp256k1 } from '@noble/curves/secp256k1';
import { keccak_256 } from '@noble/hashes/sha3';
import { createBase58check, hex } from '@scure/base';
import { HARDENED_OFFSET, HDKey } from '@scure/bip32';
import { bchPolymod, validateAddress } from './addresses.ts';
import { type Blockchain, CHAINS, type Network } from './chains.ts';
import { addTweak, isCurvePoint } from './child-keys.ts';
import { segwitAddress } from './segwit-address.ts';

/** How the addresses of a key are scripted. The account chains have one form (their own address). */
export type ScriptType = 'legacy' | 'p2sh-segwit' | 'segwit' | 'taproot';
export const SCRIPT_TYPES: readonly ScriptType[] = ['legacy', 'p2sh-segwit', 'segwit', 'taproot'];

/** The chains a wallet key can be subscribed on; xrp has no BIP44 key in use here. */
export const WALLET_KEY_CHAINS: readonly Blockchain[] = [
  'bitcoin',
  'litecoin',
  'dogecoin',
  'dash',
  'bitcoin-cash',
  'zcash',
  'ethereum',
  'ethereum-classic',
  'binance-smart-chain',
  'tron',
];

/** One chain of derived addresses: the steps after the key, then the index. */
export interface KeyBranch {
  /** 0 receive, 1 change (the multipath form's second branch, or an xpub's /1). */
  change: 0 | 1;
  /** Unhardened steps between the key and the index, e.g. [0] for .../0/*. */
  steps: readonly number[];
}

/** A parsed, usable wallet key: public only, never a private key. */
export interface WalletKey {
  blockchain: Blockchain;
  network: Network;
  scriptType: ScriptType | 'account';
  /** The extended public key as given (its own prefix kept: it is what the customer knows it by). */
  extendedKey: string;
  /** The BIP32 path of the key from its master, when a descriptor gives the origin ("m/84'/0'/0'"). */
  origin: string | null;
  /** The receive branch, and the change branch where the key has one. */
  branches: readonly KeyBranch[];
  /** The key's compressed public key and chain code (what derivation reads: child-keys.ts). */
  publicKey: Uint8Array;
  chainCode: Uint8Array;
  /** The key as @scure/bip32's HDKey, built at first use (deriveAddress): a window is derived without it. */
  readonly hd: HDKey;
}

export type WalletKeyResult = { ok: true; key: WalletKey } | { ok: false; message: string };

/** An address derived from a wallet key, and where. */
export interface DerivedAddress {
  address: string;
  /** The origin (or "m" for the key itself) then the steps and index: "m/84'/0'/0'/0/5". */
  derivationPath: string;
  change: 0 | 1;
  index: number;
}

// -------------------------------------------------------------------------------------------------
// Extended-key version bytes (BIP32, SLIP-132). Each names a network and, for the prefixes that imply
// one, a script type; a private version is recognised only to refuse it.

interface KeyVersion {
  prefix: string;
  network: Network;
  scriptType: ScriptType | null; // null: plain xpub/tpub, legacy unless `derivation` says otherwise
  private: boolean;
  chains?: readonly Blockchain[]; // the chain-specific prefixes (Ltub, Mtub, dgub, ...)
}

/** Each key form: its public and private version, network, the script type its prefix implies, its chains. */
const KEY_FORMS: readonly [
  publicPrefix: string,
  publicVersion: number,
  privatePrefix: string,
  privateVersion: number,
  network: Network,
  scriptType: ScriptType | null,
  chains?: readonly Blockchain[],
][] = [
  ['xpub', 0x0488b21e, 'xprv', 0x0488ade4, 'mainnet', null],
  ['ypub', 0x049d7cb2, 'yprv', 0x049d7878, 'mainnet', 'p2sh-segwit'],
  ['zpub', 0x04b24746, 'zprv', 0x04b2430c, 'mainnet', 'segwit'],
  ['tpub', 0x043587cf, 'tprv', 0x04358394, 'testnet', null],
  ['upub', 0x044a5262, 'uprv', 0x044a4e28, 'testnet', 'p2sh-segwit'],
  ['vpub', 0x045f1cf6, 'vprv', 0x045f18bc, 'testnet', 'segwit'],
  ['Ltub', 0x019da462, 'Ltpv', 0x019d9cfe, 'mainnet', 'legacy', ['litecoin']],
  ['Mtub', 0x01b26ef6, 'Mtpv', 0x01b26792, 'mainnet', 'p2sh-segwit', ['litecoin']],
  ['ttub', 0x0436f6e1, 'ttpv', 0x0436ef7d, 'testnet', 'legacy', ['litecoin']],
  ['dgub', 0x02facafd, 'dgpv', 0x02fac398, 'mainnet', 'legacy', ['dogecoin']],
];

const VERSIONS = new Map<number, KeyVersion>(
  KEY_FORMS.flatMap(([publicPrefix, publicVersion, privatePrefix, privateVersion, network, scriptType, chains]) => [
    [publicVersion, { prefix: publicPrefix, network, scriptType, private: false, chains }],
    [privateVersion, { prefix: privatePrefix, network, scriptType, private: true, chains }],
  ]),
);

/** Script types each chain's addresses can take (the others have no segwit). */
const CHAIN_SCRIPT_TYPES: Partial<Record<Blockchain, readonly ScriptType[]>> = {
  bitcoin: SCRIPT_TYPES,
  litecoin: ['legacy', 'p2sh-segwit', 'segwit'],
  dogecoin: ['legacy'],
  dash: ['legacy'],
  'bitcoin-cash': ['legacy'],
  zcash: ['legacy'],
};

const PRIVATE_REFUSAL =
  'is a private key; herald needs only the public key (xpub, ypub, zpub, ...), and a private key must never leave your wallet: it was not stored';

const sha256 = (data: Uint8Array): Uint8Array => createHash('sha256').update(data).digest();
// One-shot hashes (no Hash object per call): an address per derived child.
const hash160 = (data: Uint8Array): Uint8Array => hash('ripemd160', hash('sha256', data, 'buffer'), 'buffer');
const b58check = createBase58check(sha256);

function show(value: string): string {
  const cut = value.length > 24 ? `${value.slice(0, 12)}...${value.slice(-8)}` : value;
  return `'${cut.replace(/[^\x20-\x7e]/g, '?')}'`;
}

/**
 * An extended public key of `blockchain` `network`. `derivation` chooses the script type of a plain
 * xpub/tpub (legacy by default); a prefix that implies one (ypub, zpub, Mtub, ...) must agree with it.
 * On the account chains the key is a BIP44 account key (m/44'/60'/a' or m/44'/195'/a'): addresses are
 * derived at /0/i (receive only).
 */
export function parseExtendedKey(blockchain: Blockchain, network: Network, text: string, derivation?: ScriptType): WalletKeyResult {
  const parsed = parseKeyText(blockchain, network, text, derivation);
  if (!parsed.ok) return parsed;
  const account = CHAINS[blockchain].family !== 'utxo';
  const branches: KeyBranch[] = account
    ? [{ change: 0, steps: [0] }]
    : [
        { change: 0, steps: [0] },
        { change: 1, steps: [1] },
      ];
  return { ok: true, key: withLazyHd({ ...parsed.key, origin: null, branches }) };
}

/** A parsed key without its branches, and what its HDKey is made of (withLazyHd). */
type KeyOnly = Omit<WalletKey, 'origin' | 'branches' | 'hd'> & { hdOptions: HDKeyOptions };
type HDKeyOptions = ConstructorParameters<typeof HDKey>[0];

/** The key with `hd` built at first use (the HDKey constructor's point decoding and hash160 cost as much as a few children). */
function withLazyHd(fields: Omit<WalletKey, 'hd'> & { hdOptions: HDKeyOptions }): WalletKey {
  const { hdOptions, ...key } = fields;
  let hd: HDKey | undefined;
  Object.defineProperty(key, 'hd', { enumerable: true, get: () => (hd ??= new HDKey(hdOptions)) });
  return key as WalletKey;
}

function parseKeyText(
  blockchain: Blockchain,
  network: Network,
  text: string,
  derivation: ScriptType | undefined,
): { ok: true; key: KeyOnly } | { ok: false; message: string; privateKey?: true } {
  if (!(WALLET_KEY_CHAINS as readonly string[]).includes(blockchain)) {
    return { ok: false, message: `Wallet keys cannot be subscribed on ${blockchain}: subscribe its addresses one by one instead.` };
  }
  if (typeof text !== 'string' || text.length === 0)
    return { ok: false, message: "extendedPublicKey is empty: give the account's extended public key (xpub...)." };
  let raw: Uint8Array;
  try {
    raw = b58check.decode(text);
  } catch {
    return {
      ok: false,
      message: `${show(text)} is not an extended public key: expected a base58 key such as xpub..., ypub..., zpub... (or tpub..., upub..., vpub... on testnet) with a valid checksum.`,
    };
  }
  if (raw.length !== 78) return { ok: false, message: `${show(text)} is not an extended public key: it decodes to ${raw.length} bytes, not 78.` };
  const versionNumber = ((raw[0] ?? 0) << 24) | ((raw[1] ?? 0) << 16) | ((raw[2] ?? 0) << 8) | (raw[3] ?? 0);
  const version = VERSIONS.get(versionNumber >>> 0);
  if (!version)
    return { ok: false, message: `${show(text)} has an unknown version prefix: expected xpub, ypub, zpub, tpub, upub, vpub or a prefix of ${blockchain}.` };
  if (version.private) return { ok: false, message: `The key given ${PRIVATE_REFUSAL}.`, privateKey: true };
  if (version.chains && !version.chains.includes(blockchain)) {
    return { ok: false, message: `A ${version.prefix} key belongs to ${version.chains.join(', ')}, not ${blockchain}.` };
  }
  // The account chains' wallets serialise their keys as xpub on every network (the coin type tells them
  // apart, not the prefix); the Bitcoin family's prefix names its network.
  if (version.network !== network && CHAINS[blockchain].family === 'utxo') {
    return {
      ok: false,
      message: `A ${version.prefix} key is for ${version.network === 'mainnet' ? 'mainnet' : 'testnet and regtest'}, but this request is for ${blockchain} ${network}.`,
    };
  }
  let scriptType: ScriptType | 'account' = version.scriptType ?? derivation ?? 'legacy';
  if (version.scriptType && derivation && derivation !== version.scriptType) {
    return {
      ok: false,
      message: `A ${version.prefix} key derives ${version.scriptType} addresses; derivation '${derivation}' contradicts it (use an xpub with derivation, or leave derivation out).`,
    };
  }
  if (CHAINS[blockchain].family === 'utxo') {
    const allowed = CHAIN_SCRIPT_TYPES[blockchain] ?? [];
    if (!allowed.includes(scriptType as ScriptType)) {
      return { ok: false, message: `${blockchain} has no ${scriptType} addresses: expected ${allowed.join(' or ')}.` };
    }
  } else {
    if (version.scriptType || derivation)
      return { ok: false, message: `${blockchain} keys have one address form: give an xpub (tpub on testnet) without derivation.` };
    scriptType = 'account';
  }
  let hdOptions: HDKeyOptions;
  try {
    hdOptions = hdKeyOptionsOf(raw, versionNumber >>> 0);
  } catch (error) {
    return { ok: false, message: `${show(text)} is not a usable extended public key: ${(error as Error).message}.` };
  }
  return {
    ok: true,
    key: {
      blockchain,
      network,
      scriptType,
      extendedKey: text,
      publicKey: hdOptions.publicKey as Uint8Array,
      chainCode: hdOptions.chainCode as Uint8Array,
      hdOptions,
    },
  };
}

/**
 * What HDKey.fromExtendedKey(text, { public: version, private: 0 }) builds its HDKey of, from the key's bytes
 * already decoded (its base58check decoding not done twice), with the same checks and errors: a private
 * key's marker, a depth of 0 with an index or parent, a public key that is not a point of the curve
 * (libsecp256k1's parser where it loads, else noble's, the HDKey constructor's own).
 */
function hdKeyOptionsOf(raw: Uint8Array, version: number): HDKeyOptions {
  const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
  const publicKey = raw.slice(45);
  // A private key's 0x00 marker: fromExtendedKey compares the version with the private one (0 here).
  if (publicKey[0] === 0) throw new Error('Version mismatch');
  const options = {
    versions: { public: version, private: 0 },
    depth: raw[4] as number,
    parentFingerprint: view.getUint32(5, false),
    index: view.getUint32(9, false),
    chainCode: raw.slice(13, 45),
    publicKey,
  };
  if (!options.depth && (options.parentFingerprint || options.index)) throw new Error('HDKey: zero depth with non-zero index/parent fingerprint');
  if (!isCurvePoint(publicKey)) new HDKey(options); // throws the constructor's own error
  return options;
}

// -------------------------------------------------------------------------------------------------
// Output descriptors (BIP380-386): pkh(KEY), sh(wpkh(KEY)), wpkh(KEY), tr(KEY), KEY = [origin]xpub/path/*.

const DESC_INPUT = '0123456789()[],\'/*abcdefgh@:$%{}IJKLMNOPQRSTUVWXYZ&+-.;<=>?!^_|~ijklmnopqrstuvwxyzABCDEFGH`#"\\ ';
const DESC_CHECKSUM = 'qpzry9x8gf2tvdw0s3jn54khce6mua7l';
const DESC_GENERATORS = [0xf5dee51989n, 0xa9fdca3312n, 0x1bab10e32dn, 0x3706b1677an, 0x644d626ffdn];

/** The BIP380 checksum of a descriptor (without its #), or undefined when it has a character outside the charset. */
export function descriptorChecksum(descriptor: string): string | undefined {
  const symbols: number[] = [];
  let groups: number[] = [];
  for (const c of descriptor) {
    const v = DESC_INPUT.indexOf(c);
    if (v < 0) return undefined;
    symbols.push(v & 31);
    groups.push(v >> 5);
    if (groups.length === 3) {
      symbols.push((groups[0] ?? 0) * 9 + (groups[1] ?? 0) * 3 + (groups[2] ?? 0));
      groups = [];
    }
  }
  if (groups.length === 1) symbols.push(groups[0] ?? 0);
  else if (groups.length === 2) symbols.push((groups[0] ?? 0) * 3 + (groups[1] ?? 0));
  const mod = bchPolymod(DESC_GENERATORS, [...symbols, 0, 0, 0, 0, 0, 0, 0, 0]) ^ 1n;
  return Array.from({ length: 8 }, (_, i) => DESC_CHECKSUM.charAt(Number((mod >> BigInt(5 * (7 - i))) & 31n))).join('');
}

const WRAPPERS: readonly { open: string; scriptType: ScriptType }[] = [
  { open: 'sh(wpkh(', scriptType: 'p2sh-segwit' },
  { open: 'pkh(', scriptType: 'legacy' },
  { open: 'wpkh(', scriptType: 'segwit' },
  { open: 'tr(', scriptType: 'taproot' },
];

/** A descriptor over one extended public key ending in `/*` (or `/<0;1>/*`), on a Bitcoin-family chain. */
export function parseDescriptor(blockchain: Blockchain, network: Network, text: string): WalletKeyResult {
  if (typeof text !== 'string' || text.length === 0)
    return { ok: false, message: 'descriptor is empty: give an output descriptor such as wpkh([fingerprint/84h/0h/0h]xpub.../<0;1>/*).' };
  if (text.length > 1000) return { ok: false, message: `descriptor is ${text.length} characters long; a single-key descriptor is under 250.` };
  if (CHAINS[blockchain].family !== 'utxo') {
    return { ok: false, message: `Output descriptors are for the Bitcoin-family chains; on ${blockchain} give the account's extendedPublicKey.` };
  }
  let body = text;
  const hash = text.indexOf('#');
  if (hash >= 0) {
    body = text.slice(0, hash);
    const given = text.slice(hash + 1);
    const expected = descriptorChecksum(body);
    if (expected === undefined) return { ok: false, message: 'descriptor has a character outside the descriptor character set.' };
    if (given !== expected)
      return {
        ok: false,
        message: `descriptor checksum #${given.slice(0, 8)} does not match: the descriptor has a typo (its checksum would be #${expected}).`,
      };
  }
  const wrapper = WRAPPERS.find((w) => body.startsWith(w.open));
  const closing = wrapper ? ')'.repeat(wrapper.open.split('(').length - 1) : '';
  if (!wrapper || !body.endsWith(closing)) {
    return {
      ok: false,
      message: 'descriptor must be pkh(KEY), sh(wpkh(KEY)), wpkh(KEY) or tr(KEY) with one extended public key; multisig and other scripts are not supported.',
    };
  }
  const inner = body.slice(wrapper.open.length, body.length - closing.length);
  const keyExpr = /^(?:\[([0-9a-fA-F]{8})((?:\/\d+['hH]?)*)\])?([1-9A-HJ-NP-Za-km-z]+)((?:\/[^/]+)*)$/.exec(inner);
  if (!keyExpr) {
    return { ok: false, message: 'descriptor key must be [fingerprint/origin path]xpub.../path/* (the origin optional), one key, no private key.' };
  }
  const [, , originPath = '', keyText = '', pathText = ''] = keyExpr;
  const path = pathText.split('/').slice(1);
  if (path.at(-1) !== '*')
    return {
      ok: false,
      message: 'descriptor key path must end with /* (the index of each derived address); a fixed key watches one address: subscribe it as an address.',
    };
  const steps = path.slice(0, -1);
  if (steps.some((s) => /['hH]$/.test(s)))
    return {
      ok: false,
      message:
        "descriptor has a hardened step after the extended public key; a public key cannot derive hardened children (move the step into the key's origin).",
    };
  const multipath = steps.findIndex((s) => s.startsWith('<'));
  let branches: KeyBranch[];
  const numbers = (list: string[]) => list.map((s) => (/^\d+$/.test(s) && Number(s) < HARDENED_OFFSET ? Number(s) : Number.NaN));
  if (multipath >= 0) {
    const m = /^<(\d+);(\d+)>$/.exec(steps[multipath] ?? '');
    if (!m || steps.filter((s) => s.startsWith('<')).length > 1)
      return { ok: false, message: 'descriptor multipath step must be the receive/change pair <0;1> (one per key).' };
    const before = numbers(steps.slice(0, multipath));
    const after = numbers(steps.slice(multipath + 1));
    if ([...before, ...after].some(Number.isNaN)) return { ok: false, message: 'descriptor key path has a step that is not a number below 2^31.' };
    branches = [0, 1].map((change) => ({ change: change as 0 | 1, steps: [...before, Number(m[change + 1]), ...after] }));
  } else {
    const plain = numbers(steps);
    if (plain.some(Number.isNaN)) return { ok: false, message: 'descriptor key path has a step that is not a number below 2^31.' };
    branches = [{ change: 0, steps: plain }];
  }
  const parsed = parseKeyText(blockchain, network, keyText, undefined);
  if (!parsed.ok) return { ok: false, message: parsed.privateKey ? `The descriptor's key ${PRIVATE_REFUSAL}.` : parsed.message };
  const allowed = CHAIN_SCRIPT_TYPES[blockchain] ?? [];
  if (!allowed.includes(wrapper.scriptType))
    return { ok: false, message: `${blockchain} has no ${wrapper.scriptType} addresses: expected ${allowed.join(' or ')}.` };
  const origin = keyExpr[1] ? `m${originPath.replace(/[hH]/g, "'")}` : null;
  return { ok: true, key: withLazyHd({ ...parsed.key, scriptType: wrapper.scriptType, origin, branches }) };
}

// -------------------------------------------------------------------------------------------------
// Addresses.

interface UtxoEncoding {
  p2pkh: number;
  p2sh: number;
  hrp?: string;
  regtestHrp?: string;
  versionBytes?: 2;
}

const UTXO_ENCODINGS: Partial<Record<Blockchain, Partial<Record<Network, UtxoEncoding>>>> = {
  bitcoin: { mainnet: { p2pkh: 0x00, p2sh: 0x05, hrp: 'bc' }, testnet: { p2pkh: 0x6f, p2sh: 0xc4, hrp: 'tb', regtestHrp: 'bcrt' } },
  litecoin: { mainnet: { p2pkh: 0x30, p2sh: 0x32, hrp: 'ltc' }, testnet: { p2pkh: 0x6f, p2sh: 0x3a, hrp: 'tltc', regtestHrp: 'rltc' } },
  dogecoin: { mainnet: { p2pkh: 0x1e, p2sh: 0x16 }, testnet: { p2pkh: 0x71, p2sh: 0xc4 } },
  dash: { mainnet: { p2pkh: 0x4c, p2sh: 0x10 }, testnet: { p2pkh: 0x8c, p2sh: 0x13 } },
  'bitcoin-cash': { mainnet: { p2pkh: 0x00, p2sh: 0x05 }, testnet: { p2pkh: 0x6f, p2sh: 0xc4 } },
  zcash: { mainnet: { p2pkh: 0x1cb8, p2sh: 0x1cbd, versionBytes: 2 }, testnet: { p2pkh: 0x1d25, p2sh: 0x1cba, versionBytes: 2 } },
};

function base58Address(version: number, versionBytes: 1 | 2, hash: Uint8Array): string {
  const prefix = versionBytes === 2 ? [version >> 8, version & 0xff] : [version];
  return b58check.encode(Uint8Array.of(...prefix, ...hash));
}

/** BIP341: the output key of a key-path-only taproot output, x-only. */
function taprootOutputKey(publicKey: Uint8Array): Uint8Array {
  const x = publicKey.subarray(1, 33);
  // lift_x(x) is the point with x and an even y: the compressed key 02 || x.
  return addTweak(Uint8Array.of(0x02, ...x), schnorr.utils.taggedHash('TapTweak', x)).subarray(1);
}

function encodeAddress(key: WalletKey, publicKey: Uint8Array, regtest: boolean): string {
  if (key.scriptType === 'account') {
    const uncompressed = secp256k1.ProjectivePoint.fromHex(publicKey).toRawBytes(false);
    const hash20 = keccak_256(uncompressed.subarray(1)).subarray(12);
    if (key.blockchain === 'tron') return b58check.encode(Uint8Array.of(0x41, ...hash20));
    return `0x${hex.encode(hash20)}`;
  }
  const enc = UTXO_ENCODINGS[key.blockchain]?.[key.network];
  if (!enc) throw new Error(`no address encoding for ${key.blockchain} ${key.network}`);
  const versionBytes = enc.versionBytes ?? 1;
  const hrp = (regtest ? enc.regtestHrp : undefined) ?? enc.hrp ?? '';
  switch (key.scriptType) {
    case 'legacy':
      return base58Address(enc.p2pkh, versionBytes, hash160(publicKey));
    case 'p2sh-segwit':
      return base58Address(enc.p2sh, versionBytes, hash160(Uint8Array.of(0x00, 0x14, ...hash160(publicKey))));
    case 'segwit':
      return segwitAddress(hrp, 0, hash160(publicKey));
    case 'taproot':
      return segwitAddress(hrp, 1, taprootOutputKey(publicKey));
  }
}

/**
 * The address of a public key derived from `key`, in herald's canonical spelling. The encoders here spell
 * addresses canonically already (lower-case bech32, base58, lower-case hex) except on bitcoin-cash (legacy
 * base58 here, cashaddr canonical); `check` puts any address through validateAddress anyway (deriveWindow
 * does for the first of each window).
 */
export function addressOfPublicKey(key: WalletKey, publicKey: Uint8Array, regtest: boolean, check = false): string {
  const encoded = encodeAddress(key, publicKey, regtest);
  if (!check && key.blockchain !== 'bitcoin-cash') return encoded;
  const valid = validateAddress(key.blockchain, key.network, encoded);
  if (!valid.ok) throw new Error(`derived address does not validate: ${valid.message}`);
  return valid.normalized;
}

/**
 * The address at `index` of a branch of `key`. `regtest` picks the regtest bech32 prefix (bcrt, rltc) on
 * testnet, for a node that reports a regtest chain. The address is in herald's canonical spelling.
 */
export function deriveAddress(key: WalletKey, branch: KeyBranch, index: number, options: { regtest?: boolean } = {}): DerivedAddress {
  if (!Number.isInteger(index) || index < 0 || index >= HARDENED_OFFSET) throw new RangeError(`index ${index} is not an unhardened BIP32 index`);
  let node = key.hd;
  for (const step of branch.steps) node = node.deriveChild(step);
  node = node.deriveChild(index);
  const publicKey = node.publicKey;
  if (!publicKey) throw new Error('derived key has no public key');
  const address = addressOfPublicKey(key, publicKey, options.regtest ?? false, true);
  return { address, derivationPath: [key.origin ?? 'm', ...branch.steps, index].join('/'), change: branch.change, index };
}
