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
import { CHAINS, type ChainKey, EACH_CONFIRMATION_EVENTS } from '../domain/chains.ts';
import { FINALIZED_DUE_HEIGHT, tierConfirmations } from '../domain/confirmations.ts';
import type { CallbackTargetRow, PendingEvent } from '../domain/events.ts';
import { callbackOfEvent, type NewCallback } from '../domain/events.ts';
import { callbackItem, eachConfirmationItem, matchIdempotencyKey } from './identity.ts';
import type { SubscriptionIndex } from './index.ts';
import { confirmationsDue, type Match, matchBlock, matchRevertedBlock, tokenAmountReached } from './match.ts';
import { type Safety, type SafetyPolicy, safetyPolicy, safetyVerdictOf } from './safety.ts';
import { smallestReceived } from './xpub.ts';

export type TokenMetadataLookup = (transfer: TokenTransfer) => Promise<TokenMetadata | undefined>;

export interface BlockEventsInput {
  index: SubscriptionIndex;
  block: NormalizedBlock;
  chain: ChainKey;
  defaultConfirmations: number;
  tokenMetadata?: TokenMetadataLookup;
  /** The chain's safety thresholds and list (src/matching/safety.ts); default: the shipped defaults. */
  safety?: SafetyPolicy;
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
  input: Omit<BlockEventsInput, 'index' | 'block'> & { block: BlockRef & Partial<Pick<NormalizedBlock, 'failedTransactionIds' | 'partialPaymentIds'>> },
  loadTargets: (ids: string[]) => Promise<Map<string, CallbackTargetRow>>,
): Promise<BlockEvents> {
  const { block, chain } = input;
  const result: BlockEvents = { now: [], pending: [] };
  if (matches.length === 0) return result;
  const targets = await loadTargets([...new Set(matches.map((m) => m.subscription.id))]);
  const policy = input.safety ?? safetyPolicy(chain);
  const failed = new Set(block.failedTransactionIds);
  const partial = new Set(block.partialPaymentIds);

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
    const safety = matchSafety(match, token, failed, partial, policy);
    if (safety !== undefined) item.safety = safety;
    const each = EACH_CONFIRMATION_EVENTS.has(match.eventType);
    const asked = each ? null : match.subscription.confirmationPolicy;
    // docs/concepts/confirmations-and-reorganisations.md: a tier by the callback's amount, or the block's finality (XRP follows
    // validated ledgers only: final at once).
    const finalized = asked != null && 'finality' in asked && chain.blockchain !== 'xrp';
    const confirmations =
      asked && 'tiers' in asked ? tierOf(match, asked.tiers, token, chain) : asked ? 1 : Math.max(1, confirmationsDue(match, input.defaultConfirmations));
    // Each-confirmation events: one callback per confirmation 1..N, each with its counts and its own
    // key, all decided now and due block by block; a reorganisation that drops the block drops those
    // not yet due (pending) and cancels those not yet sent, and the event starts again at 1 in the
    // block that now holds the transaction.
    for (let c = each ? 1 : confirmations; c <= confirmations; c++) {
      const key = each ? matchIdempotencyKey(match, chain, block, c) : matchIdempotencyKey(match, chain, block);
      const body = callbackBody(
        { id: target.id, eventType: match.eventType, apiVersion: target.apiVersion },
        key,
        each ? eachConfirmationItem(item, c, confirmations) : item,
      );
      pushDue(result, match, target, block, key, body, finalized ? FINALIZED_DUE_HEIGHT : block.height + c - 1);
    }
  }
  return result;
}

/**
 * The safety verdict of a match (docs/concepts/deposit-safety.md), what safetyVerdict gives for its facts, with no object of its own
 * when no flag applies: the block pipeline calls it once per match (its cost is a benchmark target,
 * docs/benchmarks.md, "the safety verdict's cost"). Undefined for the events that carry none.
 */
export function matchSafety(
  match: Match,
  token: TokenMetadata | undefined,
  failed: ReadonlySet<string>,
  partial: ReadonlySet<string>,
  policy: SafetyPolicy,
): Safety | undefined {
  switch (match.eventType) {
    case 'ADDRESS_COINS_TRANSACTION_CONFIRMED':
    case 'ADDRESS_COINS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION': {
      const id = match.transactionId;
      return safetyVerdictOf(policy, match.direction === 'incoming' ? match.address : undefined, match.amount, false, listed(partial, id), listed(failed, id));
    }
    case 'CONFIRMED_COINS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER':
      return safetyVerdictOf(policy, undefined, 0n, false, listed(partial, match.transactionId), listed(failed, match.transactionId));
    case 'XPUB_COINS_TRANSACTION_CONFIRMED': {
      const id = match.transactionId;
      const received = smallestReceived(match);
      return safetyVerdictOf(policy, received?.address, received?.amount ?? 0n, false, listed(partial, id), listed(failed, id));
    }
    case 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED':
    case 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION':
    case 'CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER': {
      const id = match.transfer.transactionId;
      return safetyVerdictOf(policy, undefined, 0n, false, listed(partial, id), listed(failed, id), match.transfer, token);
    }
    case 'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED':
    case 'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED_EACH_CONFIRMATION':
      return safetyVerdictOf(policy, match.direction === 'incoming' ? match.address : undefined, match.transfer.amount, false, false, false);
    case 'CONFIRMED_INTERNAL_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER':
      return safetyVerdictOf(policy, match.transfer.to, match.transfer.amount, false, false, false);
    default:
      return undefined;
  }
}

/** Whether `id` is in `set`; an empty set is not asked (a lookup hashes the id first): no chain but XRP has partial payments. */
function listed(set: ReadonlySet<string>, id: string): boolean {
  return set.size > 0 && set.has(id);
}

/**
 * The confirmations of the tier the match's amount falls in, the amount in the unit of its callback: the
 * chain's coin, or the token by its decimals (0 when unknown, as the item says; an NFT counts as 1).
 */
function tierOf(match: Match, tiers: Parameters<typeof tierConfirmations>[0], token: TokenMetadata | undefined, chain: ChainKey): number {
  const coin = CHAINS[chain.blockchain].decimals;
  switch (match.eventType) {
    case 'ADDRESS_COINS_TRANSACTION_CONFIRMED':
      return tierConfirmations(tiers, match.amount, coin);
    case 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED':
      return match.transfer.amount === undefined ? tierConfirmations(tiers, 1n, 0) : tierConfirmations(tiers, match.transfer.amount, token?.decimals ?? 0);
    case 'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED':
      return tierConfirmations(tiers, match.transfer.amount, coin);
    case 'XPUB_COINS_TRANSACTION_CONFIRMED':
      return tierConfirmations(tiers, match.amount, coin);
    default:
      return tierConfirmations(tiers, 0n, 0);
  }
}

/** A callback due at block `dueHeight`: now when that is `block` itself, else pending until then (FINALIZED_DUE_HEIGHT: until the block is final). */
function pushDue(result: BlockEvents, match: Match, target: CallbackTargetRow, block: BlockRef, key: string, body: string, dueHeight: number): void {
  if (dueHeight <= block.height) {
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
      dueHeight,
      idempotencyKey: key,
      body,
      callbackUrl: target.callbackUrl,
      eventType: match.eventType,
    });
  }
}
