/**
 * normalizeUtxoBlock and encodeCompactBlock in one pass, for the block workers (block-worker.ts): a block's
 * transactions go straight into the compact columns (compact-block.ts) without the NormalizedBlock's
 * tens of thousands of objects in between (one per movement and output, a `txid:n` string per output, a
 * Map per transaction for the nets, a BigInt per amount), which the worker built only to take apart again.
 *
 * The rules are normalize.ts's (its module comment), and the answer is the same: decodeCompactBlock of it
 * equals normalizeUtxoBlock's result (normalize-compact.test.ts checks it on every recorded block). Only the
 * common case is handled here: getblock with transaction objects (verbosity 2 or 3), amounts that are safe
 * integers in base units. Anything else (verbosity 1 with its transactions, a malformed field, an amount
 * beyond 2^51 base units) is handed to normalizeUtxoBlock + encodeCompactBlock, which also gives any error
 * its usual message.
 */
import type { CompactUtxoBlock } from './compact-block.ts';
import { encodeCompactBlock } from './compact-block.ts';
import {
  normalizeNodeAddress,
  normalizeUtxoBlock,
  normalizeUtxoBlockHeader,
  parseBaseUnits,
  parseCoinAmount,
  scriptAddress,
  type UtxoBlockInput,
  type UtxoChainRef,
} from './normalize.ts';
import type { RpcOutput, RpcScriptPubKey, RpcTransaction } from './rpc-types.ts';

/** This block is left to the general path (normalizeUtxoBlock). */
class Irregular extends Error {}

const HASH = /^[0-9a-fA-F]{64}$/;
/** 2^51 satoshis in coins (normalize.ts's fast amount path: below it a double's rounding stays under half a unit). */
const FAST_AMOUNT_LIMIT = 2 ** 51 / 1e8;

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/** An amount in base units as a safe integer, as normalize.ts's outputValue reads it; Irregular when it cannot be. */
function units(out: RpcOutput): number {
  let value: bigint | number;
  if (out.valueZat !== undefined && out.valueZat !== null) value = parseBaseUnits(out.valueZat, 'valueZat');
  else if (out.valueSat !== undefined && out.valueSat !== null) value = parseBaseUnits(out.valueSat, 'valueSat');
  else {
    const v = out.value;
    if (typeof v === 'number' && v >= 0 && v < FAST_AMOUNT_LIMIT) {
      const u = Math.round(v * 1e8);
      if (u / 1e8 !== v) throw new Irregular();
      return u;
    }
    value = parseCoinAmount(v);
  }
  const n = Number(value);
  if (value < 0 || !Number.isSafeInteger(n)) throw new Irregular();
  return n;
}

/** Beyond this a double no longer holds every integer: a net that reaches it leaves the block to the general path. */
const SAFE = 2 ** 53;

/** The compact form of the block (what encodeCompactBlock(normalizeUtxoBlock(input, chain)) stands for), and the buffers to transfer. */
export function normalizeUtxoBlockCompact(input: UtxoBlockInput, chain: UtxoChainRef): { compact: CompactUtxoBlock; transfer: ArrayBuffer[] } {
  if (input.transactions === undefined && input.prevouts === undefined) {
    try {
      return fastPath(input, chain);
    } catch (error) {
      if (!(error instanceof Irregular) && !(error instanceof Error && error.name === 'UtxoNormalizeError')) throw error;
    }
  }
  return encodeCompactBlock(normalizeUtxoBlock(input, chain));
}

function fastPath(input: UtxoBlockInput, chain: UtxoChainRef): { compact: CompactUtxoBlock; transfer: ArrayBuffer[] } {
  const header = normalizeUtxoBlockHeader(input.block);
  const txs = input.block.tx as unknown[];
  const ids = header.transactionIds;

  // Addresses: as the node printed them → index of the normalised form (two spellings may normalise alike).
  const addresses: string[] = [];
  const byRaw = new Map<string, number>();
  const byNormalized = new Map<string, number>();
  const addressOf = (raw: string): number => {
    let i = byRaw.get(raw);
    if (i === undefined) {
      const normalized = normalizeNodeAddress(chain, raw);
      i = byNormalized.get(normalized);
      if (i === undefined) {
        i = addresses.length;
        addresses.push(normalized);
        byNormalized.set(normalized, i);
      }
      byRaw.set(raw, i);
    }
    return i;
  };

  // The block's outputs by `txid:vout`, built only when an input has no prevout inline (verbosity 2).
  let inBlock: Map<string, { address: number; value: number }> | undefined;
  const blockOutputs = () => {
    if (inBlock === undefined) {
      inBlock = new Map();
      for (let t = 0; t < txs.length; t++) {
        const tx = txs[t] as RpcTransaction;
        const vout = tx.vout ?? [];
        for (let i = 0; i < vout.length; i++) {
          const o = vout[i] as RpcOutput;
          if (o.ismweb === true) continue;
          const n = typeof o.n === 'number' && Number.isSafeInteger(o.n) && o.n >= 0 ? o.n : i;
          const raw = scriptAddress(o.scriptPubKey);
          inBlock.set(`${ids[t]}:${n}`, { address: raw === undefined ? -1 : addressOf(raw), value: units(o) });
        }
      }
    }
    return inBlock;
  };

  const movementTx: number[] = [];
  const movementAddress: number[] = [];
  const movementDelta: number[] = [];
  const outputTx: number[] = [];
  const outputN: number[] = [];
  const outputAddress: number[] = [];
  const outputValue: number[] = [];
  const spendTx: number[] = [];
  const spendOutpoints: string[] = [];
  const resolvedTx: number[] = [];
  const resolvedOutpoints: string[] = [];

  // The current transaction's nets, in order of first touch: the address's place in them, valid while its stamp is the transaction's.
  const touched: number[] = [];
  const nets: number[] = [];
  const place: number[] = [];
  const stamp: number[] = [];
  const add = (t: number, address: number, delta: number) => {
    if (delta === 0) return;
    if (stamp[address] === t) {
      const k = place[address] as number;
      const net = (nets[k] as number) + delta;
      if (!(Math.abs(net) < SAFE)) throw new Irregular();
      nets[k] = net;
    } else {
      stamp[address] = t;
      place[address] = touched.length;
      touched.push(address);
      nets.push(delta);
    }
  };

  for (let t = 0; t < txs.length; t++) {
    const tx = txs[t];
    if (!isObject(tx)) throw new Irregular();
    touched.length = 0;
    nets.length = 0;
    const vin = tx.vin ?? [];
    const vout = tx.vout ?? [];
    if (!Array.isArray(vin) || !Array.isArray(vout)) throw new Irregular();
    for (const v of vin) {
      if (!isObject(v)) throw new Irregular();
      if (v.ismweb === true || (v.coinbase !== undefined && v.coinbase !== null)) continue;
      const prevTxid = v.txid;
      const n = v.vout;
      if (typeof prevTxid !== 'string' || !HASH.test(prevTxid) || typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) throw new Irregular();
      const key = `${prevTxid.toLowerCase()}:${n}`;
      const prevout = v.prevout;
      if (isObject(prevout)) {
        const value = units(prevout);
        const raw = scriptAddress(prevout.scriptPubKey as RpcScriptPubKey | undefined);
        if (raw !== undefined) add(t, addressOf(raw), -value);
        resolvedTx.push(t);
        resolvedOutpoints.push(key);
        continue;
      }
      const known = blockOutputs().get(key);
      if (known === undefined) {
        spendTx.push(t);
        spendOutpoints.push(key);
        continue;
      }
      if (known.address >= 0) add(t, known.address, -known.value);
      resolvedTx.push(t);
      resolvedOutpoints.push(key);
    }
    for (let i = 0; i < vout.length; i++) {
      const o = vout[i];
      if (!isObject(o)) throw new Irregular();
      if (o.ismweb === true) continue;
      const value = units(o);
      const raw = scriptAddress(o.scriptPubKey as RpcScriptPubKey | undefined);
      if (raw === undefined) continue;
      const n = typeof o.n === 'number' && Number.isSafeInteger(o.n) && o.n >= 0 ? o.n : i;
      const address = addressOf(raw);
      add(t, address, value);
      outputTx.push(t);
      outputN.push(n);
      outputAddress.push(address);
      outputValue.push(value);
    }
    for (let k = 0; k < touched.length; k++) {
      const net = nets[k] as number;
      if (net === 0) continue;
      movementTx.push(t);
      movementAddress.push(touched[k] as number);
      movementDelta.push(net);
    }
  }

  const compact: CompactUtxoBlock = {
    height: header.height,
    hash: header.hash,
    parentHash: header.parentHash,
    timestamp: header.timestamp,
    transactionIds: ids,
    addresses,
    movementTx: Uint32Array.from(movementTx),
    movementAddress: Uint32Array.from(movementAddress),
    movementDelta: Float64Array.from(movementDelta),
    outputTx: Uint32Array.from(outputTx),
    outputN: Float64Array.from(outputN),
    outputAddress: Uint32Array.from(outputAddress),
    outputValue: Float64Array.from(outputValue),
    spendTx: Uint32Array.from(spendTx),
    spendOutpoints,
    resolvedTx: Uint32Array.from(resolvedTx),
    resolvedOutpoints,
  };
  const transfer = [
    compact.movementTx,
    compact.movementAddress,
    compact.movementDelta,
    compact.outputTx,
    compact.outputN,
    compact.outputAddress,
    compact.outputValue,
    compact.spendTx,
    compact.resolvedTx,
  ].map((column) => (column as Uint32Array).buffer as ArrayBuffer);
  return { compact, transfer };
}
