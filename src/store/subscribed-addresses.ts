/**
 * Addresses watched for the wallet ledger because an active address subscription of a customer names
 * them (migration 031): a wallet_addresses row owned by the customer (subscribed_by) rather than a
 * wallet, one per customer, chain and address. The address read of the Callback Data answers from it.
 * Adding one follows the rule of a wallet's address (store/wallets.ts insertWalletAddress): the caller
 * holds the chain's lock and gives the chain's last processed block as watchedFromBlock. Removing one is
 * the migration's triggers' job, in the transaction that ends the last subscription naming it.
 */

import type { ChainKey } from '../domain/chains.ts';
import type { Queryable } from './db.ts';

/** The columns every insert below writes, from subscriptions `s` ($3 is watchedFromBlock, null when the chain has no cursor yet). */
const FROM_SUBSCRIPTIONS = `INSERT INTO wallet_addresses (subscribed_by, blockchain, network, address, normalized_address, watched_from_block)
  SELECT DISTINCT ON (s.customer_id, s.target) s.customer_id, s.blockchain, s.network, s.address, s.target, $3::bigint
  FROM subscriptions s`;

/**
 * Watches the addresses among `targets` (normalised) that an active address subscription of the customer
 * on `chain` names and that it does not watch yet. Returns how many it added.
 */
export async function watchSubscribedAddresses(
  tx: Queryable,
  chain: ChainKey,
  watchedFromBlock: number | null,
  customerId: string,
  targets: readonly string[],
): Promise<number> {
  if (targets.length === 0) return 0;
  const rows = await tx.query(
    'subscribed-addresses:watch',
    `${FROM_SUBSCRIPTIONS}
     WHERE s.customer_id = $4 AND s.blockchain = $1 AND s.network = $2 AND s.target = ANY ($5::text[]) AND s.is_active AND s.address IS NOT NULL
     ORDER BY s.customer_id, s.target, s.created_at
     ON CONFLICT (subscribed_by, blockchain, network, normalized_address) WHERE subscribed_by IS NOT NULL DO NOTHING
     RETURNING id`,
    [chain.blockchain, chain.network, watchedFromBlock, customerId, [...new Set(targets)]],
  );
  return rows.length;
}

/**
 * Brings the chain's subscribed addresses in line with its active address subscriptions: watches those
 * missing (a process that stopped between a create's commit and its watch, subscriptions made before
 * this existed) and stops watching those no active subscription names (two subscriptions of an address
 * ended at once, see the migration). Run by the follower when it loads its watched set.
 */
export async function reconcileSubscribedAddresses(
  tx: Queryable,
  chain: ChainKey,
  watchedFromBlock: number | null,
): Promise<{ added: number; removed: number }> {
  const removed = await tx.query(
    'subscribed-addresses:unwatch-stale',
    `DELETE FROM wallet_addresses a
     WHERE a.subscribed_by IS NOT NULL AND a.blockchain = $1 AND a.network = $2
       AND NOT EXISTS (SELECT 1 FROM subscriptions s
                       WHERE s.customer_id = a.subscribed_by AND s.blockchain = $1 AND s.network = $2 AND s.target = a.normalized_address
                         AND s.is_active AND s.address IS NOT NULL)
     RETURNING id`,
    [chain.blockchain, chain.network],
  );
  const added = await tx.query(
    'subscribed-addresses:watch-missing',
    `${FROM_SUBSCRIPTIONS}
     WHERE s.blockchain = $1 AND s.network = $2 AND s.is_active AND s.address IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM wallet_addresses a
                       WHERE a.subscribed_by = s.customer_id AND a.blockchain = $1 AND a.network = $2 AND a.normalized_address = s.target)
     ORDER BY s.customer_id, s.target, s.created_at
     ON CONFLICT (subscribed_by, blockchain, network, normalized_address) WHERE subscribed_by IS NOT NULL DO NOTHING
     RETURNING id`,
    [chain.blockchain, chain.network, watchedFromBlock],
  );
  return { added: added.length, removed: removed.length };
}
