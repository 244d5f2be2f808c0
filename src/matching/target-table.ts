/**
 * Target (transaction id or address) -> the subscriptions on it, for lookups of strings fresh from a
 * node's answer. Why not a Map<string, ...>: V8 hashes a string the first time it is used as a key
 * through a call out of generated code, and with a fresh string that made Map.get about 550 ns (90 ns
 * once the hash is cached), alone more than the per-item budget of matching. A JavaScript hash over
 * the characters, an Int32Array table and a bit filter in front cost a fraction of that, and less
 * memory than a Map entry.
 *
 * Structure:
 * - `filter`: two bits in one 32-bit word per hash of a key's last 8 characters (the random part of
 *   every address and transaction id format we see: hex digits, base58 and bech32 checksums). Most lookups miss, and
 *   most misses stop here, on a bitset small enough to stay in cache. Bits are never cleared on
 *   removal; the filter is rebuilt when stale keys outnumber live ones.
 * - `cells`: open addressing, linear probing, triples [first slot + 1 (0 = empty), hash of the whole
 *   key, filter hash], at most 70 % full, deletion by backward shift (no tombstones). The whole-key
 *   hash is seeded per process, so colliding keys cannot be prepared in advance; the filter hash is
 *   kept so that rebuilding the filter (on growth) does not read a million scattered strings again.
 * - several subscriptions of one key: a cell names the first slot; NEXT of the slot's words (slot-words.ts) the following
 *   ones, in the order they were added (-1 ends the chain); PREV the one before, and
 *   the first slot's prev is the last one, so appending and unlinking take constant time however
 *   many subscriptions share a key. A slot on no chain has next = UNLINKED.
 * - `cellKeys[cell]`: the key of each cell (a reference to the index's string, not a copy), beside
 *   `cells` rather than read through the cell's first slot: a probe then reads the cell and its key
 *   at once (two loads that overlap) and the key's characters, where reading the key through
 *   `targets[slot]` was a cache miss more, waited for in turn, on every hit of a block. 8 bytes per key.
 */
import { NEXT, PREV, SLOT_WORDS, type SlotLinks, UNLINKED } from './slot-words.ts';

const SEED = (Math.random() * 0x100000000) | 0;
const MAX_LOAD = 0.7;
const FILTER_BITS_PER_KEY = 8;

/** Hash of the whole key (two characters per step), seeded. */
export function keyHash(key: string): number {
  let h = SEED ^ key.length;
  const last = key.length - 1;
  let i = 0;
  for (; i < last; i += 2) h = Math.imul(h ^ (key.charCodeAt(i) | (key.charCodeAt(i + 1) << 16)), 0x01000193);
  if (i === last) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/**
 * Characters of a key's end that make its filter hash: 8 random characters (hex: 32 bits; base58,
 * bech32: 40 and more) are more than the filter's 10 bits in a word and up to 20 bits of word of a
 * table of millions of keys; every character more is a cost on every lookup of every block.
 */
const SUFFIX = 8;

/** Cheap hash of the last SUFFIX characters, for the filter only (a poor one costs speed, never results). */
function suffixHash(key: string): number {
  const end = key.length;
  let h = 0x2545f491 ^ end;
  let i = end > SUFFIX ? end - SUFFIX : 0;
  for (; i + 1 < end; i += 2) h = Math.imul(h ^ (key.charCodeAt(i) | (key.charCodeAt(i + 1) << 16)), 0x01000193);
  if (i < end) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  h ^= h >>> 15;
  h = Math.imul(h, 0x2c1b3c6d);
  return h ^ (h >>> 13);
}

/**
 * The two bits of a key in its filter word (bits 0..9 of the filter hash; bits 10.. choose the word). Two
 * bits in one word: about a third of the false positives of one bit per key at the same size (measured
 * on 500,000 hex addresses, 17 bits per key: 1.8 % instead of 5.9 %), still one memory access per lookup.
 */
function filterBits(filterHash: number): number {
  return (1 << (filterHash & 31)) | (1 << ((filterHash >>> 5) & 31));
}

/** Int32s per cell: first slot + 1, key hash, filter hash. */
const CELL = 3;

export class TargetTable {
  private cells = new Int32Array(16 * CELL);
  private mask = 15;
  private keys = 0;
  private filter = new Int32Array(1);
  /** Words of the filter - 1 (a power of two - 1). */
  private filterWordMask = 0;
  /** Keys removed since the filter was built (their bits are still set). */
  private staleKeys = 0;
  /** firstOfEach's positions and hashes (grown as needed). */
  private scratch = new Int32Array(0);

  /** The key of each cell (undefined for an empty one). */
  private cellKeys: (string | undefined)[] = new Array<string | undefined>(16).fill(undefined);

  constructor(private readonly links: SlotLinks) {}

  /** Distinct keys. */
  get size(): number {
    return this.keys;
  }

  /** The first slot on `key`, or -1; the others follow through NEXT. */
  first(key: string): number {
    const filterHash = suffixHash(key);
    const bits = filterBits(filterHash);
    if (((this.filter[(filterHash >>> 10) & this.filterWordMask] as number) & bits) !== bits) return -1;
    const cell = this.find(key, keyHash(key));
    return cell < 0 ? -1 : (this.cells[cell * CELL] as number) - 1;
  }

  /**
   * first() of each of keys[0..count), into out[0..count): the same answers, a step at a time over all
   * the keys (filter hashes, filter words, then whole-key hashes and probes of the few that pass). A
   * lookup is mostly a wait for memory (the filter word of a million-key table is seldom in cache), and
   * a step that is a short loop over independent keys lets the processor wait for several at once,
   * where first() key by key waits for each in turn.
   */
  firstOfEach(keys: readonly string[], count: number, out: Int32Array): void {
    if (this.keys === 0) {
      out.fill(-1, 0, count);
      return;
    }
    if (this.scratch.length < count) this.scratch = new Int32Array(Math.max(count, this.scratch.length * 2));
    const hashes = this.scratch;
    for (let i = 0; i < count; i++) hashes[i] = suffixHash(keys[i] as string);
    // The filter: the keys that may be here are gathered at the front of `hashes` (their positions),
    // without a branch (a candidate is rare and unpredictable: a mispredicted branch would discard the
    // filter loads already under way).
    const { filter, filterWordMask, cells } = this;
    let candidates = 0;
    for (let i = 0; i < count; i++) {
      const filterHash = hashes[i] as number;
      const bits = filterBits(filterHash);
      out[i] = -1;
      // missing: the key's bits absent from its word (0 for a candidate); 1 for a candidate, 0 otherwise, by arithmetic.
      const missing = ((filter[(filterHash >>> 10) & filterWordMask] as number) & bits) ^ bits;
      hashes[candidates] = i;
      candidates += ((missing | -missing) >>> 31) ^ 1;
    }
    for (let c = 0; c < candidates; c++) {
      const i = hashes[c] as number;
      const key = keys[i] as string;
      const cell = this.find(key, keyHash(key));
      out[i] = cell < 0 ? -1 : (cells[cell * CELL] as number) - 1;
    }
  }

  /** Adds `slot` after the slots already on `key`. */
  add(key: string, slot: number): void {
    const { words } = this.links;
    words[slot * SLOT_WORDS + NEXT] = -1;
    const hash = keyHash(key);
    const cell = this.find(key, hash);
    if (cell >= 0) {
      const head = (this.cells[cell * CELL] as number) - 1;
      const tail = words[head * SLOT_WORDS + PREV] as number;
      words[tail * SLOT_WORDS + NEXT] = slot;
      words[slot * SLOT_WORDS + PREV] = tail;
      words[head * SLOT_WORDS + PREV] = slot;
      return;
    }
    words[slot * SLOT_WORDS + PREV] = slot;
    if (this.keys + 1 > (this.mask + 1) * MAX_LOAD) this.resize((this.mask + 1) * 2);
    const filterHash = suffixHash(key);
    this.place(slot, hash, filterHash, key);
    this.keys++;
    this.setFilterBit(filterHash);
  }

  /** Removes `slot` from `key`; false when it was on no chain. */
  remove(key: string, slot: number): boolean {
    const { words } = this.links;
    if (words[slot * SLOT_WORDS + NEXT] === UNLINKED) return false;
    const cell = this.find(key, keyHash(key));
    if (cell < 0) return false;
    const head = (this.cells[cell * CELL] as number) - 1;
    const following = words[slot * SLOT_WORDS + NEXT] as number;
    if (head === slot) {
      if (following < 0) this.deleteCell(cell);
      else {
        this.cells[cell * CELL] = following + 1;
        words[following * SLOT_WORDS + PREV] = words[slot * SLOT_WORDS + PREV] as number; // the new first slot points at the last one
      }
    } else {
      const before = words[slot * SLOT_WORDS + PREV] as number;
      words[before * SLOT_WORDS + NEXT] = following;
      if (following >= 0) words[following * SLOT_WORDS + PREV] = before;
      else words[head * SLOT_WORDS + PREV] = before; // slot was the last one
    }
    words[slot * SLOT_WORDS + NEXT] = UNLINKED;
    return true;
  }

  /** Bytes held (cells and filter). */
  get byteLength(): number {
    return this.cells.byteLength + this.filter.byteLength;
  }

  private find(key: string, hash: number): number {
    const { cells, mask, cellKeys } = this;
    for (let cell = hash & mask; ; cell = (cell + 1) & mask) {
      if (cells[cell * CELL] === 0) return -1;
      if (cells[cell * CELL + 1] === hash && cellKeys[cell] === key) return cell;
    }
  }

  private place(slot: number, hash: number, filterHash: number, key: string): void {
    const { cells, mask } = this;
    let cell = hash & mask;
    while (cells[cell * CELL] !== 0) cell = (cell + 1) & mask;
    this.cellKeys[cell] = key;
    cells[cell * CELL] = slot + 1;
    cells[cell * CELL + 1] = hash;
    cells[cell * CELL + 2] = filterHash;
  }

  private deleteCell(hole: number): void {
    const { cells, mask, cellKeys } = this;
    cells[hole * CELL] = 0;
    cellKeys[hole] = undefined;
    this.keys--;
    // Backward shift: an entry after the hole moves into it unless its home lies cyclically in (hole, cell].
    for (let cell = (hole + 1) & mask; cells[cell * CELL] !== 0; cell = (cell + 1) & mask) {
      const home = (cells[cell * CELL + 1] as number) & mask;
      const stays = hole <= cell ? home > hole && home <= cell : home > hole || home <= cell;
      if (stays) continue;
      cells.copyWithin(hole * CELL, cell * CELL, cell * CELL + CELL);
      cells[cell * CELL] = 0;
      cellKeys[hole] = cellKeys[cell];
      cellKeys[cell] = undefined;
      hole = cell;
    }
    if (++this.staleKeys > Math.max(1024, this.keys)) this.rebuildFilter(this.filter.length * 32);
  }

  private resize(cellCount: number): void {
    const old = this.cells;
    const oldKeys = this.cellKeys;
    this.cells = new Int32Array(cellCount * CELL);
    this.cellKeys = new Array<string | undefined>(cellCount).fill(undefined);
    this.mask = cellCount - 1;
    for (let i = 0; i < old.length; i += CELL)
      if (old[i] !== 0) this.place((old[i] as number) - 1, old[i + 1] as number, old[i + 2] as number, oldKeys[i / CELL] as string);
    let bits = 32;
    while (bits < cellCount * MAX_LOAD * FILTER_BITS_PER_KEY) bits *= 2;
    this.rebuildFilter(bits);
  }

  private rebuildFilter(bits: number): void {
    this.filter = new Int32Array(bits >>> 5);
    this.filterWordMask = (bits >>> 5) - 1;
    this.staleKeys = 0;
    const { cells } = this;
    for (let i = 0; i < cells.length; i += CELL) if (cells[i] !== 0) this.setFilterBit(cells[i + 2] as number);
  }

  private setFilterBit(filterHash: number): void {
    const word = (filterHash >>> 10) & this.filterWordMask;
    this.filter[word] = (this.filter[word] as number) | filterBits(filterHash);
  }
}
