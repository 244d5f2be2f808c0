/**
 * A customer's default confirmation policy per chain (migration 059; docs/concepts/confirmations-and-reorganisations.md#a-default-policy-per-chain):
 * tiers or finality, copied into an address subscription created without receiveCallbackOn,
 * confirmationTiers or finality. Every function takes the customer id.
 */
import type { Blockchain, Network } from '../domain/chains.ts';
import { type ConfirmationPolicy, policyText } from '../domain/confirmations.ts';
import type { Queryable } from './db.ts';

export interface StoredConfirmationPolicy {
  blockchain: Blockchain;
  network: Network;
  policy: ConfirmationPolicy;
  updatedAt: Date;
}

interface Row {
  blockchain: Blockchain;
  network: Network;
  policy: ConfirmationPolicy;
  updated_at: Date;
}

const toPolicy = (r: Row): StoredConfirmationPolicy => ({ blockchain: r.blockchain, network: r.network, policy: r.policy, updatedAt: r.updated_at });

/** Sets (or replaces) the customer's policy for the chain. */
export async function putConfirmationPolicy(
  q: Queryable,
  customerId: string,
  chain: { blockchain: Blockchain; network: Network },
  policy: ConfirmationPolicy,
): Promise<StoredConfirmationPolicy> {
  const [row] = await q.query<Row>(
    'confirmation-policies:put',
    `INSERT INTO customer_confirmation_policies (customer_id, blockchain, network, policy) VALUES ($1, $2, $3, $4::jsonb)
     ON CONFLICT (customer_id, blockchain, network) DO UPDATE SET policy = EXCLUDED.policy, updated_at = now()
     RETURNING blockchain, network, policy, updated_at`,
    [customerId, chain.blockchain, chain.network, policyText(policy)],
  );
  return toPolicy(row as Row);
}

/** The customer's policies, by chain. */
export async function listConfirmationPolicies(q: Queryable, customerId: string): Promise<StoredConfirmationPolicy[]> {
  const rows = await q.query<Row>(
    'confirmation-policies:list',
    'SELECT blockchain, network, policy, updated_at FROM customer_confirmation_policies WHERE customer_id = $1 ORDER BY blockchain, network',
    [customerId],
  );
  return rows.map(toPolicy);
}

/** The customer's policy for the chain, if any (read by a create that gives none of its own). */
export async function getConfirmationPolicy(
  q: Queryable,
  customerId: string,
  chain: { blockchain: Blockchain; network: Network },
): Promise<StoredConfirmationPolicy | undefined> {
  const [row] = await q.query<Row>(
    'confirmation-policies:get',
    'SELECT blockchain, network, policy, updated_at FROM customer_confirmation_policies WHERE customer_id = $1 AND blockchain = $2 AND network = $3',
    [customerId, chain.blockchain, chain.network],
  );
  return row ? toPolicy(row) : undefined;
}

/** Removes the customer's policy for the chain; the removed one, or undefined when there was none. */
export async function deleteConfirmationPolicy(
  q: Queryable,
  customerId: string,
  chain: { blockchain: Blockchain; network: Network },
): Promise<StoredConfirmationPolicy | undefined> {
  const [row] = await q.query<Row>(
    'confirmation-policies:delete',
    'DELETE FROM customer_confirmation_policies WHERE customer_id = $1 AND blockchain = $2 AND network = $3 RETURNING blockchain, network, policy, updated_at',
    [customerId, chain.blockchain, chain.network],
  );
  return row ? toPolicy(row) : undefined;
}
