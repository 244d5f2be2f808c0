/**
 * One block's matches -> what the follower stores: callbacks due at once (TRANSACTION_MINED, the block
 * events, and any event asking for one confirmation) and confirmed events to wait for (pending until due_height =
 * height + confirmations - 1). Keys and items come from src/matching/identity.ts, so a rebuild after a
 * crash gives the same key and body; the key includes the block hash, so the same transaction mined
 * again in another block gets a new one.
 */
import type { NormalizedBlock, TokenMetadata, TokenTransfer } from '../chains/types.ts';
import type { BlockRef } from '../domain/blocks.ts';
import { callbackBody } from '../domain/callbacks.ts';
import { EACH_CONFIRMATION_EVENTS } from '../domain/chains.ts';
import { callbackItem, eachConfirmationItem, matchIdempotencyKey } from '../matching/identity.ts';
import type { SubscriptionIndex } from '../matching/index.ts';
import { confirmationsDue, type Match, matchBlock, matchRevertedBlock, tokenAmountReached } from '../matching/match.ts';
import { callbackOfEvent, type NewCallback } from '../store/callbacks.ts';
import type { CallbackTargetRow, ChainKey, PendingEvent } from '../store/chain-state.ts';

export type TokenMetadataLookup = (transfer: TokenTransfer) => Promise<TokenMetadata | undefined>;

export interface BlockEventsInput {
  index: SubscriptionIndex;
  block: NormalizedBlock;
  chain: ChainKey;
  defaultConfirmations: number;
  tokenMetadata?: TokenMetadataLookup;
}

export interface BlockEvents {
  now: NewCallback[];
  pending: PendingEvent[];
}

/**
 * `loadTargets` reads the matched subscriptions' callback details (in the block's transaction); a
 * subscription deleted or deactivated since the index was built gets nothing.
 */
export async function buildBlockEvents(input: BlockEventsInput, loadTargets: (ids: string[]) => Promise<Map<string, CallbackTargetRow>>): Promise<BlockEvents> {
  const { index, block, chain } = input;
  return await eventsOf(matchBlock(index, block, chain.blockchain), input, loadTargets);
}

/** As buildBlockEvents, for the matches of `input.block` the caller already has, with their targets read. */
export async function blockEventsOf(matches: Match[], input: Omit<BlockEventsInput, 'index'>, targets: Map<string, CallbackTargetRow>): Promise<BlockEvents> {
  return await eventsOf(matches, input, async () => targets);
}

/**
 * The BLOCK_REVERTED callbacks of the blocks a reorganisation drops (in the order given): one per dropped
 * block and indexed subscription, with that block's height, hash and timestamp; due at once.
 */
export async function buildRevertedEvents(
  input: { index: SubscriptionIndex; blocks: BlockRef[]; chain: ChainKey },
  loadTargets: (ids: string[]) => Promise<Map<string, CallbackTargetRow>>,
): Promise<NewCallback[]> {
  const matches = matchRevertedBlock(input.index);
  const callbacks: NewCallback[] = [];
  if (matches.length === 0) return callbacks;
  const targets = await loadTargets(matches.map((m) => m.subscription.id));
  for (const block of input.blocks) {
    const events = await eventsOf(matches, { ...input, block, defaultConfirmations: 1 }, async () => targets);
    callbacks.push(...events.now);
  }
  return callbacks;
}

async function eventsOf(
  matches: Match[],
  input: Omit<BlockEventsInput, 'index' | 'block'> & { block: BlockRef },
  loadTargets: (ids: string[]) => Promise<Map<string, CallbackTargetRow>>,
): Promise<BlockEvents> {
  const { block, chain } = input;
  const result: BlockEvents = { now: [], pending: [] };
  if (matches.length === 0) return result;
  const targets = await loadTargets([...new Set(matches.map((m) => m.subscription.id))]);

  for (const match of matches) {
    const target = targets.get(match.subscription.id);
    if (!target?.isActive) continue;
    const token =
      match.eventType === 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED' ||
      match.eventType === 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION' ||
      match.eventType === 'CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER'
        ? await input.tokenMetadata?.(match.transfer)
        : undefined;
    // A token whose decimals are unknown counts as 0 decimals, as its callback item says (amount in base units).
    if (match.eventType === 'CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER' && !tokenAmountReached(match, token?.decimals ?? 0)) continue;
    const item = callbackItem(match, block, chain, token, target.subscribedAs);
    const confirmations = Math.max(1, confirmationsDue(match, input.defaultConfirmations));
    // Each-confirmation events: one callback per confirmation 1..N, each with its counts and its own
    // key, all decided now and due block by block; a reorganisation that drops the block drops those
    // not yet due (pending) and cancels those not yet sent, and the event starts again at 1 in the
    // block that now holds the transaction.
    const each = EACH_CONFIRMATION_EVENTS.has(match.eventType);
    for (let c = each ? 1 : confirmations; c <= confirmations; c++) {
      const key = each ? matchIdempotencyKey(match, chain, block, c) : matchIdempotencyKey(match, chain, block);
      const body = callbackBody(
        { id: target.id, eventType: match.eventType, apiVersion: target.apiVersion },
        key,
        each ? eachConfirmationItem(item, c, confirmations) : item,
      );
      pushDue(result, match, target, block, key, body, c);
    }
  }
  return result;
}

/** A callback due at the `confirmations`-th confirmation of `block`: now at the first, else pending until then. */
function pushDue(result: BlockEvents, match: Match, target: CallbackTargetRow, block: BlockRef, key: string, body: string, confirmations: number): void {
  if (confirmations <= 1) {
    result.now.push(
      callbackOfEvent({
        customerId: target.customerId,
        subscriptionId: target.id,
        eventType: match.eventType,
        idempotencyKey: key,
        body,
        callbackUrl: target.callbackUrl,
      }),
    );
  } else {
    result.pending.push({
      subscriptionId: target.id,
      customerId: target.customerId,
      blockHeight: block.height,
      blockHash: block.hash,
      dueHeight: block.height + confirmations - 1,
      idempotencyKey: key,
      body,
      callbackUrl: target.callbackUrl,
      eventType: match.eventType,
    });
  }
}
