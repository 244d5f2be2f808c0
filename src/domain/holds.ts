/**
 * The deep-reorganisation breaker's words (docs/concepts/confirmations-and-reorganisations.md#the-deep-reorganisation-breaker),
 * shared by the status, the operator's views and the alert. No I/O.
 */

export interface HoldFacts {
  /** 'reorganisation': the chain was rewound deeper than the breaker; 'disagreement': a node claimed it and no second one confirmed. */
  reason: 'reorganisation' | 'disagreement';
  depth: number;
  breakerDepth: number;
}

/** Why a chain is held, in one sentence that says what to do. */
export function holdReason(hold: HoldFacts): string {
  const why = hold.reason === 'disagreement' ? `its nodes disagree ${hold.depth} blocks deep` : `a reorganisation of ${hold.depth} blocks`;
  return `${why} (more than reorgBreakerDepth ${hold.breakerDepth}): confirmed callbacks are held until an operator releases the chain (herald chains release)`;
}
