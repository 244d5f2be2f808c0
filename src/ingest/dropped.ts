/**
 * Dropped unconfirmed transactions (docs/reference/events/address-coins-transaction-unconfirmed-dropped.md):
 * the DROPPED callbacks of announced transactions that went away, built inside the transaction that
 * decided it (the mempool loop's batch for `replaced`, the follower's block for `conflicted`, the eviction
 * check's transaction under the chain's lock for `evicted`: ingest/evicted.ts), so the
 * decision, the closing of the announcement (store/dropped.ts) and the callback commit together. The key
 * comes from (subscription, transaction, 'dropped'): it can never be sent twice.
 */
import type { NormalizedBlock } from '../chains/types.ts';
import { callbackBody } from '../domain/callbacks.ts';
import { type ChainKey, DROPPED_EVENTS, type DroppedEventType } from '../domain/chains.ts';
import { callbackOfEvent, type NewCallback } from '../domain/events.ts';
import { type DropReason, droppedIdempotencyKey, droppedItem } from '../matching/pending.ts';
import { enqueueCallbacks } from '../store/callbacks.ts';
import { loadCallbackTargets } from '../store/chain-state.ts';
import type { Queryable } from '../store/db.ts';
import { type DroppedAnnouncement, takeSettledByBlock } from '../store/dropped.ts';

/** The DROPPED callbacks of `dropped` for their subscriptions still active (a deleted or deactivated one gets none). */
export async function droppedCallbacks(
  tx: Queryable,
  chain: ChainKey,
  dropped: DroppedAnnouncement[],
  reason: DropReason,
): Promise<NewCallback<DroppedEventType>[]> {
  if (dropped.length === 0) return [];
  const targets = await loadCallbackTargets(tx, [...new Set(dropped.map((d) => d.subscriptionId))]);
  const callbacks: NewCallback<DroppedEventType>[] = [];
  for (const d of dropped) {
    const target = targets.get(d.subscriptionId);
    if (!target?.isActive) continue;
    const eventType = DROPPED_EVENTS[d.eventType as keyof typeof DROPPED_EVENTS];
    if (eventType === undefined) continue;
    const key = droppedIdempotencyKey(target.id, chain, d.transactionId);
    const item = droppedItem(d.item, reason, reason === 'evicted' ? undefined : d.byTransactionId);
    callbacks.push(
      callbackOfEvent({
        customerId: target.customerId,
        subscriptionId: target.id,
        eventType,
        idempotencyKey: key,
        body: callbackBody({ id: target.id, eventType, apiVersion: target.apiVersion }, key, item),
        callbackUrl: target.callbackUrl,
      }),
    );
  }
  return callbacks;
}

/**
 * In the follower's block transaction: closes the announcements of the block's transactions (a mined
 * transaction is never dropped) and queues `conflicted` for those whose outpoints (EVM: nonce) the block's
 * transactions take. UTXO chains: every input of the block, `utxo.spends` and `utxo.resolvedSpends` (those the adapter
 * resolved: getblock verbosity 3's `prevout`, an output of the same block); EVM chains: the block's
 * `nonces` (sender and nonce, as a same-nonce replacement in the mempool). Returns the callbacks queued.
 */
export async function settleAnnounced(tx: Queryable, chain: ChainKey, block: NormalizedBlock): Promise<number> {
  const spends: { transactionId: string; key: string }[] = [];
  for (const s of block.utxo?.spends ?? []) spends.push({ transactionId: s.transactionId, key: s.outpoint });
  for (const s of block.utxo?.resolvedSpends ?? []) spends.push({ transactionId: s.transactionId, key: s.outpoint });
  for (const n of block.nonces ?? []) spends.push(n);
  const conflicted = await takeSettledByBlock(tx, chain, block.transactionIds, spends);
  return await enqueueCallbacks(tx, await droppedCallbacks(tx, chain, conflicted, 'conflicted'), new Date(), { chain });
}
