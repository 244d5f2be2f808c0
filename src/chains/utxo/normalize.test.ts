import { readFileSync } from 'node:fs';
import { ripemd160 } from '@noble/hashes/legacy';
import { sha256 } from '@noble/hashes/sha2';
import { bech32, bech32m, createBase58check, hex } from '@scure/base';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { validateAddress } from '../../domain/addresses.ts';
import type { Network } from '../../domain/chains.ts';
import type { CoinMovement, NormalizedBlock } from '../types.ts';
import {
  type KnownPrevout,
  normalizeUtxoBlock,
  normalizeUtxoBlockHeader,
  parseBaseUnits,
  parseCoinAmount,
  prevoutKey,
  prevoutsNeeded,
  type UtxoBlockchain,
  UtxoNormalizeError,
  ZERO_HASH,
} from './normalize.ts';
import type { RpcBlock, RpcTransaction } from './rpc-types.ts';

// ---------------------------------------------------------------------------------------------------------
// Fixture access: the recorded files live in test/fixtures (copied from the shared collection, README and index included)
// and are read in place. A missing or unparsable file throws, so its tests fail (never skip).

const FIXTURES = new URL('../../../test/fixtures/', import.meta.url);

function fixtureText(rel: string): string {
  return readFileSync(new URL(rel, FIXTURES), 'utf8');
}

/** Parses a recorded file, unwrapping a JSON-RPC envelope when there is one. */
function fixture<T>(rel: string): T {
  const json = JSON.parse(fixtureText(rel)) as unknown;
  if (json !== null && typeof json === 'object' && !Array.isArray(json) && 'result' in json) return (json as { result: T }).result;
  return json as T;
}

const BTC_ETL = 'bitcoin/mainnet/bitcoin-etl/';
const BTC_VIVITA = 'bitcoin/mainnet/vivita/';
const LTC_VIVITA = 'litecoin/mainnet/vivita/';
const ZEC_ETL = 'zcash/mainnet/bitcoin-etl/';

const BTC_MAIN = { blockchain: 'bitcoin', network: 'mainnet' } as const;

// ---------------------------------------------------------------------------------------------------------
// An independent route to the expected values: the raw transaction hex each fixture also carries, decoded
// here (values as 8-byte little-endian integers, addresses derived from the output script), without the
// normaliser or the node's decoded JSON.

interface RawTx {
  /** `txid:vout` of each input; undefined for a coinbase input. */
  inputs: (string | undefined)[];
  outputs: { value: bigint; script: string }[];
  /** Double SHA-256 of the serialisation without witness, byte-reversed; undefined for Litecoin MWEB-flagged transactions. */
  txid: string | undefined;
}

/** Legacy, segwit (and Litecoin's MWEB flag), Dash special and Zcash v3/v4 (overwintered) transactions, up to the outputs. */
function decodeRawTx(txHex: string): RawTx {
  const b = hex.decode(txHex);
  let p = 0;
  const bytes = (n: number): Uint8Array => {
    if (p + n > b.length) throw new Error(`raw transaction truncated at ${p}`);
    const s = b.subarray(p, p + n);
    p += n;
    return s;
  };
  const u8 = (): number => bytes(1)[0] as number;
  const u32 = (): number => {
    const s = bytes(4);
    return new DataView(s.buffer, s.byteOffset, 4).getUint32(0, true);
  };
  const varint = (): number => {
    const first = u8();
    if (first < 0xfd) return first;
    if (first === 0xfd) return u8() | (u8() << 8);
    if (first === 0xfe) return u32();
    const lo = u32();
    return u32() * 2 ** 32 + lo;
  };
  const version = u32();
  const overwintered = (version & 0x80000000) !== 0;
  let flag = 0;
  if (overwintered)
    bytes(4); // versionGroupId
  else if (b[p] === 0 && b[p + 1] !== 0) flag = bytes(2)[1] as number; // segwit marker + flag (Litecoin MWEB: flag 8)
  const bodyStart = p;
  const inputs: (string | undefined)[] = [];
  for (let i = varint(); i > 0; i--) {
    const prev = hex.encode(bytes(32).slice().reverse());
    const vout = u32();
    bytes(varint());
    bytes(4);
    inputs.push(prev === ZERO_HASH && vout === 0xffffffff ? undefined : `${prev}:${vout}`);
  }
  const outputs: { value: bigint; script: string }[] = [];
  for (let i = varint(); i > 0; i--) {
    const v = bytes(8);
    const value = new DataView(v.buffer, v.byteOffset, 8).getBigUint64(0, true);
    outputs.push({ value, script: hex.encode(bytes(varint())) });
  }
  // Without witness: version, inputs and outputs, then the 4-byte lock time that ends a segwit transaction.
  const stripped = flag === 0 ? b : flag === 1 ? Uint8Array.from([...b.subarray(0, 4), ...b.subarray(bodyStart, p), ...b.subarray(b.length - 4)]) : undefined;
  return { inputs, outputs, txid: stripped && hex.encode(sha256(sha256(stripped)).reverse()) };
}

interface AddressParams {
  p2pkh: number[];
  p2sh: number[];
  hrp?: string;
}

const PARAMS: Record<string, AddressParams> = {
  'bitcoin/mainnet': { p2pkh: [0x00], p2sh: [0x05], hrp: 'bc' },
  'bitcoin/testnet': { p2pkh: [0x6f], p2sh: [0xc4], hrp: 'tb' },
  'litecoin/mainnet': { p2pkh: [0x30], p2sh: [0x32], hrp: 'ltc' },
  'dogecoin/mainnet': { p2pkh: [0x1e], p2sh: [0x16] },
  'dash/mainnet': { p2pkh: [0x4c], p2sh: [0x10] },
  'zcash/mainnet': { p2pkh: [0x1c, 0xb8], p2sh: [0x1c, 0xbd] },
  // bitcoin-cash: the legacy form; the normaliser turns it into cashaddr (compared through the node's cashaddr below).
  'bitcoin-cash/mainnet': { p2pkh: [0x00], p2sh: [0x05] },
};

const b58check = createBase58check(sha256);

/** The address a node prints for a standard output script (old Core: also the P2PKH address of a bare pubkey). */
function addressFromScript(script: string, params: AddressParams): string | undefined {
  const withVersion = (version: number[], h: string) => b58check.encode(Uint8Array.from([...version, ...hex.decode(h)]));
  let m = /^76a914([0-9a-f]{40})88ac$/.exec(script);
  if (m?.[1]) return withVersion(params.p2pkh, m[1]);
  m = /^a914([0-9a-f]{40})87$/.exec(script);
  if (m?.[1]) return withVersion(params.p2sh, m[1]);
  m = /^(?:41([0-9a-f]{130})|21([0-9a-f]{66}))ac$/.exec(script);
  const pubkey = m?.[1] ?? m?.[2];
  if (pubkey) return withVersion(params.p2pkh, hex.encode(ripemd160(sha256(hex.decode(pubkey)))));
  if (params.hrp) {
    m = /^00(?:14|20)([0-9a-f]{40}|[0-9a-f]{64})$/.exec(script);
    if (m?.[1] && script.length === 4 + m[1].length) return bech32.encode(params.hrp, [0, ...bech32.toWords(hex.decode(m[1]))]);
    m = /^5120([0-9a-f]{64})$/.exec(script);
    if (m?.[1]) return bech32m.encode(params.hrp, [1, ...bech32m.toWords(hex.decode(m[1]))]);
  }
  return undefined;
}

/** Movements computed from the raw hex alone, by the rules of the normaliser (inputs, then outputs; zero nets omitted). */
function movementsFromHex(
  txs: { txid: string; hex: string }[],
  address: (script: string) => string | undefined,
  prevouts: ReadonlyMap<string, KnownPrevout> = new Map(),
): CoinMovement[] {
  const decoded = txs.map((t) => ({ txid: t.txid, raw: decodeRawTx(t.hex) }));
  const inBlock = new Map<string, KnownPrevout>();
  for (const d of decoded) {
    for (const [n, o] of d.raw.outputs.entries()) inBlock.set(`${d.txid}:${n}`, { address: address(o.script), value: o.value });
  }
  const result: CoinMovement[] = [];
  for (const d of decoded) {
    const net = new Map<string, bigint>();
    const add = (a: string | undefined, v: bigint) => {
      if (a !== undefined) net.set(a, (net.get(a) ?? 0n) + v);
    };
    for (const key of d.raw.inputs) {
      const prev = key === undefined ? undefined : (prevouts.get(key) ?? inBlock.get(key));
      if (prev) add(prev.address, -prev.value);
    }
    for (const o of d.raw.outputs) add(address(o.script), o.value);
    for (const [a, delta] of net) if (delta !== 0n) result.push({ transactionId: d.txid, address: a, delta });
  }
  return result;
}

/** A decimal text as the node printed it ("6.25", "0.0000392", "50.00000000") → satoshis, by string splitting. */
function satsFromText(text: string): bigint {
  const m = /^(\d+)(?:\.(\d{1,8}))?$/.exec(text);
  if (!m) throw new Error(`not a plain decimal: ${text}`);
  return BigInt(m[1] as string) * 100000000n + BigInt((m[2] ?? '').padEnd(8, '0'));
}

/** Every `"key": <number>` of a file's text, as written. */
function numberTexts(text: string, key: string): string[] {
  return [...text.matchAll(new RegExp(`"${key}"\\s*:\\s*([-0-9.eE+]+)`, 'g'))].map((m) => m[1] as string);
}

type FullTx = RpcTransaction & { txid: string; hex: string };

function txsOf(block: RpcBlock): FullTx[] {
  return block.tx as FullTx[];
}

function byTx(movements: CoinMovement[], txid: string): Record<string, bigint> {
  return Object.fromEntries(movements.filter((m) => m.transactionId === txid).map((m) => [m.address, m.delta]));
}

// ---------------------------------------------------------------------------------------------------------

describe('parseCoinAmount: decimal amounts → base units without float arithmetic', () => {
  it('reads JSON numbers through their shortest string form', () => {
    expect(parseCoinAmount(0.1)).toBe(10000000n);
    expect(parseCoinAmount(JSON.parse('0.1'))).toBe(10000000n);
    expect(parseCoinAmount(JSON.parse('50.00000000'))).toBe(5000000000n);
    expect(parseCoinAmount(0)).toBe(0n);
    expect(parseCoinAmount(-0)).toBe(0n);
    expect(parseCoinAmount(21000000)).toBe(2100000000000000n);
    expect(parseCoinAmount(JSON.parse('20999999.99999999'))).toBe(2099999999999999n);
    expect(parseCoinAmount(JSON.parse('0.29998854'))).toBe(29998854n);
    expect(parseCoinAmount(JSON.parse('729752.00000000'))).toBe(72975200000000n);
  });

  it('JSON numbers below 1e-6 arrive in exponent form, which is read exactly', () => {
    const oneSat = JSON.parse('0.00000001') as number;
    expect(String(oneSat)).toBe('1e-8');
    expect(parseCoinAmount(oneSat)).toBe(1n);
    expect(parseCoinAmount(JSON.parse('0.00000099'))).toBe(99n);
    expect(String(JSON.parse('0.00000099'))).toBe('9.9e-7');
    // blockbook's expected data holds such a literal (bitcoin 529150): 6.932e-05 BTC.
    expect(parseCoinAmount(6.932e-5)).toBe(6932n);
    expect(parseCoinAmount('1E-8')).toBe(1n);
    expect(parseCoinAmount('1.5e+2')).toBe(15000000000n);
    expect(parseCoinAmount(1e21)).toBe(10n ** 29n);
  });

  it('decimal strings (a client that keeps the raw JSON text) are exact at any size', () => {
    expect(parseCoinAmount('21000000.00000000')).toBe(2100000000000000n);
    expect(parseCoinAmount('0.100000000')).toBe(10000000n); // trailing zeros beyond 8 places are no precision
    expect(parseCoinAmount('134217728.00000001')).toBe(13421772800000001n);
    expect(parseCoinAmount('-1.5')).toBe(-150000000n);
    expect(parseCoinAmount('+2')).toBe(200000000n);
    expect(parseCoinAmount('7.')).toBe(700000000n);
    expect(parseCoinAmount('1', 6)).toBe(1000000n);
  });

  it('rejects more than 8 decimals, non-numbers and non-finite values', () => {
    expect(() => parseCoinAmount(1.000000001)).toThrow(/more than 8 decimals/);
    expect(() => parseCoinAmount('0.123456789')).toThrow(/more than 8 decimals/);
    expect(() => parseCoinAmount(1e-9)).toThrow(/more than 8 decimals/);
    expect(() => parseCoinAmount(0.1 + 0.2)).toThrow(/more than 8 decimals/); // 0.30000000000000004: float arithmetic shows
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, null, undefined, '', '.5', 'abc', '1.2.3', '0x10', ' 1', '1e', {}, [], 10n]) {
      expect(() => parseCoinAmount(bad)).toThrow(UtxoNormalizeError);
    }
    expect(() => parseCoinAmount('1e999999')).toThrow(/exponent/);
  });

  it('property: every satoshi amount up to 21 million coins survives JSON number → parse exactly', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 2100000000000000n }), (sats) => {
        const text = `${sats / 100000000n}.${(sats % 100000000n).toString().padStart(8, '0')}`;
        expect(parseCoinAmount(JSON.parse(text))).toBe(sats);
        expect(parseCoinAmount(text)).toBe(sats);
      }),
      { numRuns: 5000 },
    );
  });

  it('a JSON number cannot carry 8 decimals above 2^26 coins (possible on dogecoin): only the string form is exact there', () => {
    expect(parseCoinAmount(JSON.parse('67108863.99999999'))).toBe(6710886399999999n);
    expect(parseCoinAmount(JSON.parse('134217728.00000001'))).not.toBe(13421772800000001n);
  });

  it('parseBaseUnits reads valueZat/valueSat integers', () => {
    expect(parseBaseUnits(1000068515, 'x')).toBe(1000068515n);
    expect(parseBaseUnits('90071992547409930', 'x')).toBe(90071992547409930n);
    for (const bad of [-1, 1.5, 2 ** 53, '1.0', '', null]) expect(() => parseBaseUnits(bad, 'x')).toThrow(UtxoNormalizeError);
  });
});

describe('bitcoin, old Core format (bitcoin-etl): genesis, 1, 50000 → 50001 → 50002', () => {
  const files = {
    0: `${BTC_ETL}getblock_2_height0_000000000019d668.json`,
    1: `${BTC_ETL}getblock_2_height1_00000000839a8e68.json`,
    50000: `${BTC_ETL}getblock_2_height50000_000000001aeae195.json`,
    50001: `${BTC_ETL}getblock_2_height50001_000000001c920d49.json`,
    50002: `${BTC_ETL}getblock_2_height50002_000000002066d7f9.json`,
  } as const;
  const raw = Object.fromEntries(Object.entries(files).map(([h, f]) => [h, fixture<RpcBlock>(f)])) as Record<keyof typeof files, RpcBlock>;
  const n = Object.fromEntries(Object.entries(raw).map(([h, b]) => [h, normalizeUtxoBlock({ block: b }, BTC_MAIN)])) as Record<
    keyof typeof files,
    NormalizedBlock
  >;

  it('heights, hashes (= the recorded getblockhash), parent links, timestamps', () => {
    for (const h of [0, 1, 50000, 50001, 50002] as const) {
      expect(n[h].height).toBe(h);
      expect(n[h].hash).toBe(fixture<string>(`${BTC_ETL}getblockhash_${h}.json`));
      expect(n[h].timestamp).toBe(raw[h].time);
    }
    expect(n[0].hash).toBe('000000000019d6689c085ae165831e934ff763ae46a2a6c172b3f1b60a8ce26f');
    expect(n[0].parentHash).toBe(ZERO_HASH);
    expect(n[0].timestamp).toBe(1231006505);
    expect(n[1].parentHash).toBe(n[0].hash);
    expect(n[50001].parentHash).toBe(n[50000].hash);
    expect(n[50002].parentHash).toBe(n[50001].hash);
    for (const b of Object.values(n)) expect([b.tokenTransfers, b.internalTransfers]).toEqual([[], []]);
  });

  it('transaction ids: count = nTx, tx[].txid in order', () => {
    expect(n[0].transactionIds).toEqual(['4a5e1e4baab89f3a32518a88c31bc87f618f76673e2cc77ab2127b7afdeda33b']);
    expect(n[50001].transactionIds).toEqual([
      'e1882d41800d96d0fddc196cd8d3f0b45d65b030c652d97eaba79a1174e64d58',
      '7940cdde4d713e171849efc6bd89939185be270266c94e92369e3877ad89455a',
      'f84761459a00c6df3176ae5d94c99e69f25100d09548e5686bd0c354bb8cc60a',
    ]);
    for (const h of [0, 1, 50000, 50001, 50002] as const) {
      expect(n[h].transactionIds).toHaveLength(raw[h].nTx as number);
      // Independent: each tx's hex hashes to its id.
      for (const tx of txsOf(raw[h])) expect(decodeRawTx(tx.hex).txid).toBe(tx.txid);
    }
  });

  it('bare-pubkey coinbase outputs carry the address old Core prints (addresses[0]); genesis pays 50 BTC to 1A1zP1…', () => {
    expect(n[0].coinMovements).toEqual([{ transactionId: n[0].transactionIds[0], address: '1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa', delta: 5000000000n }]);
    expect(n[1].coinMovements).toEqual([{ transactionId: n[1].transactionIds[0], address: '12c6DSiU4Rq3P4ZxziKxzrL5LmMBrzjrJX', delta: 5000000000n }]);
  });

  it('without prevouts, 50001 lists its 3 spent outputs as needed and credits only outputs', () => {
    expect(prevoutsNeeded(raw[50001])).toEqual([
      '76a8d70a757be5055f60be076b683897cadaad6b7bdf78c43e39b9d59cb4a6ea:0',
      '0dd0394c6240355f4e4b3c88028f678ed746cebee3b3e8509620733f018914c9:0',
      '0d37522b89f991f8433b80f709ad31862a54435cd003f25732fe405e9db93216:0',
    ]);
    expect(prevoutsNeeded(raw[50000])).toEqual([]);
    expect(n[50001].coinMovements).toEqual(movementsFromHex(txsOf(raw[50001]), (s) => addressFromScript(s, PARAMS['bitcoin/mainnet'] as AddressParams)));
    expect(n[50001].coinMovements.every((m) => m.delta > 0n)).toBe(true);
  });

  it('50001 with the recorded getrawtransaction prevouts: spent amounts debit the funding addresses', () => {
    const prevouts = new Map<string, KnownPrevout>();
    for (const id of ['0d37522b', '0dd0394c', '76a8d70a']) {
      const tx = fixture<FullTx & { vout: { scriptPubKey: { addresses: string[] } }[] }>(`${BTC_ETL}getrawtransaction_true_${id}.json`);
      expect(decodeRawTx(tx.hex).txid).toBe(tx.txid);
      // Amount from the raw hex (independent of the JSON `value`), address as the node printed it.
      const out = decodeRawTx(tx.hex).outputs[0];
      prevouts.set(prevoutKey(tx.txid, 0), { address: tx.vout[0]?.scriptPubKey.addresses[0], value: out?.value as bigint });
    }
    expect([...prevouts.keys()].sort()).toEqual([...prevoutsNeeded(raw[50001])].sort());
    const full = normalizeUtxoBlock({ block: raw[50001], prevouts }, BTC_MAIN);
    const [coinbase, tx1, tx2] = full.transactionIds as [string, string, string];
    expect(byTx(full.coinMovements, coinbase)).toEqual({ '1PkqKGbNLDdDJGveCcNUMV9CEFH77ADrPQ': 5000000000n });
    expect(byTx(full.coinMovements, tx1)).toEqual({
      '1DoQeKfU3dYhN9bxMpFFcVUnufCPDqSPae': -5000000000n,
      '1PZMgkF2x161qvfP7dhoWSEEU3SjnQE1m9': -5000000000n,
      '1HaHTfmvoUW6i6nhJf8jJs6tU4cHNmBQHQ': 10000000000n,
    });
    expect(byTx(full.coinMovements, tx2)).toEqual({
      '18dxbN6m8zxieN8F9BchXmhbeXUdFLr8fD': -5000000000n,
      '1HaHTfmvoUW6i6nhJf8jJs6tU4cHNmBQHQ': 5000000000n,
    });
    // Inputs first, then outputs; both spends net to zero (no fee in 2010).
    expect(full.coinMovements.filter((m) => m.transactionId === tx1).map((m) => m.delta)).toEqual([-5000000000n, -5000000000n, 10000000000n]);
    expect(full.coinMovements).toEqual(movementsFromHex(txsOf(raw[50001]), (s) => addressFromScript(s, PARAMS['bitcoin/mainnet'] as AddressParams), prevouts));
  });
});

describe('bitcoin, modern Core format (vivita): 766390 → 766391, 766393 (parent 766392 missing)', () => {
  const files = {
    766390: `${BTC_VIVITA}getblock_2_height766390_000000000000000000042a94.json`,
    766391: `${BTC_VIVITA}getblock_2_height766391_00000000000000000001ed7f.json`,
    766393: `${BTC_VIVITA}getblock_2_height766393_000000000000000000078f0c.json`,
  } as const;
  const texts = Object.fromEntries(Object.entries(files).map(([h, f]) => [h, fixtureText(f)])) as Record<keyof typeof files, string>;
  const raw = Object.fromEntries(Object.entries(texts).map(([h, t]) => [h, JSON.parse(t) as RpcBlock])) as Record<keyof typeof files, RpcBlock>;
  const n = Object.fromEntries(Object.entries(raw).map(([h, b]) => [h, normalizeUtxoBlock({ block: b }, BTC_MAIN)])) as Record<
    keyof typeof files,
    NormalizedBlock
  >;
  const addr = (s: string) => addressFromScript(s, PARAMS['bitcoin/mainnet'] as AddressParams);

  it('heights, hashes, parent links and the gap', () => {
    expect(n[766390].hash).toBe('000000000000000000042a943da8d706731d5d46190bdd96d0c009abc531da46');
    expect(n[766391].height).toBe(766391);
    expect(n[766391].parentHash).toBe(n[766390].hash);
    expect(n[766393].height).toBe(766393);
    expect(n[766393].parentHash).toBe(raw[766391].nextblockhash); // = 766392, not recorded
    expect(n[766393].parentHash).not.toBe(n[766391].hash);
    expect(n[766390].timestamp).toBe(1670462014);
  });

  it('transaction ids: count = nTx, txid (never the wtxid `hash`)', () => {
    expect(n[766390].transactionIds).toHaveLength(16);
    expect(n[766391].transactionIds).toHaveLength(1034);
    expect(n[766393].transactionIds).toHaveLength(raw[766393].nTx as number);
    for (const h of [766390, 766391, 766393] as const) {
      const txs = txsOf(raw[h]);
      expect(n[h].transactionIds).toEqual(txs.map((t) => t.txid));
      expect(txs.some((t) => t.hash !== t.txid)).toBe(true); // segwit transactions: wtxid differs
      for (const t of txs) expect(decodeRawTx(t.hex).txid).toBe(t.txid); // the id is the hash without witness
      expect(n[h].transactionIds[0]).toBe(txs[0]?.txid);
      expect(n[h].transactionIds.at(-1)).toBe(txs.at(-1)?.txid);
    }
  });

  it('every movement equals the one computed from the raw transaction hex (values, addresses incl. bech32/taproot, in-block spends)', () => {
    for (const h of [766390, 766391, 766393] as const) {
      expect(n[h].coinMovements).toEqual(movementsFromHex(txsOf(raw[h]), addr));
    }
  });

  it('output totals: the hex values sum to the recorded decimal texts; the coinbase takes subsidy + recorded fees', () => {
    for (const h of [766390, 766391, 766393] as const) {
      const textTotal = numberTexts(texts[h], 'value').reduce((s, t) => s + satsFromText(t), 0n);
      const hexTotal = txsOf(raw[h]).reduce((s, t) => s + decodeRawTx(t.hex).outputs.reduce((a, o) => a + o.value, 0n), 0n);
      expect(hexTotal).toBe(textTotal);
      const fees = numberTexts(texts[h], 'fee').reduce((s, t) => s + satsFromText(t), 0n);
      const coinbaseId = n[h].transactionIds[0];
      const coinbaseTotal = n[h].coinMovements.filter((m) => m.transactionId === coinbaseId).reduce((s, m) => s + m.delta, 0n);
      expect(coinbaseTotal).toBe(625000000n + fees);
    }
  });

  it('a chosen transaction of 766390: addresses and amounts as recorded', () => {
    const txs = txsOf(raw[766390]);
    const tx = txs.find((t) => (t.vout ?? []).length >= 2 && (t.vin ?? []).every((v) => v.coinbase === undefined)) as FullTx;
    const fromJson: Record<string, bigint> = {};
    for (const o of tx.vout ?? []) {
      const a = o.scriptPubKey?.address;
      if (a) fromJson[a] = (fromJson[a] ?? 0n) + satsFromText(String(o.value));
    }
    expect(byTx(n[766390].coinMovements, tx.txid)).toEqual(fromJson);
  });

  it('nulldata outputs (OP_RETURN, no address) are skipped', () => {
    const withNulldata = txsOf(raw[766390]).filter((t) => (t.vout ?? []).some((o) => o.scriptPubKey?.type === 'nulldata'));
    expect(withNulldata.length).toBeGreaterThan(0);
    for (const tx of withNulldata) {
      const addresses = (tx.vout ?? []).map((o) => o.scriptPubKey?.address).filter((a) => a !== undefined);
      expect(Object.keys(byTx(n[766390].coinMovements, tx.txid)).sort()).toEqual([...new Set(addresses)].sort());
    }
  });

  it('prevoutsNeeded leaves out coinbase and in-block spends', () => {
    const needed = prevoutsNeeded(raw[766391]);
    const inputs = txsOf(raw[766391]).flatMap((t) => (t.vin ?? []).filter((v) => v.coinbase === undefined).map((v) => `${v.txid}:${v.vout}`));
    const inBlock = new Set(txsOf(raw[766391]).flatMap((t) => (t.vout ?? []).map((o) => `${t.txid}:${o.n}`)));
    expect(needed).toEqual(inputs.filter((k) => !inBlock.has(k)));
    expect(needed.length).toBeLessThan(inputs.length); // 766391 spends some of its own outputs
  });

  it('verbosity 3 (`vin[].prevout`, Core >= 25) debits the spent address without prevouts', () => {
    const tx = txsOf(raw[766390]).find((t) => (t.vin ?? []).every((v) => v.coinbase === undefined)) as FullTx;
    const spent = (tx.vin ?? []).map((v, i) => ({
      ...v,
      prevout: {
        generated: false,
        height: 1,
        value: 0.5 + i,
        scriptPubKey: { address: 'BC1QW508D6QEJXTDG4Y5R3ZARVARY0C5XW7KV8F3T4', type: 'witness_v0_keyhash' },
      },
    }));
    const block = { ...raw[766390], tx: [{ ...tx, vin: spent }] };
    expect(prevoutsNeeded(block)).toEqual([]);
    const out = normalizeUtxoBlock({ block }, BTC_MAIN);
    const debit = (tx.vin ?? []).reduce((s, _v, i) => s + parseCoinAmount(0.5 + i), 0n);
    // Upper-case bech32 normalised to lower case, as subscriptions are.
    expect(out.coinMovements[0]).toEqual({ transactionId: tx.txid, address: 'bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4', delta: -debit });
  });
});

describe('litecoin MWEB era (vivita): 2383206 → 2383207 → 2383208 → 2383209', () => {
  const heights = [2383206, 2383207, 2383208, 2383209] as const;
  const names = ['7b3479a720700cbf', '84da0de24f1f7007', 'd01b594f05404576', '0e6ab03c6ffc04a9'];
  const texts = heights.map((h, i) => fixtureText(`${LTC_VIVITA}getblock_2_height${h}_${names[i]}.json`));
  const raw = texts.map((t) => JSON.parse(t) as RpcBlock);
  const chain = { blockchain: 'litecoin', network: 'mainnet' } as const;
  const n = raw.map((b) => normalizeUtxoBlock({ block: b }, chain));
  const addr = (s: string) => addressFromScript(s, PARAMS['litecoin/mainnet'] as AddressParams);

  it('heights, hashes, parent links, transaction ids', () => {
    n.forEach((b, i) => {
      expect(b.height).toBe(heights[i]);
      expect(b.hash.startsWith((names[i] as string).slice(0, 8))).toBe(true);
      expect(b.transactionIds).toEqual(txsOf(raw[i] as RpcBlock).map((t) => t.txid));
      expect(b.transactionIds).toHaveLength((raw[i] as RpcBlock).nTx as number);
      if (i > 0) expect(b.parentHash).toBe(n[i - 1]?.hash);
    });
    expect(n.map((b) => b.transactionIds.length)).toEqual([88, 9, 287, 8]);
  });

  it('every movement equals the raw-hex computation (M… P2SH, ltc1 segwit); the HogEx output moves nothing', () => {
    raw.forEach((b, i) => {
      expect(n[i]?.coinMovements).toEqual(movementsFromHex(txsOf(b), addr));
      const text = texts[i] as string;
      const hexTotal = txsOf(b).reduce((s, t) => s + decodeRawTx(t.hex).outputs.reduce((a, o) => a + o.value, 0n), 0n);
      expect(hexTotal).toBe(numberTexts(text, 'value').reduce((s, t) => s + satsFromText(t), 0n));
      const hogEx = txsOf(b).at(-1) as FullTx;
      expect(hogEx.vout?.[0]?.scriptPubKey?.type).toBe('witness_mweb_hogaddr');
      expect(n[i]?.coinMovements.some((m) => m.transactionId === hogEx.txid)).toBe(false);
      // The HogEx input spends the previous block's HogEx output: listed as needed (it resolves to no address).
      expect(prevoutsNeeded(b)).toContain(`${hogEx.vin?.[0]?.txid}:${hogEx.vin?.[0]?.vout}`);
    });
  });

  it('a chosen transaction of 2383207: addresses (addresses[0]) and amounts from the decimal text', () => {
    const b = raw[1] as RpcBlock;
    const tx = txsOf(b).find((t) => (t.vout ?? []).length >= 2 && (t.vin ?? []).every((v) => v.coinbase === undefined)) as FullTx;
    const expected: Record<string, bigint> = {};
    for (const o of tx.vout ?? []) {
      const a = o.scriptPubKey?.addresses?.[0];
      if (a) expected[a] = (expected[a] ?? 0n) + satsFromText(String(o.value));
    }
    expect(Object.keys(expected).length).toBeGreaterThan(0);
    expect(byTx(n[1]?.coinMovements ?? [], tx.txid)).toEqual(expected);
  });

  it('MWEB inputs and outputs (ismweb: true, amounts hidden) are ignored, never an error', () => {
    const b = raw[1] as RpcBlock;
    const txs = txsOf(b).map((t, i) =>
      i === 1
        ? {
            ...t,
            vin: [...(t.vin ?? []), { ismweb: true, output_id: 'ab'.repeat(32) }],
            vout: [...(t.vout ?? []), { ismweb: true, output_id: 'cd'.repeat(32) }],
          }
        : t,
    );
    const withMweb = { ...b, tx: txs };
    expect(normalizeUtxoBlock({ block: withMweb }, chain)).toEqual(n[1]);
    expect(prevoutsNeeded(withMweb)).toEqual(prevoutsNeeded(b));
  });
});

describe('zcash (bitcoin-etl): 0, 508 (JoinSplit), 462085 (Sapling)', () => {
  const files = { 0: '00040fe8ec847191', 508: '000000124b0ed07b', 462085: '00000000010678b8' } as const;
  const texts = Object.fromEntries(Object.entries(files).map(([h, id]) => [h, fixtureText(`${ZEC_ETL}getblock_2_height${h}_${id}.json`)])) as Record<
    keyof typeof files,
    string
  >;
  const raw = Object.fromEntries(Object.entries(texts).map(([h, t]) => [h, JSON.parse(t) as RpcBlock])) as Record<keyof typeof files, RpcBlock>;
  const chain = { blockchain: 'zcash', network: 'mainnet' } as const;
  const n = Object.fromEntries(Object.entries(raw).map(([h, b]) => [h, normalizeUtxoBlock({ block: b }, chain)])) as Record<
    keyof typeof files,
    NormalizedBlock
  >;

  it('heights, hashes (= getblockhash), genesis parent, transaction ids', () => {
    for (const h of [0, 508, 462085] as const) {
      expect(n[h].height).toBe(h);
      expect(n[h].hash).toBe(fixture<string>(`${ZEC_ETL}getblockhash_${h}.json`));
      expect(n[h].transactionIds).toEqual(txsOf(raw[h]).map((t) => t.txid));
      expect(n[h].parentHash).toBe(raw[h].previousblockhash ?? ZERO_HASH);
    }
    expect(n[0].parentHash).toBe(ZERO_HASH);
    expect(n[508].parentHash).toBe('00000015947015bc6f8a29283b5c17243052664771558036794f1dafd6deb0b0');
    expect(n[462085].transactionIds).toHaveLength(10);
    expect(n[462085].transactionIds[0]).toBe('ed47bb6b44b201ad78f01a5dda3867a4a75bfbc20c1e003e8620f6fec08e8e46');
    expect(n[462085].transactionIds.at(-1)).toBe('33b20a663433b6c2a43db34057779d1e2e2ca6fa64c1ed943a7eb58f598b69e4');
  });

  it('value (decimal text) and valueZat agree for every output; movements = valueZat per addresses[0]', () => {
    for (const h of [0, 508, 462085] as const) {
      const values = numberTexts(texts[h], 'value').map(satsFromText);
      const zats = numberTexts(texts[h], 'valueZat').map((t) => BigInt(t));
      expect(values).toEqual(zats);
      const expected: CoinMovement[] = [];
      for (const tx of txsOf(raw[h])) {
        const net = new Map<string, bigint>();
        for (const o of tx.vout ?? []) {
          const a = o.scriptPubKey?.addresses?.[0] as string;
          net.set(a, (net.get(a) ?? 0n) + BigInt(o.valueZat as number));
        }
        for (const [address, delta] of net) if (delta !== 0n) expected.push({ transactionId: tx.txid, address, delta });
      }
      expect(n[h].coinMovements).toEqual(expected);
    }
  });

  it('genesis pays 0 ZEC (no movement); shielded parts are ignored', () => {
    expect(n[0].coinMovements).toEqual([]);
    // Sapling tx with no transparent input: only its transparent output (valueBalance 12.0001 is shielded → fee).
    expect(byTx(n[462085].coinMovements, 'bf3541c6a110c9f06b9fd47b7d7bd0c06613c2b32fb50555027c9fd8e807901d')).toEqual({
      t1XBsLoF2FA65LPwKGx4TWSLVHufddhYca2: 1200000000n,
    });
    // JoinSplit tx with a transparent input and no transparent output: nothing without its prevout…
    const shielding = 'de1d78ee310ba2c9fbeb13881f431fdc8b55aa5f79e61dd3c294177401878f11';
    expect(byTx(n[508].coinMovements, shielding)).toEqual({});
    const needed = prevoutsNeeded(raw[508]);
    const key = needed.find((k) => k.startsWith('28147431')) as string;
    expect(key).toBeDefined();
    // …and the debit once the adapter resolves it.
    const withPrev = normalizeUtxoBlock(
      { block: raw[508], prevouts: new Map([[key, { address: 't1KHa9CJeCy3b9rUX2BhqkFJXSxSSrhM7LJ', value: 20240000n }]]) },
      chain,
    );
    expect(byTx(withPrev.coinMovements, shielding)).toEqual({ t1KHa9CJeCy3b9rUX2BhqkFJXSxSSrhM7LJ: -20240000n });
    // A pubkey coinbase output: zcashd prints its t1 address.
    expect(byTx(n[508].coinMovements, n[508].transactionIds[0] as string)).toEqual({
      t1KHa9CJeCy3b9rUX2BhqkFJXSxSSrhM7LJ: 25430000n,
      t3Vz22vK5z2LcKEdg16Yv4FFneEL1zg9ojd: 6350000n,
    });
  });

  it('valueZat wins over value when both are present', () => {
    const tx = txsOf(raw[462085])[0] as FullTx;
    const block = { ...raw[462085], tx: [{ ...tx, vout: tx.vout?.map((o) => ({ ...o, value: 999 })) }] };
    expect(normalizeUtxoBlock({ block }, chain).coinMovements.map((m) => m.delta)).toEqual([1000068515n, 250000000n]);
  });
});

describe('getblock verbosity 1 + getrawtransaction: dogecoin 2, bitcoin-cash 91722', () => {
  it('dogecoin 2: header, the coinbase output, checked against the raw hex', () => {
    const block = fixture<RpcBlock>('dogecoin/mainnet/bitcoin-etl/getblock_true_height2_ea5380659e02a68c.json');
    const tx = fixture<FullTx>('dogecoin/mainnet/bitcoin-etl/getrawtransaction_true_3b14b76d.json');
    const chain = { blockchain: 'dogecoin', network: 'mainnet' } as const;
    const n = normalizeUtxoBlock({ block, transactions: [tx] }, chain);
    expect(n.height).toBe(2);
    expect(n.hash).toBe(fixture<string>('dogecoin/mainnet/bitcoin-etl/getblockhash_2.json'));
    expect(n.parentHash).toBe('82bc68038f6034c0596b6e313729793a887fded6e92a31fbdf70863f89d9bea2');
    expect(n.timestamp).toBe(1386474933);
    expect(n.transactionIds).toEqual(['3b14b76d22a3f2859d73316002bc1b9bfc7f37e2c3393be9b722b62bbd786983']);
    expect(decodeRawTx(tx.hex).txid).toBe(tx.txid);
    expect(n.coinMovements).toEqual([{ transactionId: tx.txid, address: 'DPsvwvYRgt66ntxno9mMuBfwhg9nAMmGrD', delta: 72975200000000n }]);
    expect(n.coinMovements).toEqual(movementsFromHex([tx], (s) => addressFromScript(s, PARAMS['dogecoin/mainnet'] as AddressParams)));
    expect(prevoutsNeeded(block, [tx])).toEqual([]);
    // Without the transaction objects the block cannot be normalised (only its header).
    expect(() => normalizeUtxoBlock({ block }, chain)).toThrow(/getrawtransaction/);
    expect(() => prevoutsNeeded(block)).toThrow(UtxoNormalizeError);
  });

  it('bitcoin-cash 91722 (duplicate coinbase txid): the output address in cashaddr, also from a legacy spelling', () => {
    const block = fixture<RpcBlock>('bitcoin-cash/mainnet/bitcoin-etl/getblock_true_height91722_00000000000271a2.json');
    const tx = fixture<FullTx & { blockhash: string; vout: { scriptPubKey: { addresses: string[] } }[] }>(
      'bitcoin-cash/mainnet/bitcoin-etl/getrawtransaction_true_e3bf3d07.json',
    );
    const chain = { blockchain: 'bitcoin-cash', network: 'mainnet' } as const;
    // The node answers getrawtransaction with the later copy (block 91880): same txid, same content.
    expect(tx.blockhash).not.toBe(block.hash);
    expect(decodeRawTx(tx.hex).txid).toBe(tx.txid);
    const n = normalizeUtxoBlock({ block, transactions: [tx] }, chain);
    expect(n.hash).toBe(fixture<string>('bitcoin-cash/mainnet/bitcoin-etl/getblockhash_91722.json'));
    expect(n.height).toBe(91722);
    expect(n.transactionIds).toEqual([tx.txid]);
    const cashaddr = 'bitcoincash:qzkddwa6hgh03skr4qsrygk7e087zjydxgqkpjnsw7';
    expect(tx.vout[0]?.scriptPubKey.addresses[0]).toBe(cashaddr);
    expect(n.coinMovements).toEqual([{ transactionId: tx.txid, address: cashaddr, delta: 5000000000n }]);
    // An older node prints the legacy address (derived here from the raw script): normalised to the same cashaddr.
    const legacy = movementsFromHex([tx], (s) => addressFromScript(s, PARAMS['bitcoin-cash/mainnet'] as AddressParams))[0]?.address as string;
    expect(legacy.startsWith('1')).toBe(true);
    const legacyTx = { ...tx, vout: tx.vout.map((o) => ({ ...o, scriptPubKey: { ...o.scriptPubKey, addresses: [legacy] } })) };
    expect(normalizeUtxoBlock({ block, transactions: [legacyTx] }, chain).coinMovements).toEqual(n.coinMovements);
    // Without the prefix too.
    const bare = { ...tx, vout: tx.vout.map((o) => ({ ...o, scriptPubKey: { ...o.scriptPubKey, addresses: [cashaddr.slice(12)] } })) };
    expect(normalizeUtxoBlock({ block, transactions: [bare] }, chain).coinMovements).toEqual(n.coinMovements);
  });

  it('dogecoin 4505707 → 4505708 → 4505709 (AuxPoW, txids only): header and parent links; no full block without the transactions', () => {
    const names = ['4505707_8aeed8122f97284e', '4505708_550393336f0a33a1', '4505709_b471614abcde34f9'];
    const blocks = names.map((s) => fixture<RpcBlock>(`dogecoin/mainnet/vivita/getblock_1_height${s}.json`));
    const headers = blocks.map(normalizeUtxoBlockHeader);
    expect(headers.map((h) => h.height)).toEqual([4505707, 4505708, 4505709]);
    expect(headers.map((h) => h.transactionIds.length)).toEqual([15, 2, 10]);
    expect(headers[1]?.parentHash).toBe(headers[0]?.hash);
    expect(headers[2]?.parentHash).toBe(headers[1]?.hash);
    headers.forEach((h, i) => {
      expect(h.hash.startsWith(names[i]?.split('_')[1] as string)).toBe(true);
      expect(h.transactionIds).toEqual(blocks[i]?.tx);
      expect(blocks[i]?.auxpow).toBeDefined();
    });
    expect(() => normalizeUtxoBlock({ block: blocks[0] as RpcBlock }, { blockchain: 'dogecoin', network: 'mainnet' })).toThrow(UtxoNormalizeError);
  });
});

describe('cross-check with blockbook-expected transactions (getrawtransaction-shaped, with raw hex)', () => {
  interface BlockbookTx extends FullTx {
    vout: { value: number; n: number; scriptPubKey?: { hex: string; addresses?: string[] }; scriptPubkey?: { hex: string } }[];
  }
  const files: [string, UtxoBlockchain, Network, string][] = [
    ['bitcoin/blockbook-expected/rpc_testdata_bitcoin.json', 'bitcoin', 'mainnet', 'bitcoin/mainnet'],
    ['bitcoin/blockbook-expected/sync_testdata_bitcoin.json', 'bitcoin', 'mainnet', 'bitcoin/mainnet'],
    ['bitcoin/blockbook-expected/rpc_testdata_bitcoin_testnet.json', 'bitcoin', 'testnet', 'bitcoin/testnet'],
    ['bitcoin/blockbook-expected/sync_testdata_bitcoin_testnet.json', 'bitcoin', 'testnet', 'bitcoin/testnet'],
    ['bitcoin/blockbook-expected/rpc_testdata_bitcoin_testnet4.json', 'bitcoin', 'testnet', 'bitcoin/testnet'],
    ['bitcoin/blockbook-expected/sync_testdata_bitcoin_testnet4.json', 'bitcoin', 'testnet', 'bitcoin/testnet'],
    ['bitcoin/blockbook-expected/rpc_testdata_bitcoin_signet.json', 'bitcoin', 'testnet', 'bitcoin/testnet'],
    ['bitcoin/blockbook-expected/sync_testdata_bitcoin_signet.json', 'bitcoin', 'testnet', 'bitcoin/testnet'],
    ['bitcoin-cash/blockbook-expected/rpc_testdata_bcash.json', 'bitcoin-cash', 'mainnet', 'bitcoin-cash/mainnet'],
    ['bitcoin-cash/blockbook-expected/sync_testdata_bcash.json', 'bitcoin-cash', 'mainnet', 'bitcoin-cash/mainnet'],
    ['litecoin/blockbook-expected/rpc_testdata_litecoin.json', 'litecoin', 'mainnet', 'litecoin/mainnet'],
    ['litecoin/blockbook-expected/sync_testdata_litecoin.json', 'litecoin', 'mainnet', 'litecoin/mainnet'],
    ['dogecoin/blockbook-expected/rpc_testdata_dogecoin.json', 'dogecoin', 'mainnet', 'dogecoin/mainnet'],
    ['dogecoin/blockbook-expected/sync_testdata_dogecoin.json', 'dogecoin', 'mainnet', 'dogecoin/mainnet'],
    ['dash/blockbook-expected/rpc_testdata_dash.json', 'dash', 'mainnet', 'dash/mainnet'],
    ['dash/blockbook-expected/sync_testdata_dash.json', 'dash', 'mainnet', 'dash/mainnet'],
    ['zcash/blockbook-expected/rpc_testdata_zcash.json', 'zcash', 'mainnet', 'zcash/mainnet'],
    ['zcash/blockbook-expected/sync_testdata_zcash.json', 'zcash', 'mainnet', 'zcash/mainnet'],
  ];

  /** The file's blocks as (synthetic) verbosity-1 blocks holding the transactions blockbook recorded, with those transactions. */
  function blocksOf(rel: string): { block: RpcBlock; txs: BlockbookTx[] }[] {
    const d = fixture<Record<string, unknown>>(rel);
    const parent = '11'.repeat(32);
    if ('txDetails' in d) {
      const txs = Object.values(d.txDetails as Record<string, BlockbookTx>);
      return [
        {
          block: {
            hash: d.blockHash as string,
            height: d.blockHeight as number,
            time: d.blockTime as number,
            previousblockhash: parent,
            tx: txs.map((t) => t.txid),
          },
          txs,
        },
      ];
    }
    const blocks = (d.connectBlocks as { blocks: Record<string, { height: number; hash: string; txDetails: BlockbookTx[] }> }).blocks;
    return Object.values(blocks).map((b) => ({
      block: { hash: b.hash, height: b.height, time: 0, previousblockhash: parent, tx: b.txDetails.map((t) => t.txid) },
      txs: b.txDetails,
    }));
  }

  /**
   * Defects of blockbook's test data itself, found by these checks (asserted, so they cannot hide others):
   * - sync_testdata_bitcoin_signet 15332: the `hex` of 2905c790… is a copy of 617bdcc5…'s (it hashes to 617bdcc5…).
   * - sync_testdata_bitcoin 541226, 541228, 541255: output 1 of one transaction each is spelled `scriptPubkey` (lower-case k).
   * - sync_testdata_bitcoin 542838: vin[0].txid of 17da91b3… holds that input's scriptSig hex, not 0e11c8d2… (see its raw hex).
   */
  const WRONG_HEX: Record<string, string[]> = {
    'bitcoin/blockbook-expected/sync_testdata_bitcoin_signet.json': ['2905c79019a54257e01fd6689fed30491d83c52fbb6b62ae87eaaa4dfa8341be'],
  };
  const BAD_INPUT: Record<string, string[]> = {
    'bitcoin/blockbook-expected/sync_testdata_bitcoin.json': ['17da91b3b0590ee84b51174a76c0a61126d2ce82830230371cae549e0c070cd0'],
  };
  const MISSPELT: Record<string, string[]> = {
    'bitcoin/blockbook-expected/sync_testdata_bitcoin.json': [
      '62665cce55418efe3dfe035d6f2c72259f1bf4a4a95dbb6bc27df39e9fd6f1fb:1',
      '3dbf8bf9d9dc161024c08fc22c938426f975da4a1da7830257cf149c260e6f89:1',
      'dcc55f1443084d97bcf17e7d7ac1d589ea947f4940030779a40cfd9731a24a9e:1',
    ],
  };

  for (const [rel, blockchain, network, paramsKey] of files) {
    it(`${rel}: values = raw hex; movements = raw hex with script-derived addresses`, () => {
      const params = PARAMS[paramsKey] as AddressParams;
      const cases = blocksOf(rel);
      expect(cases.length).toBeGreaterThan(0);
      let outputs = 0;
      const wrongHex: string[] = [];
      const misspelt: string[] = [];
      const badInputs: string[] = [];
      let movements = 0;
      for (const { block, txs: all } of cases) {
        expect(all.length).toBeGreaterThan(0);
        const sameTx = all.filter((t) => decodeRawTx(t.hex).txid === t.txid || !wrongHex.push(t.txid));
        const jsonInputs = (t: BlockbookTx) => (t.vin ?? []).map((v) => (v.coinbase ? undefined : `${v.txid}:${v.vout}`));
        const badInput = sameTx.filter((t) => JSON.stringify(jsonInputs(t)) !== JSON.stringify(decodeRawTx(t.hex).inputs)).map((t) => t.txid);
        badInputs.push(...badInput);
        // As recorded (most without addresses): normalises, ids in order; a malformed input is refused.
        if (badInput.length > 0) {
          expect(() => normalizeUtxoBlock({ block, transactions: all }, { blockchain, network })).toThrow(UtxoNormalizeError);
        } else {
          const plain = normalizeUtxoBlock({ block, transactions: all }, { blockchain, network });
          expect(plain.transactionIds).toEqual(all.map((t) => t.txid));
        }
        const txs = sameTx.filter((t) => !badInput.includes(t.txid));
        for (const tx of txs) {
          const decoded = decodeRawTx(tx.hex);
          expect(tx.vout.map((o) => parseCoinAmount(o.value))).toEqual(decoded.outputs.map((o) => o.value));
          for (const o of tx.vout) if (!o.scriptPubKey && o.scriptPubkey) misspelt.push(`${tx.txid}:${o.n}`);
          expect(tx.vout.map((o) => (o.scriptPubKey ?? o.scriptPubkey)?.hex)).toEqual(decoded.outputs.map((o) => o.script));
          outputs += tx.vout.length;
          // blockbook's own expected addresses (zcash) equal the script-derived ones.
          for (const [i, o] of tx.vout.entries()) {
            if (o.scriptPubKey?.addresses) expect(o.scriptPubKey.addresses).toEqual([addressFromScript(decoded.outputs[i]?.script as string, params)]);
          }
        }
        // With the addresses a node prints (derived from the script), every movement matches the hex computation.
        const derive = (script: string) => addressFromScript(script, params);
        const withAddresses = txs.map((t) => ({
          ...t,
          vout: t.vout.map((o) => {
            const spk = o.scriptPubKey ?? o.scriptPubkey;
            const a = spk ? derive(spk.hex) : undefined;
            return a === undefined ? o : { ...o, scriptPubKey: { ...spk, addresses: [a] } };
          }),
        }));
        const n = normalizeUtxoBlock({ block: { ...block, tx: txs.map((t) => t.txid) }, transactions: withAddresses }, { blockchain, network });
        // bitcoin-cash: the legacy spelling becomes cashaddr, as src/domain/addresses.ts normalises subscriptions.
        const canonical = (a: string) => {
          const v = validateAddress(blockchain, network, a);
          return v.ok ? v.normalized : a;
        };
        const expected = movementsFromHex(txs, derive).map((m) => ({ ...m, address: canonical(m.address) }));
        expect(n.coinMovements).toEqual(expected);
        movements += n.coinMovements.length;
        if (blockchain === 'bitcoin-cash') expect(n.coinMovements.every((m) => /^bitcoincash:[qp]/.test(m.address))).toBe(true);
      }
      expect(wrongHex).toEqual(WRONG_HEX[rel] ?? []);
      expect(misspelt).toEqual(MISSPELT[rel] ?? []);
      expect(badInputs).toEqual(BAD_INPUT[rel] ?? []);
      expect(movements).toBeGreaterThan(0);
      expect(outputs).toBeGreaterThan(0);
    });
  }
});

describe('utxo: outputs paid to addresses and the spends left to the ledger', () => {
  const addrBtc = (s: string) => addressFromScript(s, PARAMS['bitcoin/mainnet'] as AddressParams);
  /** `utxo.outputs` computed from the raw hex: every output whose script has an address, value from the 8-byte integer. */
  const outputsFromHex = (txs: FullTx[], address: (script: string) => string | undefined) =>
    txs.flatMap((t) =>
      decodeRawTx(t.hex).outputs.flatMap((o, n) => {
        const a = address(o.script);
        return a === undefined ? [] : [{ transactionId: t.txid, outpoint: `${t.txid}:${n}`, address: a, value: o.value }];
      }),
    );
  /** Inputs (not coinbase) as `txid:vout` with their transaction, in block order, from the raw hex. */
  const inputsFromHex = (txs: FullTx[]) =>
    txs.flatMap((t) => decodeRawTx(t.hex).inputs.flatMap((key) => (key === undefined ? [] : [{ transactionId: t.txid, outpoint: key }])));

  it('50001 without prevouts: every output with its address and outpoint; its 3 inputs are spends for the ledger', () => {
    const block = fixture<RpcBlock>(`${BTC_ETL}getblock_2_height50001_000000001c920d49.json`);
    const n = normalizeUtxoBlock({ block }, BTC_MAIN);
    expect(n.utxo?.outputs).toEqual(outputsFromHex(txsOf(block), addrBtc));
    expect(n.utxo?.outputs.map((o) => o.outpoint)).toEqual([
      'e1882d41800d96d0fddc196cd8d3f0b45d65b030c652d97eaba79a1174e64d58:0',
      '7940cdde4d713e171849efc6bd89939185be270266c94e92369e3877ad89455a:0',
      'f84761459a00c6df3176ae5d94c99e69f25100d09548e5686bd0c354bb8cc60a:0',
    ]);
    expect(n.utxo?.spends).toEqual(inputsFromHex(txsOf(block)));
    expect(n.utxo?.spends.map((s) => s.outpoint)).toEqual(prevoutsNeeded(block));
    expect(n.utxo?.resolvedSpends).toEqual([]);
    // Nothing the ledger resolves is also debited here: the coin movements only credit.
    expect(n.coinMovements.every((m) => m.delta > 0n)).toBe(true);
  });

  it('50001 with the prevouts resolved (caller or verbosity 3): no spends left, the same outputs', () => {
    const block = fixture<RpcBlock>(`${BTC_ETL}getblock_2_height50001_000000001c920d49.json`);
    const funding = ['0d37522b', '0dd0394c', '76a8d70a'].map((id) => fixture<FullTx>(`${BTC_ETL}getrawtransaction_true_${id}.json`));
    const prevouts = new Map<string, KnownPrevout>(
      funding.map((tx) => [prevoutKey(tx.txid, 0), { address: tx.vout?.[0]?.scriptPubKey?.addresses?.[0] as string, value: 5000000000n }]),
    );
    const withPrevouts = normalizeUtxoBlock({ block, prevouts }, BTC_MAIN);
    expect(withPrevouts.utxo?.spends).toEqual([]);
    // Still told, for the conflict check of announced transactions (src/ingest/dropped.ts): every input, in block order.
    expect(withPrevouts.utxo?.resolvedSpends).toEqual(inputsFromHex(txsOf(block)));
    expect(withPrevouts.utxo?.outputs).toEqual(outputsFromHex(txsOf(block), addrBtc));
    // Verbosity 3: the same prevouts inline.
    const byKey = new Map(funding.map((tx) => [prevoutKey(tx.txid, 0), tx.vout?.[0]]));
    const v3 = {
      ...block,
      tx: txsOf(block).map((t) => ({ ...t, vin: (t.vin ?? []).map((v) => (v.txid ? { ...v, prevout: byKey.get(prevoutKey(v.txid, v.vout as number)) } : v)) })),
    };
    const n3 = normalizeUtxoBlock({ block: v3 }, BTC_MAIN);
    expect(n3.utxo?.spends).toEqual([]);
    expect(n3.utxo?.resolvedSpends).toEqual(inputsFromHex(txsOf(block)));
    expect(n3.coinMovements).toEqual(withPrevouts.coinMovements);
    // One prevout missing: only that input is left to the ledger.
    const partial = new Map([...prevouts].slice(1));
    const n2 = normalizeUtxoBlock({ block, prevouts: partial }, BTC_MAIN);
    expect(n2.utxo?.spends.map((s) => s.outpoint)).toEqual([[...prevouts.keys()][0]]);
    expect(n2.utxo?.resolvedSpends?.map((s) => s.outpoint).sort()).toEqual([...prevouts.keys()].slice(1).sort());
  });

  it('766391 (modern Core): outputs equal the raw-hex derivation, incl. bech32/taproot; in-block spends are resolved, not left over', () => {
    const block = fixture<RpcBlock>(`${BTC_VIVITA}getblock_2_height766391_00000000000000000001ed7f.json`);
    const n = normalizeUtxoBlock({ block }, BTC_MAIN);
    // Modern Core prints no address for bare pubkey outputs: those are left out of both.
    const printed = new Set(txsOf(block).flatMap((t) => (t.vout ?? []).filter((o) => o.scriptPubKey?.address).map((o) => `${t.txid}:${o.n}`)));
    const fromHex = outputsFromHex(txsOf(block), addrBtc).filter((o) => printed.has(o.outpoint));
    expect(fromHex).toHaveLength(printed.size);
    expect(n.utxo?.outputs).toEqual(fromHex);
    const inBlock = new Set(txsOf(block).flatMap((t) => (t.vout ?? []).map((o) => `${t.txid}:${o.n}`)));
    const inputs = inputsFromHex(txsOf(block));
    expect(n.utxo?.spends).toEqual(inputs.filter((i) => !inBlock.has(i.outpoint)));
    expect(n.utxo?.spends.length).toBeLessThan(inputs.length);
    expect(n.utxo?.resolvedSpends).toEqual(inputs.filter((i) => inBlock.has(i.outpoint)));
  });

  it('litecoin 2383207: MWEB inputs are not spends, the HogEx input is, the HogEx output (no address) is no output', () => {
    const block = fixture<RpcBlock>(`${LTC_VIVITA}getblock_2_height2383207_84da0de24f1f7007.json`);
    const chain = { blockchain: 'litecoin', network: 'mainnet' } as const;
    const txs = txsOf(block).map((t, i) => (i === 1 ? { ...t, vin: [...(t.vin ?? []), { ismweb: true, output_id: 'ab'.repeat(32) }] } : t));
    const n = normalizeUtxoBlock({ block: { ...block, tx: txs } }, chain);
    const hogEx = txs.at(-1) as FullTx;
    expect(n.utxo?.spends.map((s) => s.outpoint)).toEqual(prevoutsNeeded(block));
    expect(n.utxo?.spends.at(-1)).toEqual({ transactionId: hogEx.txid, outpoint: `${hogEx.vin?.[0]?.txid}:${hogEx.vin?.[0]?.vout}` });
    expect(n.utxo?.outputs.some((o) => o.transactionId === hogEx.txid)).toBe(false);
    expect(n.utxo?.outputs).toEqual(outputsFromHex(txsOf(block), (s) => addressFromScript(s, PARAMS['litecoin/mainnet'] as AddressParams)));
  });

  it('bitcoin-cash: output addresses are normalised to cashaddr like subscriptions', () => {
    const block = fixture<RpcBlock>('bitcoin-cash/mainnet/bitcoin-etl/getblock_true_height91722_00000000000271a2.json');
    const tx = fixture<FullTx>('bitcoin-cash/mainnet/bitcoin-etl/getrawtransaction_true_e3bf3d07.json');
    const legacy = addressFromScript(decodeRawTx(tx.hex).outputs[0]?.script as string, PARAMS['bitcoin-cash/mainnet'] as AddressParams) as string;
    const legacyTx = { ...tx, vout: (tx.vout ?? []).map((o) => ({ ...o, scriptPubKey: { ...o.scriptPubKey, addresses: [legacy] } })) };
    const n = normalizeUtxoBlock({ block, transactions: [legacyTx] }, { blockchain: 'bitcoin-cash', network: 'mainnet' });
    expect(n.utxo).toEqual({
      outputs: [{ transactionId: tx.txid, outpoint: `${tx.txid}:0`, address: 'bitcoincash:qzkddwa6hgh03skr4qsrygk7e087zjydxgqkpjnsw7', value: 5000000000n }],
      spends: [],
      resolvedSpends: [],
    });
  });
});

describe('structurally invalid input throws UtxoNormalizeError; fork extras never do', () => {
  const block = fixture<RpcBlock>(`${BTC_ETL}getblock_2_height50001_000000001c920d49.json`);
  const txs = txsOf(block);
  const variant = (change: Partial<RpcBlock>) => ({ ...block, ...change });
  const withTx = (i: number, tx: Record<string, unknown>) => variant({ tx: txs.map((t, j) => (j === i ? (tx as RpcTransaction) : t)) });

  it('missing or malformed header fields', () => {
    const cases: [RpcBlock, RegExp][] = [
      [variant({ hash: undefined }), /block hash/],
      [variant({ hash: 'zz'.repeat(32) }), /block hash/],
      [variant({ height: undefined }), /block height/],
      [variant({ height: -1 }), /block height/],
      [variant({ height: 1.5 }), /block height/],
      [variant({ time: undefined }), /block time/],
      [variant({ previousblockhash: undefined }), /no previousblockhash/],
      [variant({ previousblockhash: 'abc' }), /previousblockhash/],
      [variant({ tx: undefined }), /no tx array/],
      [null as unknown as RpcBlock, /not an object/],
    ];
    for (const [b, message] of cases) {
      expect(() => normalizeUtxoBlock({ block: b }, BTC_MAIN)).toThrow(UtxoNormalizeError);
      expect(() => normalizeUtxoBlock({ block: b }, BTC_MAIN)).toThrow(message);
    }
  });

  it('transactions without txid, outputs without a readable amount, inputs without a reference', () => {
    const tx = txs[1] as FullTx;
    const cases: [RpcBlock, RegExp][] = [
      [withTx(1, { ...tx, txid: undefined }), /txid of transaction 1/],
      [withTx(1, { ...tx, txid: tx.hash?.slice(1) }), /txid of transaction 1/],
      [variant({ tx: [...txs, 42 as unknown as string] }), /txid of transaction 3/],
      [withTx(1, { ...tx, vout: [{ n: 0, scriptPubKey: {} }] }), /output 0 of 7940cdde.*value/],
      [withTx(1, { ...tx, vout: [{ n: 0, value: -1 }] }), /negative/],
      [withTx(1, { ...tx, vout: [{ n: 0, value: 0.000000001 }] }), /more than 8 decimals/],
      [withTx(1, { ...tx, vout: [{ n: 0, value: 1, valueZat: 1.5 }] }), /valueZat/],
      [withTx(1, { ...tx, vout: 'x' }), /vout that is not an array/],
      [withTx(1, { ...tx, vin: [{ sequence: 1 }] }), /neither coinbase nor/],
      [withTx(1, { ...tx, vin: [{ txid: tx.txid, vout: -1 }] }), /neither coinbase nor/],
      [withTx(1, { ...tx, vin: [null] }), /input 0 of .* not an object/],
    ];
    for (const [b, message] of cases) expect(() => normalizeUtxoBlock({ block: b }, BTC_MAIN)).toThrow(message);
    // prevoutsNeeded applies the same checks.
    expect(() => prevoutsNeeded(withTx(1, { ...tx, vin: [{ sequence: 1 }] }))).toThrow(UtxoNormalizeError);
    const key = prevoutsNeeded(block)[0] as string;
    expect(() => normalizeUtxoBlock({ block, prevouts: new Map([[key, { value: 5 as unknown as bigint }]]) }, BTC_MAIN)).toThrow(/prevouts entry/);
    expect(() => normalizeUtxoBlock({ block, prevouts: {} as Map<string, KnownPrevout> }, BTC_MAIN)).toThrow(/prevouts/);
    expect(() => normalizeUtxoBlock({ block, transactions: [{ txid: 'x' }] }, BTC_MAIN)).toThrow(/getrawtransaction result 0/);
  });

  it('bare multisig, nonstandard and address-less outputs move nothing; a prevout without address debits nobody', () => {
    const tx = txs[1] as FullTx;
    const b = withTx(1, {
      ...tx,
      vout: [
        { n: 0, value: 1, scriptPubKey: { type: 'multisig', addresses: ['1HaHTfmvoUW6i6nhJf8jJs6tU4cHNmBQHQ', '1PkqKGbNLDdDJGveCcNUMV9CEFH77ADrPQ'] } },
        { n: 1, value: 2, scriptPubKey: { type: 'nonstandard' } },
        { n: 2, value: 3, scriptPubKey: { type: 'pubkey' } },
        { n: 3, value: 0, scriptPubKey: { type: 'nulldata' } },
        { n: 4, value: 4 },
      ],
    });
    const keys = prevoutsNeeded(b);
    const prevouts = new Map(keys.map((k) => [k, { value: 100n }]));
    expect(normalizeUtxoBlock({ block: b, prevouts }, BTC_MAIN).coinMovements.filter((m) => m.transactionId === tx.txid)).toEqual([]);
  });

  it('zero nets are omitted: an address paying itself back exactly', () => {
    const tx = txs[2] as FullTx; // spends 0d37522b…:0 (50 BTC of 18dxbN…)
    const b = withTx(2, { ...tx, vout: [{ n: 0, value: 50, scriptPubKey: { addresses: ['18dxbN6m8zxieN8F9BchXmhbeXUdFLr8fD'] } }] });
    const prevouts = new Map([[prevoutsNeeded(b).at(-1) as string, { address: '18dxbN6m8zxieN8F9BchXmhbeXUdFLr8fD', value: 5000000000n }]]);
    expect(normalizeUtxoBlock({ block: b, prevouts }, BTC_MAIN).coinMovements.filter((m) => m.transactionId === tx.txid)).toEqual([]);
  });

  it('Dash special transactions (type, extraPayload, valueSat) and Dogecoin auxpow are ignored', () => {
    // A real output script of dash 894503 (blockbook's rpc_testdata_dash), as the node would print its address.
    const address = addressFromScript('76a91456354204e7505cb7f4de7c37ffb32ff25b41cd6c88ac', PARAMS['dash/mainnet'] as AddressParams) as string;
    expect(validateAddress('dash', 'mainnet', address)).toEqual({ ok: true, normalized: address });
    const dash = {
      hash: 'ab'.repeat(32),
      height: 1028160,
      previousblockhash: 'cd'.repeat(32),
      time: 1551436935,
      cbTx: { version: 1, height: 1028160 },
      auxpow: { tx: { hex: '00' }, chainindex: 0 },
      tx: [
        {
          txid: 'ef'.repeat(32),
          version: 3,
          type: 5,
          extraPayloadSize: 70,
          extraPayload: '0100',
          cbTx: { version: 1 },
          vin: [{ coinbase: '03', sequence: 1 }],
          vout: [{ value: 1.67, valueSat: 167000000, n: 0, scriptPubKey: { addresses: [address], type: 'pubkeyhash' } }],
        },
        { txid: '12'.repeat(32), version: 3, type: 6, extraPayload: '01', vin: [], vout: [] },
      ],
    };
    const n = normalizeUtxoBlock({ block: dash }, { blockchain: 'dash', network: 'mainnet' });
    expect(n.transactionIds).toEqual(['ef'.repeat(32), '12'.repeat(32)]);
    expect(n.coinMovements).toEqual([{ transactionId: 'ef'.repeat(32), address, delta: 167000000n }]);
  });

  it('an address that does not validate for the chain and network is kept as the node printed it', () => {
    const tx = txs[1] as FullTx;
    const typo = '1HaHTfmvoUW6i6nhJf8jJs6tU4cHNmBQHR';
    expect(validateAddress('bitcoin', 'mainnet', typo).ok).toBe(false);
    const b = withTx(1, { ...tx, vout: [{ n: 0, value: 1, scriptPubKey: { address: typo } }] });
    expect(byTx(normalizeUtxoBlock({ block: b }, BTC_MAIN).coinMovements, tx.txid)).toEqual({ [typo]: 100000000n });
  });
});
