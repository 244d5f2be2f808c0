/**
 * The id of a raw Bitcoin-family transaction (the bytes a node publishes on ZMQ `rawtx`), computed here
 * rather than asked of the node: double SHA-256 of the serialisation without segwit witnesses, byte-reversed.
 * Only the id: what the transaction pays is read from the node as for a polled one (zmq-mempool.ts), so
 * both paths normalise the same answer. No I/O.
 *
 * Formats read: legacy (every chain; bitcoin-cash, dogecoin and dash have nothing else: a Dash special
 * transaction's payload is part of the hashed bytes), segwit (flag 1), Zcash v1 to v4 (the whole bytes are
 * hashed as well). Not read, answered undefined (the caller asks the node): Zcash v5 (ZIP-244 ids) and
 * Litecoin's MWEB flag.
 */
import { createHash } from 'node:crypto';

export interface RawTransactionId {
  /** Lower-case hex, as nodes print it. */
  txid: string;
  /** A coinbase (its only input spends no output): only published when its block connects, never pending. */
  coinbase: boolean;
}

const ZCASH_OVERWINTERED = 0x80000000;

/** The id of `raw`, or undefined when its format is not one read here (see above) or the bytes are cut short. */
export function rawTransactionId(raw: Uint8Array): RawTransactionId | undefined {
  const bytes = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
  if (bytes.length < 10) return undefined;
  const header = bytes.readUInt32LE(0);
  // Zcash v5 and later: the id is a tree of BLAKE2b hashes (ZIP-244), not read here.
  if (header & ZCASH_OVERWINTERED && (header & 0x7fffffff) >= 5) return undefined;
  const segwit = bytes[4] === 0x00 && bytes[5] !== 0x00;
  if (segwit && bytes[5] !== 0x01) return undefined; // MWEB (Litecoin's flag 8) or unknown
  try {
    const reader = new Reader(bytes, segwit ? 6 : 4);
    const inputsStart = reader.at;
    const inputs = reader.varint();
    let coinbase = false;
    for (let i = 0; i < inputs; i++) {
      const prevout = reader.take(36);
      if (inputs === 1 && prevout.subarray(0, 32).every((b) => b === 0) && prevout.readUInt32LE(32) === 0xffffffff) coinbase = true;
      reader.take(reader.varint()); // scriptSig
      reader.take(4); // sequence
    }
    const outputs = reader.varint();
    for (let i = 0; i < outputs; i++) {
      reader.take(8);
      reader.take(reader.varint());
    }
    if (!segwit) return { txid: hash(bytes), coinbase };
    const outputsEnd = reader.at;
    for (let i = 0; i < inputs; i++) {
      const items = reader.varint();
      for (let j = 0; j < items; j++) reader.take(reader.varint());
    }
    const lockTime = reader.take(4);
    if (reader.at !== bytes.length) return undefined;
    return { txid: hash(Buffer.concat([bytes.subarray(0, 4), bytes.subarray(inputsStart, outputsEnd), lockTime])), coinbase };
  } catch {
    return undefined;
  }
}

function hash(bytes: Buffer): string {
  const once = createHash('sha256').update(bytes).digest();
  return createHash('sha256').update(once).digest().reverse().toString('hex');
}

class Reader {
  constructor(
    private readonly bytes: Buffer,
    public at: number,
  ) {}

  take(n: number): Buffer {
    if (n < 0 || this.at + n > this.bytes.length) throw new RangeError('cut short');
    const out = this.bytes.subarray(this.at, this.at + n);
    this.at += n;
    return out;
  }

  varint(): number {
    const first = this.take(1)[0] as number;
    if (first < 0xfd) return first;
    if (first === 0xfd) return this.take(2).readUInt16LE(0);
    if (first === 0xfe) return this.take(4).readUInt32LE(0);
    const big = this.take(8).readBigUInt64LE(0);
    if (big > BigInt(this.bytes.length)) throw new RangeError('count beyond the bytes');
    return Number(big);
  }
}
