/**
 * The derived addresses of wallet-key subscriptions as the matching index keeps them
 * (docs/concepts/wallet-keys.md#scale): millions of addresses in little memory. One Map from the address
 * (the string the block's address is compared with) to the position of its first entry; each entry is a few
 * typed-array words: its subscription (an ordinal), chain and index, the next entry of the same address (an
 * address two subscriptions derive) and the next entry of the same subscription (to forget it). The
 * derivation path is not kept per address: every address of a chain of a subscription has the same prefix
 * (`m/0`, `m/84'/0'/0'/1`, ...), kept once, and the path is rebuilt for the addresses a block touches.
 * About 120 bytes per address with a 42-character address, where objects per entry took over 300.
 */
import type { DerivedAddressRow } from '../domain/subscriptions.ts';

/** One derived address of a wallet-key subscription, as matching reads it. */
export interface XpubAddressEntry {
  subscriptionId: string;
  change: boolean;
  index: number;
  derivationPath: string;
}

const NONE = -1;

interface Owner {
  id: string;
  /** The first entry of the subscription (NONE when it has none). */
  head: number;
  /** The derivation path up to the index, per chain (receive, change), from the first row seen of it. */
  prefixes: [string | undefined, string | undefined];
}

function grow<T extends Int32Array | Uint8Array>(array: T, size: number): T {
  const bigger = new (array.constructor as new (n: number) => T)(size);
  bigger.set(array);
  return bigger;
}

export class DerivedAddressTable {
  private readonly byAddress = new Map<string, number>();
  private capacity = 1024;
  private owner = new Int32Array(this.capacity);
  private index = new Int32Array(this.capacity);
  private change = new Uint8Array(this.capacity);
  private nextSame = new Int32Array(this.capacity);
  private nextInOwner = new Int32Array(this.capacity);
  /** Each entry's address (the Map's key string, shared): needed to unlink it. */
  private readonly addresses: (string | undefined)[] = [];
  private used = 0;
  private readonly freeEntries: number[] = [];
  private readonly owners: (Owner | undefined)[] = [];
  private readonly ordinalOf = new Map<string, number>();
  private readonly freeOrdinals: number[] = [];
  private count = 0;

  /** Derived addresses held (an address two subscriptions derive counts twice). */
  get size(): number {
    return this.count;
  }

  /** Typed-array bytes (outside the JavaScript heap). */
  get byteLength(): number {
    return this.capacity * (4 * 4 + 1);
  }

  /** Whether any subscription derives `address`. */
  has(address: string): boolean {
    return this.byAddress.has(address);
  }

  /** Makes `id` known (with no address yet); a known id keeps its addresses. */
  addOwner(id: string): void {
    if (this.ordinalOf.has(id)) return;
    const ordinal = this.freeOrdinals.pop() ?? this.owners.length;
    this.owners[ordinal] = { id, head: NONE, prefixes: [undefined, undefined] };
    this.ordinalOf.set(id, ordinal);
  }

  /** Adds derived addresses of `id` (added with addOwner); one it already has is skipped. False when `id` is unknown. */
  add(id: string, rows: readonly Pick<DerivedAddressRow, 'address' | 'derivationPath' | 'change' | 'index'>[]): boolean {
    const ordinal = this.ordinalOf.get(id);
    if (ordinal === undefined) return false;
    const owner = this.owners[ordinal] as Owner;
    for (const row of rows) {
      const first = this.byAddress.get(row.address);
      if (first !== undefined && this.holds(first, ordinal)) continue;
      const chain = row.change ? 1 : 0;
      owner.prefixes[chain] ??= row.derivationPath.slice(0, row.derivationPath.lastIndexOf('/'));
      const at = this.allocate();
      this.owner[at] = ordinal;
      this.index[at] = row.index;
      this.change[at] = chain;
      this.nextSame[at] = first ?? NONE;
      this.nextInOwner[at] = owner.head;
      owner.head = at;
      this.addresses[at] = row.address;
      this.byAddress.set(row.address, at);
      this.count++;
    }
    return true;
  }

  /** The subscriptions deriving `address`, or undefined (no allocation then: the common case of a block's addresses). */
  entriesOf(address: string): XpubAddressEntry[] | undefined {
    let at = this.byAddress.get(address);
    if (at === undefined) return undefined;
    const entries: XpubAddressEntry[] = [];
    for (; at !== NONE; at = this.nextSame[at] as number) {
      const owner = this.owners[this.owner[at] as number] as Owner;
      const index = this.index[at] as number;
      const chain = this.change[at] as number;
      entries.push({ subscriptionId: owner.id, change: chain === 1, index, derivationPath: `${owner.prefixes[chain as 0 | 1]}/${index}` });
    }
    // Oldest first (entries are chained newest first), as the subscriptions were indexed.
    return entries.reverse();
  }

  /** Forgets `id` and its addresses. */
  remove(id: string): void {
    const ordinal = this.ordinalOf.get(id);
    if (ordinal === undefined) return;
    const owner = this.owners[ordinal] as Owner;
    for (let at = owner.head; at !== NONE; ) {
      const next = this.nextInOwner[at] as number;
      this.unlinkSame(at);
      this.addresses[at] = undefined;
      this.freeEntries.push(at);
      this.count--;
      at = next;
    }
    this.owners[ordinal] = undefined;
    this.ordinalOf.delete(id);
    this.freeOrdinals.push(ordinal);
  }

  private holds(first: number, ordinal: number): boolean {
    for (let at = first; at !== NONE; at = this.nextSame[at] as number) if (this.owner[at] === ordinal) return true;
    return false;
  }

  /** Takes entry `at` out of its address's chain (the address leaves the Map with its last entry). */
  private unlinkSame(at: number): void {
    const address = this.addresses[at] as string;
    const first = this.byAddress.get(address) as number;
    if (first === at) {
      const next = this.nextSame[at] as number;
      if (next === NONE) this.byAddress.delete(address);
      else this.byAddress.set(address, next);
      return;
    }
    let before = first;
    while (this.nextSame[before] !== at) before = this.nextSame[before] as number;
    this.nextSame[before] = this.nextSame[at] as number;
  }

  private allocate(): number {
    const free = this.freeEntries.pop();
    if (free !== undefined) return free;
    if (this.used === this.capacity) {
      this.capacity *= 2;
      this.owner = grow(this.owner, this.capacity);
      this.index = grow(this.index, this.capacity);
      this.change = grow(this.change, this.capacity);
      this.nextSame = grow(this.nextSame, this.capacity);
      this.nextInOwner = grow(this.nextInOwner, this.capacity);
    }
    return this.used++;
  }
}
