/**
 * Past blocks evaluated for ONE subscription (backfill from a height, replay of a block range): the very
 * code chain following runs (buildBlockEvents, hence matching/identity.ts for keys and items), over an
 * index that holds that subscription alone, so each callback has the idempotencyKey and the body live
 * following gave (or would have given) it.
 *
 * The subscription's target is taken as active whatever its row says now: whoever evaluates decides
 * whether an inactive subscription's events are queued (a job pauses instead; see store/block-jobs.ts).
 */
import type { NormalizedBlock } from '../chains/types.ts';
import type { ChainKey, EventType } from '../domain/chains.ts';
import type { CallbackTargetRow } from '../domain/events.ts';
import type { IndexableSubscription } from '../domain/subscriptions.ts';
import { buildBlockEvents, type TokenMetadataLookup } from './events.ts';
import { SubscriptionIndex } from './index.ts';
import type { SafetyPolicy } from './safety.ts';

/** One callback an evaluated block gives: due (sent by live following) at the block dueHeight. */
export interface PastCallback {
  subscriptionId: string;
  customerId: string;
  eventType: EventType;
  /** null: a pull-only subscription's. */
  callbackUrl: string | null;
  idempotencyKey: string;
  body: string;
  blockHeight: number;
  blockHash: string;
  /** The block at which live following makes it due: blockHeight + confirmations - 1. */
  dueHeight: number;
}

export interface PastBlockEvaluator {
  /** The callbacks of `block` for the subscription, in the order live following numbers them (due height, then match order). */
  evaluate(block: NormalizedBlock): Promise<PastCallback[]>;
}

export interface EvaluatorInput {
  subscription: IndexableSubscription;
  target: CallbackTargetRow;
  chain: ChainKey;
  /** The chain's confirmations (as its follower is given them). */
  defaultConfirmations: number;
  tokenMetadata?: TokenMetadataLookup;
  /** The chain's safety thresholds and list (src/matching/safety.ts); default: the shipped defaults. */
  safety?: SafetyPolicy;
  /**
   * UTXO chains: the block with the spends of outputs the ledger recorded resolved (wallets/ledger.ts
   * resolveSpends), as the follower matches it. Absent: the block as fetched.
   */
  resolveSpends?: (block: NormalizedBlock) => Promise<NormalizedBlock>;
}

export function pastBlockEvaluator(input: EvaluatorInput): PastBlockEvaluator {
  const index = new SubscriptionIndex(input.chain.blockchain, input.chain.network);
  index.add({ ...input.subscription, isActive: true });
  index.settle();
  const targets = new Map([[input.target.id, { ...input.target, isActive: true }]]);
  return {
    async evaluate(fetched) {
      const block = input.resolveSpends ? await input.resolveSpends(fetched) : fetched;
      const events = await buildBlockEvents(
        { index, block, chain: input.chain, defaultConfirmations: input.defaultConfirmations, tokenMetadata: input.tokenMetadata, safety: input.safety },
        async () => targets,
      );
      const out: PastCallback[] = [];
      for (const c of events.now) {
        out.push({ ...c, blockHeight: block.height, blockHash: block.hash, dueHeight: block.height });
      }
      for (const p of events.pending) {
        out.push({
          subscriptionId: p.subscriptionId,
          customerId: p.customerId,
          eventType: p.eventType,
          callbackUrl: p.callbackUrl,
          idempotencyKey: p.idempotencyKey,
          body: p.body,
          blockHeight: p.blockHeight,
          blockHash: p.blockHash,
          dueHeight: p.dueHeight,
        });
      }
      // Stable: within one due height, the order they were matched in.
      return out.sort((a, b) => a.dueHeight - b.dueHeight);
    },
  };
}

/** The events whose matching reads coin movements, the only ones that need a UTXO block's spends resolved. */
export const COIN_EVENTS: ReadonlySet<EventType> = new Set([
  'ADDRESS_COINS_TRANSACTION_CONFIRMED',
  'ADDRESS_COINS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION',
  'CONFIRMED_COINS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER',
]);

/** The transaction id an item names, when it names one (block events do not). */
export function transactionIdOf(body: string): string | null {
  const item = (JSON.parse(body) as { data?: { item?: Record<string, unknown> } }).data?.item;
  const id = item?.transactionId ?? item?.parentTransactionId ?? item?.txId;
  return typeof id === 'string' ? id : null;
}
