/**
 * When a confirmed callback is due (docs/concepts/confirmations-and-reorganisations.md): at a fixed confirmation
 * (receiveCallbackOn), at the confirmation of the tier its amount falls in (confirmationTiers), or once
 * its block is final by the chain's own signal (finality: "finalized"). A subscription carries at most one
 * policy besides receiveCallbackOn; a customer's default policy per chain fills in when a create gives none.
 * No I/O.
 *
 * Glossary:
 * - tier: { upTo, confirmations }: amounts up to and including `upTo` (a decimal string in the unit of the
 *   callback: whole coins, whole tokens) wait for `confirmations`; the last tier has no upTo (any amount).
 * - finalized height: the highest block the chain's finality signal covers (EVM `finalized` tag, Tron's
 *   solidified block, Dash ChainLocks, XRP validated ledgers); an event at or below it is final.
 */
import type { Blockchain, EventType } from './chains.ts';
import type { ErrorDetail } from './errors.ts';

export interface ConfirmationTier {
  /** Decimal string in the unit of the callback, inclusive; null on the last tier (every larger amount). */
  upTo: string | null;
  confirmations: number;
}

export type ConfirmationPolicy = { tiers: ConfirmationTier[] } | { finality: 'finalized' };

/** The chains with a finality signal herald reads (docs/concepts/confirmations-and-reorganisations.md#finality). */
export const FINALITY_CHAINS: readonly Blockchain[] = ['ethereum', 'binance-smart-chain', 'tron', 'xrp', 'dash'];

/**
 * The due height a pending event waiting for finality is stored with: above any height, so the take by
 * due height never takes it; the follower takes it once its block is at or below the finalized height.
 */
export const FINALIZED_DUE_HEIGHT = Number.MAX_SAFE_INTEGER;

/**
 * The event types whose subscriptions take receiveCallbackOn (filled with the chain default when omitted),
 * or instead confirmationTiers or finality.
 */
export const TAKES_CONFIRMATIONS: ReadonlySet<EventType> = new Set([
  'ADDRESS_TOKENS_TRANSACTION_CONFIRMED',
  'ADDRESS_INTERNAL_TRANSACTION_CONFIRMED',
  'ADDRESS_COINS_TRANSACTION_CONFIRMED',
  'XPUB_COINS_TRANSACTION_CONFIRMED',
]);

/** Confirmations a tier may ask: the range receiveCallbackOn takes. */
export const MIN_CONFIRMATIONS = 1;
export const MAX_CONFIRMATIONS = 100;
/** More tiers than any deposit policy needs; bounds what a subscription carries. */
export const MAX_TIERS = 10;

const DECIMAL = /^(0|[1-9][0-9]{0,29})(\.[0-9]{1,36})?$/;

export function isFinality(policy: ConfirmationPolicy | null | undefined): policy is { finality: 'finalized' } {
  return policy != null && 'finality' in policy;
}

/** Whether `blockchain` has a finality signal herald reads. */
export function supportsFinality(blockchain: Blockchain): boolean {
  return FINALITY_CHAINS.includes(blockchain);
}

/** The refusal of finality on a chain without a signal, naming the chain. */
export function finalityRefusal(blockchain: Blockchain): string {
  return `finality "finalized" is not available on ${blockchain}: it has no finality signal herald reads (only ${FINALITY_CHAINS.join(', ')} do). Give receiveCallbackOn or confirmationTiers instead.`;
}

/**
 * The problems of a tier list as given (empty when valid): at least one tier, at most MAX_TIERS;
 * each upTo a non-negative decimal string, strictly ascending; the last tier without upTo and only the
 * last; confirmations integers in MIN_CONFIRMATIONS..MAX_CONFIRMATIONS.
 */
export function tierProblems(tiers: readonly { upTo?: string | null; confirmations: number }[], attribute = 'confirmationTiers'): ErrorDetail[] {
  const problems: ErrorDetail[] = [];
  if (tiers.length === 0 || tiers.length > MAX_TIERS) {
    problems.push({ attribute, message: `Give 1 to ${MAX_TIERS} tiers, the last one without upTo (it covers every larger amount).` });
    return problems;
  }
  let previous: string | undefined;
  tiers.forEach((tier, i) => {
    const at = `${attribute}[${i}]`;
    const last = i === tiers.length - 1;
    if (!(Number.isInteger(tier.confirmations) && tier.confirmations >= MIN_CONFIRMATIONS && tier.confirmations <= MAX_CONFIRMATIONS))
      problems.push({ attribute: `${at}.confirmations`, message: `confirmations must be an integer from ${MIN_CONFIRMATIONS} to ${MAX_CONFIRMATIONS}.` });
    const upTo = tier.upTo ?? null;
    if (last) {
      if (upTo !== null)
        problems.push({
          attribute: `${at}.upTo`,
          message: 'The last tier takes no upTo: it covers every amount above the tier before it. Add a tier without upTo.',
        });
      return;
    }
    if (upTo === null) {
      problems.push({ attribute: `${at}.upTo`, message: 'Only the last tier may leave out upTo; give this tier the largest amount it covers.' });
      return;
    }
    if (!DECIMAL.test(upTo)) {
      problems.push({ attribute: `${at}.upTo`, message: `'${upTo.slice(0, 40)}' is not a decimal amount such as "1" or "0.5" (in the unit of the callback).` });
      return;
    }
    if (previous !== undefined && compareDecimals(upTo, previous) <= 0)
      problems.push({ attribute: `${at}.upTo`, message: `upTo ${upTo} must be above the tier before it (${previous}): tiers go in ascending order.` });
    previous = upTo;
  });
  return problems;
}

/** The tiers as stored: upTo normalised (no trailing fraction zeros), the last one null. */
export function normalizedTiers(tiers: readonly { upTo?: string | null; confirmations: number }[]): ConfirmationTier[] {
  return tiers.map((t, i) => ({ upTo: i === tiers.length - 1 ? null : normalizeDecimal(t.upTo as string), confirmations: t.confirmations }));
}

/**
 * The confirmations of the tier `amount` falls in: `amount` in base units of `decimals` decimal places (the
 * unit of the callback), compared exactly with each upTo (inclusive).
 */
export function tierConfirmations(tiers: readonly ConfirmationTier[], amount: bigint, decimals: number): number {
  for (const tier of tiers) {
    if (tier.upTo === null || compareBaseUnits(amount, decimals, tier.upTo) <= 0) return tier.confirmations;
  }
  return (tiers.at(-1) as ConfirmationTier).confirmations;
}

/** The most confirmations any tier asks (how long the follower may have to keep a block). */
export function maxTierConfirmations(tiers: readonly ConfirmationTier[]): number {
  return Math.max(...tiers.map((t) => t.confirmations));
}

/** -1, 0 or 1 as `amount` (base units of `decimals` places) is below, equal to or above the decimal `text`. */
export function compareBaseUnits(amount: bigint, decimals: number, text: string): number {
  const [whole = '0', fraction = ''] = text.split('.');
  const places = Math.max(decimals, fraction.length);
  const left = amount * 10n ** BigInt(places - decimals);
  const right = BigInt(whole + fraction.padEnd(places, '0'));
  return left < right ? -1 : left > right ? 1 : 0;
}

function compareDecimals(a: string, b: string): number {
  const places = Math.max(a.split('.')[1]?.length ?? 0, b.split('.')[1]?.length ?? 0);
  const [bw = '0', bf = ''] = b.split('.');
  return compareBaseUnits(BigInt(bw + bf.padEnd(places, '0')), places, a) * -1;
}

function normalizeDecimal(text: string): string {
  if (!text.includes('.')) return text;
  return text.replace(/0+$/, '').replace(/\.$/, '');
}

/** The policy as its JSON text for the duplicate key and the stored column (stable field order). */
export function policyText(policy: ConfirmationPolicy): string {
  return isFinality(policy)
    ? JSON.stringify({ finality: policy.finality })
    : JSON.stringify({ tiers: policy.tiers.map((t) => ({ upTo: t.upTo, confirmations: t.confirmations })) });
}
