/**
 * Transactions and blocks of the fake nodes, serialised as the real chains serialise them: legacy and
 * segwit (BIP-144) transactions, Dash special transactions (version 3 with a type and extraPayload),
 * zcash v4 (Sapling) transactions with their shielded parts, and block headers. Ids are the double
 * SHA-256 of those bytes shown big-endian, so `txid`, `hash` (wtxid), sizes, weights and merkle roots
 * are consistent with the `hex` the fake prints.
 */

import { ByteWriter, concat, displayHex, fromHex, internalBytes, sha256d } from './encoding.ts';
import type { OmniMessage } from './omni-payload.ts';

export interface TxInput {
  /** Absent on a coinbase input. */
  prevout?: { txid: string; vout: number };
  scriptSig: Uint8Array;
  /** The pushes of scriptSig (for the asm), or the coinbase script as one part. */
  scriptSigParts: Uint8Array[];
  witness: Uint8Array[];
  sequence: number;
}

export interface TxOutput {
  value: bigint;
  script: Uint8Array;
}

/** Sapling spend/output descriptions as zcashd prints them (hex fields). */
export interface ShieldedSpend {
  cv: string;
  anchor: string;
  nullifier: string;
  rk: string;
  proof: string;
  spendAuthSig: string;
}
export interface ShieldedOutput {
  cv: string;
  cmu: string;
  ephemeralKey: string;
  encCiphertext: string;
  outCiphertext: string;
  proof: string;
}

export interface DashPayload {
  type: number;
  extraPayload: Uint8Array;
  cbTx?: { version: number; height: number; merkleRootMNList: string; merkleRootQuorums: string };
}

export interface ZcashParts {
  versionGroupId: number;
  expiryHeight: number;
  /** Net value leaving the Sapling pool into the transparent part (negative when shielding). */
  valueBalance: bigint;
  spends: ShieldedSpend[];
  outputs: ShieldedOutput[];
  bindingSig?: string;
}

export interface TxSpec {
  version: number;
  locktime: number;
  vin: TxInput[];
  vout: TxOutput[];
  dash?: DashPayload;
  zcash?: ZcashParts;
  /** The Omni message the transaction carries (the fake's own record of what it encoded). */
  omni?: OmniMessage;
  /** Fee in base units (inputs − outputs, shielded balance included); undefined for a coinbase. */
  fee?: bigint;
}

export interface Tx extends TxSpec {
  txid: string;
  /** wtxid (differs from txid when the transaction has witness data). */
  hash: string;
  coinbase: boolean;
  raw: Uint8Array;
  size: number;
  strippedSize: number;
  vsize: number;
  weight: number;
}

function writeInputsOutputs(w: ByteWriter, spec: TxSpec): void {
  w.varint(spec.vin.length);
  for (const input of spec.vin) {
    w.bytes(input.prevout ? internalBytes(input.prevout.txid) : new Uint8Array(32));
    w.u32(input.prevout ? input.prevout.vout : 0xffffffff);
    w.varbytes(input.scriptSig).u32(input.sequence);
  }
  w.varint(spec.vout.length);
  for (const output of spec.vout) w.i64(output.value).varbytes(output.script);
}

function serialise(spec: TxSpec, withWitness: boolean): Uint8Array {
  const w = new ByteWriter();
  if (spec.zcash) {
    const z = spec.zcash;
    w.u32((0x80000000 | spec.version) >>> 0).u32(z.versionGroupId);
    writeInputsOutputs(w, spec);
    w.u32(spec.locktime).u32(z.expiryHeight).i64(z.valueBalance);
    w.varint(z.spends.length);
    for (const s of z.spends) w.bytes(fromHex(s.cv + s.anchor + s.nullifier + s.rk + s.proof + s.spendAuthSig));
    w.varint(z.outputs.length);
    for (const o of z.outputs) w.bytes(fromHex(o.cv + o.cmu + o.ephemeralKey + o.encCiphertext + o.outCiphertext + o.proof));
    w.varint(0); // no JoinSplits
    if (z.bindingSig) w.bytes(fromHex(z.bindingSig));
    return w.build();
  }
  const segwit = withWitness && spec.vin.some((i) => i.witness.length > 0);
  w.u32(spec.dash ? (spec.version | (spec.dash.type << 16)) >>> 0 : spec.version);
  if (segwit) w.u8(0).u8(1);
  writeInputsOutputs(w, spec);
  if (segwit) {
    for (const input of spec.vin) {
      w.varint(input.witness.length);
      for (const item of input.witness) w.varbytes(item);
    }
  }
  w.u32(spec.locktime);
  if (spec.dash && spec.dash.type !== 0) w.varbytes(spec.dash.extraPayload);
  return w.build();
}

export function buildTx(spec: TxSpec): Tx {
  const raw = serialise(spec, true);
  const stripped = serialise(spec, false);
  const weight = stripped.length * 3 + raw.length;
  return {
    ...spec,
    txid: displayHex(sha256d(stripped)),
    hash: displayHex(sha256d(raw)),
    coinbase: spec.vin.length === 1 && spec.vin[0]?.prevout === undefined,
    raw,
    size: raw.length,
    strippedSize: stripped.length,
    vsize: Math.ceil(weight / 4),
    weight,
  };
}

/** Bitcoin's merkle root of display-order ids (the last node is paired with itself on odd levels). */
export function merkleRoot(ids: readonly string[]): string {
  if (ids.length === 0) return '0'.repeat(64);
  let level = ids.map(internalBytes);
  while (level.length > 1) {
    const next: Uint8Array[] = [];
    for (let i = 0; i < level.length; i += 2) {
      const left = level[i] as Uint8Array;
      next.push(sha256d(concat(left, level[i + 1] ?? left)));
    }
    level = next;
  }
  return displayHex(level[0] as Uint8Array);
}

export interface HeaderSpec {
  version: number;
  prevHash: string;
  merkleRoot: string;
  time: number;
  bits: number;
  nonce: number;
  /** zcash: the 32-byte nonce, Sapling root and Equihash solution. */
  zcash?: { finalSaplingRoot: string; nonce: string; solution: string };
}

export function serialiseHeader(h: HeaderSpec): Uint8Array {
  const w = new ByteWriter().u32(h.version).bytes(internalBytes(h.prevHash)).bytes(internalBytes(h.merkleRoot));
  if (h.zcash) {
    w.bytes(internalBytes(h.zcash.finalSaplingRoot)).u32(h.time).u32(h.bits).bytes(internalBytes(h.zcash.nonce)).varbytes(fromHex(h.zcash.solution));
  } else {
    w.u32(h.time).u32(h.bits).u32(h.nonce);
  }
  return w.build();
}

export function serialiseBlock(header: Uint8Array, txs: readonly Tx[], withWitness = true): Uint8Array {
  const w = new ByteWriter().bytes(header).varint(txs.length);
  for (const tx of txs) w.bytes(withWitness ? tx.raw : serialise(tx, false));
  return w.build();
}
