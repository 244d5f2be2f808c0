/**
 * Subscription ids (UUIDs) kept as 16 bytes per slot, with an open-addressing hash table from id to
 * slot, instead of a Map<string, number> whose 36-character key strings alone would cost about
 * 56 bytes per subscription plus about 50 bytes of Map entry. Here: 16 bytes of id, 8 to 16 of table.
 *
 * Invariants: the table is linear-probed, holds slot + 1 (0 = empty), is at most half full, and
 * deletions shift later entries back (no tombstones), so a probe stops at the first empty cell.
 */

const BYTE_HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, '0'));

/** Character code -> hex digit value, -1 for anything else. */
const HEX_VALUE = new Int8Array(128).fill(-1);
for (let d = 0; d < 16; d++) {
  HEX_VALUE[d.toString(16).charCodeAt(0)] = d;
  HEX_VALUE[d.toString(16).toUpperCase().charCodeAt(0)] = d;
}

function hexValue(code: number): number {
  return code < 128 ? (HEX_VALUE[code] as number) : -1;
}

/** Parses a UUID (either case) into `into[offset..offset+16)`; false when `id` is not one. */
export function parseUuid(id: string, into: Uint8Array, offset = 0): boolean {
  if (id.length !== 36) return false;
  let b = offset;
  for (let i = 0; i < 36; i += 2) {
    if (i === 8 || i === 13 || i === 18 || i === 23) {
      if (id.charCodeAt(i) !== 45) return false;
      i--; // the dash takes one character; pairs of hex digits resume after it
      continue;
    }
    const hi = hexValue(id.charCodeAt(i));
    const lo = hexValue(id.charCodeAt(i + 1));
    if (hi < 0 || lo < 0) return false;
    into[b++] = (hi << 4) | lo;
  }
  return true;
}

/** The two lower-case hex digits of each byte, as character codes. */
const HIGH_DIGIT = Uint8Array.from({ length: 256 }, (_, b) => (BYTE_HEX[b] as string).charCodeAt(0));
const LOW_DIGIT = Uint8Array.from({ length: 256 }, (_, b) => (BYTE_HEX[b] as string).charCodeAt(1));
/** Scratch for formatUuid: the 36 characters of the text, dashes in place. */
const UUID_TEXT = Buffer.alloc(36, '-', 'latin1');

/**
 * The lower-case text of the UUID at `bytes[offset..offset+16)`. One flat string decoded from its
 * characters (a match builds one per subscription matched; concatenating 20 pieces made a rope to
 * flatten later, about twice the time).
 */
export function formatUuid(bytes: Uint8Array, offset = 0): string {
  let at = 0;
  for (let i = 0; i < 16; i++) {
    const b = bytes[offset + i] as number;
    UUID_TEXT[at++] = HIGH_DIGIT[b] as number;
    UUID_TEXT[at++] = LOW_DIGIT[b] as number;
    if (i === 3 || i === 5 || i === 7 || i === 9) at++; // a dash, already in place
  }
  return UUID_TEXT.toString('latin1', 0, 36);
}

/** Mixes the 16 bytes at `offset` into 32 bits (time-ordered UUIDs share their leading bytes). */
function hashBytes(bytes: Uint8Array, offset: number): number {
  let h = 0x9e3779b9;
  for (let i = offset; i < offset + 16; i += 4) {
    const word = (bytes[i] as number) | ((bytes[i + 1] as number) << 8) | ((bytes[i + 2] as number) << 16) | ((bytes[i + 3] as number) << 24);
    h = Math.imul(h ^ word, 0x85ebca6b);
    h ^= h >>> 13;
  }
  h = Math.imul(h ^ (h >>> 16), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

export class IdSlots {
  /** `stride` bytes per slot, the id in the first 16 (the rest is the owner's: see growSlots). */
  private bytes: Uint8Array;
  /** slot + 1, or 0 for an empty cell. */
  private table: Int32Array;
  private mask: number;
  private count = 0;
  private readonly key = new Uint8Array(16);

  /**
   * `stride` (16 or more, a multiple of 4) is the bytes per slot: the index keeps each slot's other
   * fields after its id, in the same bytes (see slot-words.ts), through slotBuffer.
   */
  constructor(
    slotCapacity: number,
    private readonly stride = 16,
  ) {
    this.bytes = new Uint8Array(slotCapacity * this.stride);
    const cells = tableSizeFor(slotCapacity);
    this.table = new Int32Array(cells);
    this.mask = cells - 1;
  }

  /** The bytes of every slot (a new buffer after growSlots). */
  get slotBuffer(): ArrayBuffer {
    return this.bytes.buffer as ArrayBuffer;
  }

  /** Makes room for slots up to `slotCapacity` - 1, every byte of the slots kept (the new ones are 0). */
  growSlots(slotCapacity: number): void {
    if (slotCapacity * this.stride <= this.bytes.length) return;
    const bytes = new Uint8Array(slotCapacity * this.stride);
    bytes.set(this.bytes);
    this.bytes = bytes;
  }

  /** The slot of `id`, or -1 when absent or not a UUID. */
  find(id: string): number {
    return this.parse(id) ? this.findParsed() : -1;
  }

  /** Parses `id` as the key of the next findParsed() or insertParsed(); false when it is not a UUID. */
  parse(id: string): boolean {
    return parseUuid(id, this.key);
  }

  /** The slot of the last parsed id, or -1. */
  findParsed(): number {
    const { bytes, key, table, mask } = this;
    for (let cell = hashBytes(key, 0) & mask; ; cell = (cell + 1) & mask) {
      const entry = table[cell] as number;
      if (entry === 0) return -1;
      if (sameId(bytes, (entry - 1) * this.stride, key)) return entry - 1;
    }
  }

  /** Records the last parsed id at `slot`; that id must be absent. */
  insertParsed(slot: number): void {
    this.bytes.set(this.key, slot * this.stride);
    if ((this.count + 1) * 2 > this.table.length) this.rehash(this.table.length * 2);
    this.place(slot);
    this.count++;
  }

  /** Records `id` at `slot`; the id must be absent. Throws when `id` is not a UUID. */
  insert(id: string, slot: number): void {
    if (!this.parse(id)) throw new Error(`subscription id '${id}' is not a UUID`);
    this.insertParsed(slot);
  }

  /** Forgets the id at `slot`. */
  delete(slot: number): void {
    const { table, mask } = this;
    let hole = hashBytes(this.bytes, slot * this.stride) & mask;
    while (table[hole] !== slot + 1) {
      if (table[hole] === 0) return;
      hole = (hole + 1) & mask;
    }
    table[hole] = 0;
    this.count--;
    // Backward shift: an entry after the hole moves into it unless its home lies cyclically in (hole, cell].
    for (let cell = (hole + 1) & mask; table[cell] !== 0; cell = (cell + 1) & mask) {
      const entry = table[cell] as number;
      const home = hashBytes(this.bytes, (entry - 1) * this.stride) & mask;
      const stays = hole <= cell ? home > hole && home <= cell : home > hole || home <= cell;
      if (stays) continue;
      table[hole] = entry;
      table[cell] = 0;
      hole = cell;
    }
  }

  idOf(slot: number): string {
    return formatUuid(this.bytes, slot * this.stride);
  }

  /** Bytes held (ids and table). */
  get byteLength(): number {
    return this.bytes.byteLength + this.table.byteLength;
  }

  private place(slot: number): void {
    const { table, mask } = this;
    let cell = hashBytes(this.bytes, slot * this.stride) & mask;
    while (table[cell] !== 0) cell = (cell + 1) & mask;
    table[cell] = slot + 1;
  }

  private rehash(cells: number): void {
    const old = this.table;
    this.table = new Int32Array(cells);
    this.mask = cells - 1;
    for (const entry of old) if (entry !== 0) this.place(entry - 1);
  }
}

function sameId(bytes: Uint8Array, offset: number, key: Uint8Array): boolean {
  for (let i = 0; i < 16; i++) if (bytes[offset + i] !== key[i]) return false;
  return true;
}

/** The smallest power of two at least twice `n` (and at least 16). */
function tableSizeFor(n: number): number {
  let size = 16;
  while (size < n * 2) size *= 2;
  return size;
}
