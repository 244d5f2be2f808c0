import { randomFillSync } from 'node:crypto';

/** Identifiers the API hands out (subscriptions, wallets, callbacks) are UUIDs. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Anything else cannot name one of ours: answered 404 without asking the database. */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}

/** Random bytes fetched 4 KiB at a time: one call into the system's generator per 409 ids. */
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;

/**
 * A UUID version 7 (RFC 9562): 48 bits of Unix milliseconds, then 74 random bits. Ids made one after
 * another sort by time, so a table keyed by them (subscriptions, callbacks and through them their
 * attempts) grows its primary key index at the right edge instead of touching a random page of it per
 * row: a million bulk-created rows stay in a few hot index pages and write far less WAL than random
 * (version 4) ids (callbacks: 0.42–0.46 of the WAL, docs/benchmarks.md, "Retired measurements").
 */
export function uuidV7(now = Date.now()): string {
  if (poolOffset + 10 > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const r = pool.subarray(poolOffset, poolOffset + 10);
  poolOffset += 10;
  const time = now.toString(16).padStart(12, '0').slice(-12);
  const hex = r.toString('hex');
  // Version nibble 7; variant bits 10 in the first random byte of the last part.
  const variant = ((r[2] as number) & 0x3f) | 0x80;
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${hex.slice(1, 4)}-${variant.toString(16)}${hex.slice(6, 8)}-${hex.slice(8, 20)}`;
}
