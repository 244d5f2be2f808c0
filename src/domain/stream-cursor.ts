/**
 * The event stream's cursor (docs/concepts/event-stream.md): an opaque string for the customer, a
 * position in the stream for herald. It holds no process state, so any herald process resumes it, before
 * or after a restart.
 *
 * A position is (transaction id, rank, number, entry id): the transaction that wrote the entry, then
 * retractions and reinstatements (rank 0) before the events (rank 1) of that transaction, then the mark's
 * number or the event's x-callback-sequence, then the callback's id. The cursor also carries the last
 * block it saw: a client can tell which block its cursor stands on, and when that block has since left
 * the chain, reading on from it gives the retractions first (they were written after it).
 */

export interface StreamPosition {
  /** The writing transaction's id (xid8, as decimal text: it may pass 2^53). */
  xid: string;
  rank: 0 | 1;
  n: string;
  entryId: string;
}

export interface StreamCursor extends StreamPosition {
  block?: { height: number; hash: string };
}

/** Before every entry: where a stream read without a cursor starts. */
export const STREAM_START: StreamPosition = { xid: '0', rank: 0, n: '0', entryId: '00000000-0000-0000-0000-000000000000' };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const DIGITS = /^\d{1,20}$/;

export function encodeCursor(c: StreamCursor): string {
  const fields: unknown[] = [1, c.xid, c.rank, c.n, c.entryId];
  if (c.block) fields.push(c.block.height, c.block.hash);
  return Buffer.from(JSON.stringify(fields)).toString('base64url');
}

/** Undefined when `text` is not a cursor herald made (the caller answers 409 invalid_data). */
export function decodeCursor(text: string): StreamCursor | undefined {
  let fields: unknown;
  try {
    fields = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (!Array.isArray(fields) || fields[0] !== 1) return undefined;
  const [, xid, rank, n, entryId, height, hash] = fields;
  if (typeof xid !== 'string' || !DIGITS.test(xid) || (rank !== 0 && rank !== 1) || typeof n !== 'string' || !DIGITS.test(n)) return undefined;
  if (typeof entryId !== 'string' || !UUID.test(entryId)) return undefined;
  const cursor: StreamCursor = { xid, rank, n, entryId };
  if (height !== undefined) {
    if (!Number.isSafeInteger(height) || typeof hash !== 'string' || hash.length > 200) return undefined;
    cursor.block = { height: height as number, hash };
  }
  return cursor;
}

/** a < b in stream order. */
export function positionBefore(a: StreamPosition, b: StreamPosition): boolean {
  const ax = BigInt(a.xid);
  const bx = BigInt(b.xid);
  if (ax !== bx) return ax < bx;
  if (a.rank !== b.rank) return a.rank < b.rank;
  const an = BigInt(a.n);
  const bn = BigInt(b.n);
  if (an !== bn) return an < bn;
  return a.entryId < b.entryId;
}
