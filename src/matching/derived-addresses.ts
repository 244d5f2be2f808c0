/**
 * The derived addresses of wallet-key subscriptions as the matching index keeps them
 * (docs/concepts/wallet-keys.md#scale): millions of addresses in little memory, looked up as fast as plain
 * address subscriptions. The addresses are in a TargetTable (target-table.ts, the plain subscriptions' own:
 * a JavaScript hash over the characters and a bit filter in front, where a Map hashed each fresh string of
 * a block through a slow call, and made matching 3 to 5 times slower than the plain subscriptions' path).
 * Each entry is one 32-byte slot of words, like the index's: its subscription (an ordinal), chain and index,
 * the next entry of the same subscription (to forget it), and the NEXT/PREV words of the table's chain of
 * entries of one address (an address two subscriptions derive). The derivation path is not kept per
 * address: every address of a chain of a subscription has the same prefix (`m/0`, `m/84'/0'/0'/1`, ...),
 * kept once, and the path is rebuilt for the addresses a block touches.
 */
import type { DerivedAddressRow } from '../domain/subscriptions.ts';
import { NEXT, SLOT_WORDS, type SlotLinks, UNLINKED } from './slot-words.ts';
import { TargetTable } from './target-table.ts';

/** One derived address of a wallet-key subscription, as matching reads it. */
export interface XpubAddressEntry {
  subscriptionId: string;
  /** The subscription's ordinal in the table (what addOwner gave; SubscriptionIndex.xpubOwnerRecord reads it without a lookup by id). */
  owner: number;
  change: boolean;
  index: number;
  derivationPath: string;
}

const NONE = -1;
const MAX_PREFIX_TEXTS = 10_000;
/** Words of an entry's slot (NEXT and PREV, 5 and 6, are the table's). */
const OWNER = 0;
const INDEX = 1;
const CHANGE = 2;
const NEXT_IN_OWNER = 3;

interface Owner {
  id: string;
  /** The first entry of the subscription (NONE when it has none). */
  head: number;
}

export class DerivedAddressTable {
  private capacity = 1024;
  private readonly links: SlotLinks = { words: new Int32Array(this.capacity * SLOT_WORDS) };
  private readonly table = new TargetTable(this.links);
  /** Each entry's address (the string also in the table: shared, not copied); needed to unlink it. */
  private readonly addresses: (string | undefined)[] = [];
  private used = 0;
  private readonly freeEntries: number[] = [];
  private readonly owners: (Owner | undefined)[] = [];
  /**
   * The derivation path up to the index of each owner's chains (receive, change) at [ordinal * 2 + chain], from
   * the first row seen of it: one load for a block's hit, not three through the owner.
   */
  private readonly prefixes: (string | undefined)[] = [];
  private readonly ordinalOf = new Map<string, number>();
  private readonly freeOrdinals: number[] = [];
  private count = 0;

  /** Derived addresses held (an address two subscriptions derive counts twice). */
  get size(): number {
    return this.count;
  }

  /** Typed-array bytes (outside the JavaScript heap). */
  get byteLength(): number {
    return this.links.words.byteLength + this.table.byteLength;
  }

  /** Whether any subscription derives `address`. */
  has(address: string): boolean {
    return this.table.first(address) >= 0;
  }

  /** has() of each of keys[0..count), into out[0..count) as the first entry or -1 (target-table.ts firstOfEach: the lookups of a block overlap). */
  findEach(keys: readonly string[], count: number, out: Int32Array): void {
    this.table.firstOfEach(keys, count, out);
  }

  /** Makes `id` known (with no address yet) and returns its ordinal (XpubAddressEntry.owner); a known id keeps its addresses and ordinal. */
  addOwner(id: string): number {
    const known = this.ordinalOf.get(id);
    if (known !== undefined) return known;
    const ordinal = this.freeOrdinals.pop() ?? this.owners.length;
    this.owners[ordinal] = { id, head: NONE };
    this.prefixes[2 * ordinal] = undefined;
    this.prefixes[2 * ordinal + 1] = undefined;
    this.ordinalOf.set(id, ordinal);
    return ordinal;
  }

  /** The ordinal of known `id`, or undefined. */
  ownerOf(id: string): number | undefined {
    return this.ordinalOf.get(id);
  }

  /** Adds derived addresses of `id` (added with addOwner); one it already has is skipped. False when `id` is unknown. */
  add(id: string, rows: readonly Pick<DerivedAddressRow, 'address' | 'derivationPath' | 'change' | 'index'>[]): boolean {
    const ordinal = this.ordinalOf.get(id);
    if (ordinal === undefined) return false;
    const owner = this.owners[ordinal] as Owner;
    for (const row of rows) {
      if (this.holds(this.table.first(row.address), ordinal)) continue;
      const chain = row.change ? 1 : 0;
      this.prefixes[2 * ordinal + chain] ??= this.interned(row.derivationPath.slice(0, row.derivationPath.lastIndexOf('/')));
      const at = this.allocate();
      const words = this.links.words;
      const base = at * SLOT_WORDS;
      words[base + OWNER] = ordinal;
      words[base + INDEX] = row.index;
      words[base + CHANGE] = chain;
      words[base + NEXT_IN_OWNER] = owner.head;
      owner.head = at;
      this.addresses[at] = row.address;
      this.table.add(row.address, at);
      this.count++;
    }
    return true;
  }

  /** The subscriptions deriving `address`, in the order they were added, or undefined (no allocation then: the common case of a block's addresses). */
  entriesOf(address: string): XpubAddressEntry[] | undefined {
    const first = this.table.first(address);
    return first < 0 ? undefined : this.entriesFrom(first);
  }

  /** The entries from `first` (what findEach gave for an address) on: its address's subscriptions, in the order they were added. */
  entriesFrom(first: number): XpubAddressEntry[] {
    let at = first;
    const words = this.links.words;
    const entries: XpubAddressEntry[] = [];
    for (; at >= 0; at = words[at * SLOT_WORDS + NEXT] as number) {
      const base = at * SLOT_WORDS;
      const ordinal = words[base + OWNER] as number;
      const owner = this.owners[ordinal] as Owner;
      const index = words[base + INDEX] as number;
      const chain = words[base + CHANGE] as 0 | 1;
      entries.push({ subscriptionId: owner.id, owner: ordinal, change: chain === 1, index, derivationPath: `${this.prefixes[2 * ordinal + chain]}/${index}` });
    }
    return entries;
  }

  // Entry `at` read field by field (what entriesFrom gives, without an object per entry: a block's hits).

  /** The entry after `at` of the same address (another subscription deriving it), or -1. */
  nextOf(at: number): number {
    return this.links.words[at * SLOT_WORDS + NEXT] as number;
  }

  /** The owner ordinal of entry `at`. */
  ownerAt(at: number): number {
    return this.links.words[at * SLOT_WORDS + OWNER] as number;
  }

  indexAt(at: number): number {
    return this.links.words[at * SLOT_WORDS + INDEX] as number;
  }

  isChangeAt(at: number): boolean {
    return this.links.words[at * SLOT_WORDS + CHANGE] === 1;
  }

  /** The derivation path of entry `at`. */
  pathAt(at: number): string {
    const base = at * SLOT_WORDS;
    const words = this.links.words;
    return `${this.prefixes[2 * (words[base + OWNER] as number) + (words[base + CHANGE] as number)]}/${words[base + INDEX]}`;
  }

  /** Forgets `id` and its addresses. */
  remove(id: string): void {
    const ordinal = this.ordinalOf.get(id);
    if (ordinal === undefined) return;
    const owner = this.owners[ordinal] as Owner;
    const words = this.links.words;
    for (let at = owner.head; at !== NONE; ) {
      const next = words[at * SLOT_WORDS + NEXT_IN_OWNER] as number;
      this.table.remove(this.addresses[at] as string, at);
      this.addresses[at] = undefined;
      this.freeEntries.push(at);
      this.count--;
      at = next;
    }
    this.owners[ordinal] = undefined;
    this.prefixes[2 * ordinal] = undefined;
    this.prefixes[2 * ordinal + 1] = undefined;
    this.ordinalOf.delete(id);
    this.freeOrdinals.push(ordinal);
  }

  /**
   * One string per distinct path prefix (most keys share `m/0` and `m/1`, or their account's), so that building
   * a hit's path reads a string that stays in cache; never forgotten, so at most MAX_PREFIX_TEXTS are kept
   * (descriptors with an origin each: the ones after that keep their own copy).
   */
  private readonly prefixTexts = new Map<string, string>();
  private interned(prefix: string): string {
    const known = this.prefixTexts.get(prefix);
    if (known !== undefined) return known;
    if (this.prefixTexts.size < MAX_PREFIX_TEXTS) this.prefixTexts.set(prefix, prefix);
    return prefix;
  }

  private holds(first: number, ordinal: number): boolean {
    const words = this.links.words;
    for (let at = first; at >= 0; at = words[at * SLOT_WORDS + NEXT] as number) if (words[at * SLOT_WORDS + OWNER] === ordinal) return true;
    return false;
  }

  private allocate(): number {
    const free = this.freeEntries.pop();
    if (free !== undefined) return free;
    if (this.used === this.capacity) {
      this.capacity *= 2;
      const bigger = new Int32Array(this.capacity * SLOT_WORDS);
      bigger.set(this.links.words);
      this.links.words = bigger;
    }
    this.links.words[this.used * SLOT_WORDS + NEXT] = UNLINKED;
    return this.used++;
  }
}
