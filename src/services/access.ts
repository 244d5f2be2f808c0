/**
 * What the API checks on nearly every request, kept in memory: API key -> customer and plan, and each
 * customer's verified callback domains. The database announces every change to those tables
 * (trigger -> NOTIFY herald_changes, see the migration), and the change listener makes this cache
 * forget the changed customer at once, whichever process made the change. While the listener is not
 * connected the cache is bypassed, so a missed announcement can never keep a revoked key alive.
 */
import { findKeyOwner, hashApiKey, type KeyOwner } from '../store/customers.ts';
import type { Db } from '../store/db.ts';
import { verifiedDomains } from '../store/domains.ts';

/** A safety net only: entries are normally forgotten by announcement long before this. */
const MAX_AGE_MS = 60_000;
const MAX_KEYS = 10_000;

export class AccessCache {
  private readonly owners = new Map<string, { owner: KeyOwner; at: number }>();
  private readonly domains = new Map<string, { hosts: Set<string>; at: number }>();
  /** True while the change listener is connected; otherwise every lookup goes to the database. */
  private live = false;
  /**
   * Bumped by every forget: a lookup stores its answer only if no forget happened while it read the
   * database, so an announcement that arrives mid-read cannot leave the stale answer cached.
   */
  private generation = 0;

  constructor(private readonly db: Db) {}

  async keyOwner(key: string): Promise<KeyOwner | undefined> {
    const hash = hashApiKey(key).toString('hex');
    const hit = this.owners.get(hash);
    if (this.live && hit && Date.now() - hit.at < MAX_AGE_MS) return hit.owner;
    const before = this.generation;
    const owner = await findKeyOwner(this.db, key);
    // Only known keys are kept, so a flood of made-up keys cannot grow the cache.
    if (owner && this.live && this.generation === before) {
      if (this.owners.size >= MAX_KEYS) this.owners.clear();
      this.owners.set(hash, { owner, at: Date.now() });
    }
    return owner;
  }

  async isDomainVerified(customerId: string, host: string): Promise<boolean> {
    const hit = this.domains.get(customerId);
    if (this.live && hit && Date.now() - hit.at < MAX_AGE_MS) return hit.hosts.has(host);
    const before = this.generation;
    const hosts = new Set(await verifiedDomains(this.db, customerId));
    if (this.live && this.generation === before) this.domains.set(customerId, { hosts, at: Date.now() });
    return hosts.has(host);
  }

  forgetCustomer(customerId: string): void {
    this.generation++;
    this.domains.delete(customerId);
    for (const [hash, entry] of this.owners) if (entry.owner.customerId === customerId) this.owners.delete(hash);
  }

  /** The listener (re)connected (true) or lost its connection (false); either way start afresh. */
  setLive(live: boolean): void {
    this.generation++;
    this.live = live;
    this.owners.clear();
    this.domains.clear();
  }
}
