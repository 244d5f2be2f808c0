/**
 * An address subscription watches its address for herald's wallet ledger from the moment it is created
 * (or activated), as a wallet's address is: the Callback Data address read answers from that ledger
 * (docs/concepts/callback-data.md). Called once the create's or the activation's own transaction has
 * committed: the create paths write without the chain's lock (grouped and bulk creates, one statement
 * each), and waiting for the chain's follower inside them would hold the customer's rows meanwhile.
 *
 * A failure here does not undo the subscription (it is created and paid for): it is logged, the address
 * read watches the address itself when it finds it unwatched, and the follower's next start watches every
 * subscribed address left out (store/subscribed-addresses.ts reconcileSubscribedAddresses).
 */
import type { Logger } from 'pino';
import { ADDRESS_READ_BLOCKCHAINS, type ChainKey } from '../domain/chains.ts';
import { getCursor, lockChainStatement } from '../store/chain-state.ts';
import type { Db } from '../store/db.ts';
import * as store from '../store/subscribed-addresses.ts';

/**
 * Watches the addresses among `targets` (normalised) that an active address subscription of the customer
 * on `chain` names and that are not watched yet. watchedFromBlock is the chain's last processed block, read
 * under the chain's lock (the rule of services/wallets.ts addAddress: no block missed or counted twice).
 */
export async function watchSubscribedAddresses(db: Db, chain: ChainKey, customerId: string, targets: readonly string[]): Promise<number> {
  if (targets.length === 0 || !ADDRESS_READ_BLOCKCHAINS.includes(chain.blockchain)) return 0;
  return await db.transaction(
    'subscribed-addresses:watch',
    async (tx) => {
      const cursor = await getCursor(tx, chain);
      return await store.watchSubscribedAddresses(tx, chain, cursor ? cursor.height : null, customerId, targets);
    },
    { prelude: lockChainStatement(chain) },
  );
}

/** watchSubscribedAddresses for subscriptions just created or activated: a failure is logged, not answered (see the module's comment). */
export async function watchAfterCommit(
  deps: { db: Db; logger?: Pick<Logger, 'warn'> },
  chain: ChainKey,
  customerId: string,
  subscriptions: readonly { address: string | null; target: string | null }[],
): Promise<void> {
  // An address event's target is its normalised address; the other events name none.
  const addresses = subscriptions.flatMap((s) => (s.address !== null && s.target !== null ? [s.target] : []));
  if (addresses.length === 0) return;
  try {
    await watchSubscribedAddresses(deps.db, chain, customerId, addresses);
  } catch (error) {
    deps.logger?.warn(
      { err: error, ...chain, customerId, addresses: addresses.length },
      'subscribed addresses not watched yet: the address read or the next start will',
    );
  }
}
