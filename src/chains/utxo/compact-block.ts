/**
 * A normalised Bitcoin-family block in the compact form a block worker posts to the main thread
 * (block-workers.ts): columns instead of one object per movement and output, each address once, amounts in
 * BigInt64Arrays whose buffers are transferred rather than copied. Structured cloning tens of thousands of
 * small objects costs the receiving thread more than this form plus building the objects from it (measured
 * in bench/utxo-block.ts, part c); the JSON never crosses at all.
 *
 * Only what normalizeUtxoBlock produces is carried: no token or internal transfers (Omni transfers are read
 * on the main thread and added there).
 */
import type { NormalizedBlock } from '../types.ts';

export interface CompactUtxoBlock {
  height: number;
  hash: string;
  parentHash: string;
  timestamp: number;
  transactionIds: string[];
  /** Every address of the block's movements and outputs, once each. */
  addresses: string[];
  /** Movements: index into transactionIds, index into addresses, delta. */
  movementTx: Uint32Array;
  movementAddress: Uint32Array;
  movementDelta: Amounts;
  /** utxo.outputs: transaction index, output number (the outpoint is `txid:n`), address index, value. */
  outputTx: Uint32Array;
  outputN: Float64Array;
  outputAddress: Uint32Array;
  outputValue: Amounts;
  /** utxo.spends: transaction index and the spent outpoint. */
  spendTx: Uint32Array;
  spendOutpoints: string[];
  /** utxo.resolvedSpends, the same way. */
  resolvedTx: Uint32Array;
  resolvedOutpoints: string[];
}

/**
 * A BigInt64Array when every amount fits (always, but for a dogecoin amount above 2^63 koinu), else plain
 * bigints; a Float64Array of safe integers from normalize-compact.ts (no BigInt made per amount in the worker).
 */
type Amounts = Float64Array | BigInt64Array | bigint[];

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

function amounts(values: bigint[]): Amounts {
  for (const v of values) if (v < INT64_MIN || v > INT64_MAX) return values;
  return BigInt64Array.from(values);
}

/** The compact form of `block`, and the buffers to transfer with it. */
export function encodeCompactBlock(block: NormalizedBlock): { compact: CompactUtxoBlock; transfer: ArrayBuffer[] } {
  if (block.tokenTransfers.length > 0 || block.internalTransfers.length > 0) throw new Error('a compact block carries no token or internal transfers');
  const txIndex = new Map<string, number>();
  for (const [i, id] of block.transactionIds.entries()) txIndex.set(id, i);
  const addressIndex = new Map<string, number>();
  const addresses: string[] = [];
  const addressOf = (address: string): number => {
    let i = addressIndex.get(address);
    if (i === undefined) {
      i = addresses.length;
      addresses.push(address);
      addressIndex.set(address, i);
    }
    return i;
  };
  const txOf = (id: string): number => {
    const i = txIndex.get(id);
    if (i === undefined) throw new Error(`transaction ${id} is not in block ${block.height}`);
    return i;
  };

  const moves = block.coinMovements;
  const movementTx = new Uint32Array(moves.length);
  const movementAddress = new Uint32Array(moves.length);
  moves.forEach((m, i) => {
    movementTx[i] = txOf(m.transactionId);
    movementAddress[i] = addressOf(m.address);
  });
  const outputs = block.utxo?.outputs ?? [];
  const outputTx = new Uint32Array(outputs.length);
  const outputN = new Float64Array(outputs.length);
  const outputAddress = new Uint32Array(outputs.length);
  outputs.forEach((o, i) => {
    const tx = txOf(o.transactionId);
    const n = Number(o.outpoint.slice(o.transactionId.length + 1));
    if (o.outpoint !== `${o.transactionId}:${n}`) throw new Error(`output ${o.outpoint} is not an output of ${o.transactionId}`);
    outputTx[i] = tx;
    outputN[i] = n;
    outputAddress[i] = addressOf(o.address);
  });
  const spends = block.utxo?.spends ?? [];
  const spendTx = new Uint32Array(spends.length);
  spends.forEach((s, i) => {
    spendTx[i] = txOf(s.transactionId);
  });
  const resolvedSpends = block.utxo?.resolvedSpends ?? [];
  const resolvedTx = new Uint32Array(resolvedSpends.length);
  resolvedSpends.forEach((s, i) => {
    resolvedTx[i] = txOf(s.transactionId);
  });

  const compact: CompactUtxoBlock = {
    height: block.height,
    hash: block.hash,
    parentHash: block.parentHash,
    timestamp: block.timestamp,
    transactionIds: block.transactionIds,
    addresses,
    movementTx,
    movementAddress,
    movementDelta: amounts(moves.map((m) => m.delta)),
    outputTx,
    outputN,
    outputAddress,
    outputValue: amounts(outputs.map((o) => o.value)),
    spendTx,
    spendOutpoints: spends.map((s) => s.outpoint),
    resolvedTx,
    resolvedOutpoints: resolvedSpends.map((s) => s.outpoint),
  };
  const transfer: ArrayBuffer[] = [];
  for (const column of [movementTx, movementAddress, compact.movementDelta, outputTx, outputN, outputAddress, compact.outputValue, spendTx, resolvedTx]) {
    if (!Array.isArray(column)) transfer.push(column.buffer as ArrayBuffer);
  }
  return { compact, transfer };
}

/** The NormalizedBlock `compact` stands for. */
export function decodeCompactBlock(compact: CompactUtxoBlock): NormalizedBlock {
  const { transactionIds: ids, addresses } = compact;
  const at = <T>(list: readonly T[], i: number): T => list[i] as T;
  const amount = (column: Amounts, i: number): bigint => {
    const v = column[i] as number | bigint;
    return typeof v === 'number' ? BigInt(v) : v;
  };
  const coinMovements = Array.from(compact.movementTx, (tx, i) => ({
    transactionId: at(ids, tx),
    address: at(addresses, compact.movementAddress[i] as number),
    delta: amount(compact.movementDelta, i),
  }));
  const outputs = Array.from(compact.outputTx, (tx, i) => {
    const transactionId = at(ids, tx);
    return {
      transactionId,
      outpoint: `${transactionId}:${compact.outputN[i] as number}`,
      address: at(addresses, compact.outputAddress[i] as number),
      value: amount(compact.outputValue, i),
    };
  });
  const spends = Array.from(compact.spendTx, (tx, i) => ({ transactionId: at(ids, tx), outpoint: at(compact.spendOutpoints, i) }));
  const resolvedSpends = Array.from(compact.resolvedTx, (tx, i) => ({ transactionId: at(ids, tx), outpoint: at(compact.resolvedOutpoints, i) }));
  return {
    height: compact.height,
    hash: compact.hash,
    parentHash: compact.parentHash,
    timestamp: compact.timestamp,
    transactionIds: ids,
    tokenTransfers: [],
    internalTransfers: [],
    coinMovements,
    utxo: { outputs, spends, resolvedSpends },
    addresses,
  };
}
