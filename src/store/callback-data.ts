/**
 * What the address read of the Callback Data (docs/reference/api.md#address-details) needs from herald's own records: whether
 * one of the customer's active subscriptions on the chain names the address, and the customer's wallet
 * ledger of that address (the row its subscriptions watch, store/subscribed-addresses.ts, or one of its
 * wallets'). Tenant-scoped like every customer-facing query.
 */
import type { Blockchain, Network } from '../domain/chains.ts';
import type { Queryable } from './db.ts';

export interface AddressLedger {
  /** Base units. */
  confirmedBalance: bigint;
  totalReceived: bigint;
  totalSpent: bigint;
  /** Confirmed transactions that paid the address, and that spent from it, since it is watched. */
  incomingTransactions: number;
  outgoingTransactions: number;
  watchedFromBlock: bigint | null;
  /** Whether the balance includes the opening balance read from the node at watchedFromBlock (migration 005). */
  openingState: 'pending' | 'read' | 'unavailable';
}

/** True when an active subscription of the customer on the chain has `normalizedAddress` as its address target. */
export async function hasAddressSubscription(
  q: Queryable,
  customerId: string,
  chain: { blockchain: Blockchain; network: Network },
  normalizedAddress: string,
): Promise<boolean> {
  const rows = await q.query(
    'callback-data:address-subscription',
    `SELECT 1 FROM subscriptions
      WHERE customer_id = $1 AND blockchain = $2 AND network = $3 AND is_active AND address IS NOT NULL AND target = $4
      LIMIT 1`,
    [customerId, chain.blockchain, chain.network, normalizedAddress],
  );
  return rows.length > 0;
}

/**
 * The customer's ledger of the address on the chain: of the rows watching it (the one its subscriptions
 * watch, its wallets'), the one watched from the earliest block (it has counted the most), or undefined
 * when none does.
 */
export async function addressLedger(
  q: Queryable,
  customerId: string,
  chain: { blockchain: Blockchain; network: Network },
  normalizedAddress: string,
): Promise<AddressLedger | undefined> {
  const [row] = await q.query<{
    confirmed_balance: string;
    total_received: string;
    total_spent: string;
    incoming_transactions: string;
    outgoing_transactions: string;
    watched_from_block: string | null;
    opening_state: AddressLedger['openingState'];
  }>(
    'callback-data:address-ledger',
    `SELECT a.confirmed_balance, a.total_received, a.total_spent, a.incoming_transactions, a.outgoing_transactions, a.watched_from_block, a.opening_state
       FROM wallet_addresses a LEFT JOIN wallets w ON w.id = a.wallet_id
      WHERE (a.subscribed_by = $1 OR w.customer_id = $1) AND a.blockchain = $2 AND a.network = $3 AND a.normalized_address = $4
      ORDER BY a.watched_from_block ASC NULLS LAST, a.id
      LIMIT 1`,
    [customerId, chain.blockchain, chain.network, normalizedAddress],
  );
  if (!row) return undefined;
  return {
    confirmedBalance: BigInt(row.confirmed_balance),
    totalReceived: BigInt(row.total_received),
    totalSpent: BigInt(row.total_spent),
    incomingTransactions: Number(row.incoming_transactions),
    outgoingTransactions: Number(row.outgoing_transactions),
    watchedFromBlock: row.watched_from_block === null ? null : BigInt(row.watched_from_block),
    openingState: row.opening_state,
  };
}
