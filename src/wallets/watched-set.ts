/**
 * The watched addresses of one chain, kept in the follower's process, so that a block's statement asks the
 * database about the few of its addresses that may be watched instead of all of them. A 2,000-transaction
 * Bitcoin block touches about 7,000 addresses: they went as one text (about 280 KB) with every block, to be
 * split and joined against wallet_addresses by PostgreSQL, for a handful of matches (utxo-block benchmark:
 * PostgreSQL 22-23 % of a core before, 20-21 % after, at about the same blocks/s; docs/benchmarks.md).
 *
 * The database stays the judge: the block's statement (store/block-apply.ts) reads, under the chain's
 * lock, the watched rows of the candidates this set names and every address of the chain added after the
 * highest id the set has seen (store/ledger.ts lastWatchedId says why an id bound is exact under that
 * lock). The set learns those and never misses one; an address removed from its wallets (or whose last
 * address subscription ended) stays in the set (a candidate the statement then finds no row for) until
 * the process restarts.
 */
import { ADDRESS_READ_BLOCKCHAINS, type ChainKey } from '../domain/chains.ts';
import { getCursor, lockChain } from '../store/chain-state.ts';
import type { Db } from '../store/db.ts';
import { lastWatchedId, type WatchedAddress, type WatchedRow, watchedAddressPage } from '../store/ledger.ts';
import { reconcileSubscribedAddresses } from '../store/subscribed-addresses.ts';

/** Addresses read per statement when the set is first loaded. */
const LOAD_PAGE = 50_000;

export class WatchedAddressSet {
  private readonly addresses = new Set<string>();
  /** Every address of the chain with an id up to this is in the set; undefined until loaded. */
  private bound: number | undefined;

  get loaded(): boolean {
    return this.bound !== undefined;
  }

  /** The id bound for the block's statement: rows above it are returned whatever their address. */
  get since(): number {
    if (this.bound === undefined) throw new Error('the watched address set is not loaded');
    return this.bound;
  }

  get size(): number {
    return this.addresses.size;
  }

  /**
   * Reads the chain's watched addresses: the id bound under the chain's lock (one short transaction), then
   * the addresses up to it in pages, outside the lock (a large set must not hold following up).
   */
  async load(db: Db, chain: ChainKey, pageSize = LOAD_PAGE): Promise<void> {
    const bound = await db.transaction('ingest:watched-bound', async (tx) => {
      await lockChain(tx, chain);
      // The subscribed addresses a stopped process left unwatched (or watched too long) first, so that
      // the bound covers them (store/subscribed-addresses.ts).
      if (ADDRESS_READ_BLOCKCHAINS.includes(chain.blockchain)) {
        const cursor = await getCursor(tx, chain);
        await reconcileSubscribedAddresses(tx, chain, cursor ? cursor.height : null);
      }
      return await lastWatchedId(tx, chain);
    });
    let after = '';
    for (;;) {
      const page = await watchedAddressPage(db, chain, { upToId: bound, after, limit: pageSize });
      for (const address of page) this.addresses.add(address);
      if (page.length < pageSize) break;
      after = page.at(-1) as string;
    }
    this.bound = bound;
  }

  /** The addresses of `touched` that may be watched (those in the set). */
  candidates(touched: readonly string[]): string[] {
    // Most followed chains have no watched address at all: nothing to look up in the block's thousands.
    if (this.addresses.size === 0) return [];
    const found: string[] = [];
    for (const address of touched) if (this.addresses.has(address)) found.push(address);
    return found;
  }

  /**
   * The watched rows of the block, from what its statement returned for `candidates` and the set's bound:
   * the added rows are learnt (the bound moves past them) and kept when `touched` holds their address. A row
   * is returned once even when both parts of the statement found it.
   */
  watchedOf(rows: readonly WatchedRow[], touched: readonly string[]): WatchedAddress[] {
    const byId = new Map<string, WatchedAddress>();
    let touchedSet: Set<string> | undefined;
    for (const row of rows) {
      if (byId.has(row.id)) continue;
      if (row.added) {
        this.addresses.add(row.address);
        this.bound = Math.max(this.since, Number(row.id));
        touchedSet ??= new Set(touched);
        if (!touchedSet.has(row.address)) continue;
      }
      byId.set(row.id, row.derived ? { id: row.id, address: row.address, derived: true } : { id: row.id, address: row.address });
    }
    return [...byId.values()];
  }
}
