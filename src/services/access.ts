/**
 * What the API checks on nearly every request, kept in memory: API key -> customer and plan (and, for a
 * few seconds, keys and operator tokens found unknown), and each customer's verified callback domains. The database announces every change to those tables
 * (trigger -> NOTIFY herald_changes, see the migration), and the change listener makes this cache
 * forget the changed customer at once, whichever process made the change. While the listener is not
 * connected the cache is bypassed, so a missed announcement can never keep a revoked key alive.
 */
import { findKeyOwner, hashApiKey, type KeyOwner } from '../store/customers.ts';
import type { Db } from '../store/db.ts';
import { verifiedDomains } from '../store/domains.ts';
import { operatorTokenName } from '../store/operator-tokens.ts';

/** A safety net only: entries are normally forgotten by announcement long before this. */
const MAX_AGE_MS = 60_000;
const MAX_KEYS = 10_000;
/**
 * Unknown keys are remembered briefly, so that a client retrying with a wrong key (or a flood of
 * requests with one made-up key) does not cost a database read each. Every key change announced
 * (a key created, revoked, restored) forgets them all, so a freshly created key works at once; the
 * age and size bounds only limit what a flood of distinct made-up keys can hold.
 */
const UNKNOWN_MAX_AGE_MS = 5_000;
const MAX_UNKNOWN_KEYS = 10_000;

export class AccessCache {
  private readonly owners = new Map<string, { owner: KeyOwner; at: number }>();
  /** Key hash -> when it was found unknown; insertion order is age order (oldest dropped first). */
  private readonly unknown = new Map<string, number>();
  /** Reads in flight, shared by concurrent requests with the same key, tagged with their generation. */
  private readonly reading = new Map<string, { generation: number; owner: Promise<KeyOwner | undefined> }>();
  /**
   * Operator tokens found unknown, as unknown keys are (a flood of /operator/* requests with a made-up
   * token cost a database read each: about 4,900 in 3 s). Known tokens are read every time: operator
   * calls are few, and a revoked token then stops at once in every process.
   */
  private readonly unknownOperators = new Map<string, number>();
  private readonly readingOperators = new Map<string, { generation: number; name: Promise<string | undefined> }>();
  private readonly domains = new Map<string, { hosts: Set<string>; at: number }>();
  /** True while the change listener is connected; otherwise every lookup goes to the database. */
  private live = false;
  /**
   * Bumped by every forget: a lookup stores its answer only if no forget happened while it read the
   * database, so an announcement that arrives mid-read cannot leave the stale answer cached.
   */
  private generation = 0;

  constructor(
    private readonly db: Db,
    private readonly limits = { maxUnknownKeys: MAX_UNKNOWN_KEYS },
  ) {}

  async keyOwner(key: string): Promise<KeyOwner | undefined> {
    const hash = hashApiKey(key).toString('hex');
    if (this.live) {
      const hit = this.owners.get(hash);
      if (hit && Date.now() - hit.at < MAX_AGE_MS) return hit.owner;
      const unknownAt = this.unknown.get(hash);
      if (unknownAt !== undefined && Date.now() - unknownAt < UNKNOWN_MAX_AGE_MS) return undefined;
      // Joining a read is only safe when no forget happened since it started.
      const inFlight = this.reading.get(hash);
      if (inFlight && inFlight.generation === this.generation) return await inFlight.owner;
    }
    const before = this.generation;
    const owner = findKeyOwner(this.db, key);
    this.reading.set(hash, { generation: before, owner });
    try {
      const found = await owner;
      if (this.live && this.generation === before) this.remember(hash, found);
      return found;
    } finally {
      if (this.reading.get(hash)?.owner === owner) this.reading.delete(hash);
    }
  }

  private remember(hash: string, owner: KeyOwner | undefined): void {
    if (owner) {
      if (this.owners.size >= MAX_KEYS) this.owners.clear();
      this.owners.set(hash, { owner, at: Date.now() });
      return;
    }
    this.unknown.delete(hash);
    if (this.unknown.size >= this.limits.maxUnknownKeys) this.unknown.delete(this.unknown.keys().next().value as string);
    this.unknown.set(hash, Date.now());
  }

  /** The name of the active operator token `token`; undefined when it is unknown or revoked. */
  async operatorName(token: string): Promise<string | undefined> {
    const hash = hashApiKey(token).toString('hex');
    if (this.live) {
      const unknownAt = this.unknownOperators.get(hash);
      if (unknownAt !== undefined && Date.now() - unknownAt < UNKNOWN_MAX_AGE_MS) return undefined;
      const inFlight = this.readingOperators.get(hash);
      if (inFlight && inFlight.generation === this.generation) return await inFlight.name;
    }
    const before = this.generation;
    const name = operatorTokenName(this.db, token);
    this.readingOperators.set(hash, { generation: before, name });
    try {
      const found = await name;
      if (!found && this.live && this.generation === before) {
        this.unknownOperators.delete(hash);
        if (this.unknownOperators.size >= this.limits.maxUnknownKeys) this.unknownOperators.delete(this.unknownOperators.keys().next().value as string);
        this.unknownOperators.set(hash, Date.now());
      }
      return found;
    } finally {
      if (this.readingOperators.get(hash)?.name === name) this.readingOperators.delete(hash);
    }
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

  /** A key was created, revoked or restored: a key remembered as unknown may exist now. */
  forgetUnknownKeys(): void {
    this.generation++;
    this.unknown.clear();
  }

  /** An operator token was created, revoked or deleted: one remembered as unknown may exist now. */
  forgetUnknownOperatorTokens(): void {
    this.generation++;
    this.unknownOperators.clear();
  }

  /** The listener (re)connected (true) or lost its connection (false); either way start afresh. */
  setLive(live: boolean): void {
    this.generation++;
    this.live = live;
    this.owners.clear();
    this.unknown.clear();
    this.unknownOperators.clear();
    this.domains.clear();
  }
}
