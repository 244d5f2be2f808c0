/**
 * The derived addresses of wallet-key subscriptions (migration 063, docs/concepts/wallet-keys.md): written at
 * create (the first window) and by the follower (used flags, the window extended) in the block's own
 * transaction; read by the addresses endpoints. The window only grows; a reorganisation clears the used
 * flags of its dropped blocks.
 */
import type { ChainKey } from '../domain/chains.ts';
import type { DerivedAddressRow } from '../domain/subscriptions.ts';
import type { Queryable } from './db.ts';

type NewDerived = Pick<DerivedAddressRow, 'address' | 'derivationPath' | 'change' | 'index'>;

/** Adds derived addresses of `subscriptionId` (those already there are left as they are). */
export async function insertDerivedAddresses(tx: Queryable, subscriptionId: string, rows: readonly NewDerived[]): Promise<number> {
  if (rows.length === 0) return 0;
  const inserted = await tx.query(
    'xpub:insert-addresses',
    `INSERT INTO xpub_addresses (subscription_id, change, index, address, derivation_path)
     SELECT $1::uuid, * FROM unnest($2::boolean[], $3::int[], $4::text[], $5::text[])
     ON CONFLICT DO NOTHING RETURNING index`,
    [subscriptionId, rows.map((r) => r.change), rows.map((r) => r.index), rows.map((r) => r.address), rows.map((r) => r.derivationPath)],
  );
  return inserted.length;
}

/** Per chain of a subscription: the highest index used (-1: none) and the highest derived. */
export interface WindowEdge {
  change: boolean;
  highestUsed: number;
  highest: number;
}

/**
 * Marks addresses used at `height` (the first height is kept) and returns the edges of each chain of every
 * subscription named, after the marking: what the follower extends the window from.
 */
export async function markUsed(
  tx: Queryable,
  uses: readonly { subscriptionId: string; change: boolean; index: number }[],
  height: number,
): Promise<Map<string, WindowEdge[]>> {
  const edges = new Map<string, WindowEdge[]>();
  if (uses.length === 0) return edges;
  const rows = await tx.query<{ subscription_id: string; change: boolean; highest_used: number | null; highest: number }>(
    'xpub:mark-used',
    `WITH marked AS (
       UPDATE xpub_addresses x SET used = true, first_seen_height = coalesce(x.first_seen_height, $4::bigint)
       FROM unnest($1::uuid[], $2::boolean[], $3::int[]) AS u (subscription_id, change, index)
       WHERE x.subscription_id = u.subscription_id AND x.change = u.change AND x.index = u.index
       RETURNING x.subscription_id, x.change, x.index)
     SELECT x.subscription_id, x.change, greatest(max(x.index) FILTER (WHERE x.used), (SELECT max(m.index) FROM marked m
         WHERE m.subscription_id = x.subscription_id AND m.change = x.change)) AS highest_used, max(x.index) AS highest
     FROM xpub_addresses x WHERE x.subscription_id = ANY ($1::uuid[]) GROUP BY x.subscription_id, x.change`,
    [uses.map((u) => u.subscriptionId), uses.map((u) => u.change), uses.map((u) => u.index), height],
  );
  for (const r of rows) {
    const list = edges.get(r.subscription_id) ?? [];
    list.push({ change: r.change, highestUsed: r.highest_used ?? -1, highest: r.highest });
    edges.set(r.subscription_id, list);
  }
  return edges;
}

/** The edges of each chain of the subscriptions named, as they are (nothing marked). */
export async function highestDerived(q: Queryable, subscriptionIds: readonly string[]): Promise<Map<string, WindowEdge[]>> {
  const edges = new Map<string, WindowEdge[]>();
  if (subscriptionIds.length === 0) return edges;
  const rows = await q.query<{ subscription_id: string; change: boolean; highest_used: number | null; highest: number }>(
    'xpub:window-edges',
    `SELECT subscription_id, change, max(index) FILTER (WHERE used) AS highest_used, max(index) AS highest
     FROM xpub_addresses WHERE subscription_id = ANY ($1::uuid[]) GROUP BY subscription_id, change`,
    [subscriptionIds],
  );
  for (const r of rows) {
    const list = edges.get(r.subscription_id) ?? [];
    list.push({ change: r.change, highestUsed: r.highest_used ?? -1, highest: r.highest });
    edges.set(r.subscription_id, list);
  }
  return edges;
}

/**
 * Marks addresses of one subscription used, each first seen at its own height (past use found at subscribe,
 * docs/concepts/wallet-keys.md#past-use-at-subscribe).
 */
export async function markUsedAt(tx: Queryable, subscriptionId: string, uses: readonly { change: boolean; index: number; height: number }[]): Promise<void> {
  if (uses.length === 0) return;
  await tx.query(
    'xpub:mark-used-at',
    `UPDATE xpub_addresses x SET used = true, first_seen_height = u.height
     FROM unnest($2::boolean[], $3::int[], $4::bigint[]) AS u (change, index, height)
     WHERE x.subscription_id = $1 AND x.change = u.change AND x.index = u.index`,
    [subscriptionId, uses.map((u) => u.change), uses.map((u) => u.index), uses.map((u) => u.height)],
  );
}

/** A reorganisation back to `ancestorHeight`: the used flags its dropped blocks set are cleared (the addresses stay). */
export async function clearUsedAbove(tx: Queryable, chain: ChainKey, ancestorHeight: number): Promise<number> {
  const rows = await tx.query(
    'xpub:clear-used-above',
    `UPDATE xpub_addresses x SET used = false, first_seen_height = NULL FROM subscriptions s
     WHERE s.id = x.subscription_id AND s.blockchain = $1 AND s.network = $2 AND x.first_seen_height > $3 RETURNING x.index`,
    [chain.blockchain, chain.network, ancestorHeight],
  );
  return rows.length;
}

interface DerivedRow {
  address: string;
  derivation_path: string;
  change: boolean;
  index: number;
  used: boolean;
  first_seen_height: string | null;
}

const toDerived = (r: DerivedRow): DerivedAddressRow => ({
  address: r.address,
  derivationPath: r.derivation_path,
  change: r.change,
  index: r.index,
  used: r.used,
  firstSeenHeight: r.first_seen_height === null ? null : Number(r.first_seen_height),
});

/** A page of the derived addresses of the customer's subscription (receive chain first, by index), and their total. */
export async function listDerivedAddresses(
  q: Queryable,
  customerId: string,
  subscriptionId: string,
  filter: { change?: boolean; used?: boolean },
  page: { limit: number; offset: number },
): Promise<{ total: number; items: DerivedAddressRow[] }> {
  const rows = await q.query<DerivedRow & { total: number }>(
    'xpub:list-addresses',
    `SELECT x.address, x.derivation_path, x.change, x.index, x.used, x.first_seen_height::text, count(*) OVER ()::int AS total
     FROM xpub_addresses x JOIN subscriptions s ON s.id = x.subscription_id
     WHERE s.customer_id = $1 AND x.subscription_id = $2 AND ($3::boolean IS NULL OR x.change = $3) AND ($4::boolean IS NULL OR x.used = $4)
     ORDER BY x.change, x.index LIMIT $5 OFFSET $6`,
    [customerId, subscriptionId, filter.change ?? null, filter.used ?? null, page.limit, page.offset],
  );
  if (rows.length > 0) return { total: (rows[0] as { total: number }).total, items: rows.map(toDerived) };
  if (page.offset === 0) return { total: 0, items: [] };
  const [count] = await q.query<{ n: number }>(
    'xpub:count-addresses',
    `SELECT count(*)::int AS n FROM xpub_addresses x JOIN subscriptions s ON s.id = x.subscription_id
     WHERE s.customer_id = $1 AND x.subscription_id = $2 AND ($3::boolean IS NULL OR x.change = $3) AND ($4::boolean IS NULL OR x.used = $4)`,
    [customerId, subscriptionId, filter.change ?? null, filter.used ?? null],
  );
  return { total: count?.n ?? 0, items: [] };
}

/** The receive address after the highest used one (index 0 when none is used), or undefined when the subscription has no receive chain. */
export async function nextReceiveAddress(q: Queryable, customerId: string, subscriptionId: string): Promise<DerivedAddressRow | undefined> {
  const [row] = await q.query<DerivedRow>(
    'xpub:next-address',
    `SELECT x.address, x.derivation_path, x.change, x.index, x.used, x.first_seen_height::text
     FROM xpub_addresses x JOIN subscriptions s ON s.id = x.subscription_id
     WHERE s.customer_id = $1 AND x.subscription_id = $2 AND NOT x.change
       AND x.index = coalesce((SELECT max(u.index) + 1 FROM xpub_addresses u WHERE u.subscription_id = $2 AND NOT u.change AND u.used), 0)`,
    [customerId, subscriptionId],
  );
  return row ? toDerived(row) : undefined;
}

/** One window of derived addresses of a subscription, as the derivation workers send it (services/derive-workers.ts JoinedWindow). */
export interface DerivedWindowText {
  subscriptionId: string;
  change: boolean;
  /** The index of the first address. */
  from: number;
  /** The derivation path up to the index (`${prefix}/${index}` is each address's). */
  prefix: string;
  /** The addresses of indexes from, from + 1, ..., joined by newlines. */
  addresses: string;
}

/**
 * Adds windows of derived addresses of many subscriptions in one statement (those already there are left as
 * they are): the bulk form of insertDerivedAddresses, for loading keys by the thousand (bench/xpub-scale.ts).
 * Each window's addresses go as the one newline-joined string the workers made, split into rows by
 * PostgreSQL, its paths built there too: five arrays of one entry per window, not five of one entry per
 * address to serialise here. Returns how many were added.
 */
export async function insertDerivedWindows(tx: Queryable, windows: readonly DerivedWindowText[]): Promise<number> {
  const filled = windows.filter((w) => w.addresses !== '');
  if (filled.length === 0) return 0;
  const [row] = await tx.query<{ n: number }>(
    'xpub:insert-windows',
    `WITH added AS (
       INSERT INTO xpub_addresses (subscription_id, change, index, address, derivation_path)
       SELECT w.subscription_id, w.change, w.first + a.n::int - 1, a.address, w.prefix || '/' || (w.first + a.n::int - 1)
       FROM unnest($1::uuid[], $2::boolean[], $3::int[], $4::text[], $5::text[]) AS w (subscription_id, change, first, prefix, addresses)
       CROSS JOIN LATERAL unnest(string_to_array(w.addresses, E'\\n')) WITH ORDINALITY AS a (address, n)
       ON CONFLICT DO NOTHING RETURNING 1)
     SELECT count(*)::int AS n FROM added`,
    [filled.map((w) => w.subscriptionId), filled.map((w) => w.change), filled.map((w) => w.from), filled.map((w) => w.prefix), filled.map((w) => w.addresses)],
  );
  return row?.n ?? 0;
}
