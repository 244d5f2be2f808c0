/**
 * Node lookups cached as promises (token metadata, Omni properties): concurrent callers of one key share
 * one lookup; a failed lookup (node or database down) is forgotten so the next call tries again, and so
 * is an answer `keep` refuses; the oldest entry goes when the cache holds `limit`.
 */
export class LookupCache<V> {
  private readonly entries = new Map<string, Promise<V>>();

  constructor(
    private readonly limit: number,
    private readonly keep: (value: V) => boolean = () => true,
  ) {}

  get(key: string, load: () => Promise<V>): Promise<V> {
    const cached = this.entries.get(key);
    if (cached !== undefined) return cached;
    const lookup = load();
    this.entries.set(key, lookup);
    const forget = () => {
      if (this.entries.get(key) === lookup) this.entries.delete(key);
    };
    lookup.then((value) => this.keep(value) || forget(), forget);
    if (this.entries.size > this.limit) this.entries.delete(this.entries.keys().next().value as string);
    return lookup;
  }
}
