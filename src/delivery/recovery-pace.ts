/**
 * How fast a bulk recovery goes while live delivery keeps the worker saturated: a share of the live rate,
 * adapted to what the recovery actually costs live delivery.
 *
 * A fixed share has to assume the worst (a recovered callback costs a live one), and at 5 % a recovery of
 * 100,000 callbacks took 14 minutes beside 2,500 live callbacks/s. What it really costs depends on where the
 * worker's limit is (its CPU, the live receiver's connections, the database), so it is measured instead:
 * - the reference: the live rate with no recovered callback being sent, measured in a short pause of the
 *   recovery (a probe) at its start and again every PROBE_EVERY_MS of recovering, so that the machine's
 *   changing load moves the reference, not the share;
 * - after each chunk, the live rate while that chunk was sent, against the reference: held within
 *   GROW_WITHIN (2 %) for two chunks in a row, the share grows by a quarter (up to MAX_SHARE); fallen by
 *   more than SHRINK_BEYOND (4 %) once, it halves (down to MIN_SHARE, 3 %); in between, it stays. The target's
 *   budget is 10 %, but what the chunks cost beside a probe a moment before is not all a long recovery
 *   costs: on a quiet machine, 3 rounds of 100,000 held at 3-6 % by these comparisons (the thresholds
 *   before) lost 9.3-13.3 % of the live rate against baselines before and after (`npm run bench --
 *   recovery`), so the thresholds keep what the comparisons see to half of that. Growing slowly on two
 *   signs but shrinking fast on one makes noise (a busy machine's live rate moves by tens of per cent
 *   from second to second) push the share down, not up.
 * So a recovery that costs the live stream nothing measurable speeds up chunk after chunk, one that does
 * stays at the floor (3 %), and one whose grown share made live delivery drop comes back
 * down within a few chunks.
 */

/** The share of the live rate a paced recovery starts at (and the fixed share before adaptation). */
export const START_SHARE = 0.05;
/**
 * The floor. At 5 % (the fixed share before adaptation) a quiet machine's round of 100,000 still lost 13.3 %
 * of its live rate (178 recovered/s beside 3,800 live/s: recovered callbacks cost live delivery more than their
 * share of the live rate); at 2 % a busy machine's noisy live rate pushed the
 * share down to a crawl (20/s at load 15–20). 3 % is 100,000 in about 13 minutes beside 4,000 live/s.
 */
export const MIN_SHARE = 0.03;
export const MAX_SHARE = 1;
/** The live rate within this much of the reference: the recovery costs nothing measurable, go faster. */
export const GROW_WITHIN = 0.02;
/** The live rate below the reference by more than this: the recovery costs live delivery, slow down. */
export const SHRINK_BEYOND = 0.04;
const GROW = 1.25;
const SHRINK = 0.5;
/** Chunks in a row that must hold the live rate before the share grows. */
const HELD_TO_GROW = 2;
/** A probe: this long with no recovered callback due, the live rate measured alone. */
export const PROBE_MS = 2_000;
/** Recovering this long since the last probe: probe again. */
export const PROBE_EVERY_MS = 30_000;

export class RecoveryPace {
  /** The share of the live rate the next chunk gets. */
  share: number;
  /** Live callbacks/s with no recovered callback being sent (the last probe's), if measured yet. */
  reference: number | undefined;
  private recoveringMs = 0;
  private held = 0;

  constructor(startShare = START_SHARE) {
    this.share = startShare;
  }

  /** Whether to pause and measure the live rate alone before the next chunk. */
  needsProbe(): boolean {
    return this.reference === undefined || this.recoveringMs >= PROBE_EVERY_MS;
  }

  /** A probe's result: the live rate with no recovered callback due. */
  probed(livePerSecond: number): void {
    this.reference = livePerSecond;
    this.recoveringMs = 0;
  }

  /** The live rate over `ms` while a chunk of recovered callbacks was being sent: adapt the share. */
  observed(livePerSecond: number, ms: number): void {
    this.recoveringMs += ms;
    if (this.reference === undefined || this.reference <= 0) return;
    const ratio = livePerSecond / this.reference;
    this.held = ratio >= 1 - GROW_WITHIN ? this.held + 1 : 0;
    if (this.held >= HELD_TO_GROW) {
      this.share = Math.min(MAX_SHARE, this.share * GROW);
      this.held = 0;
    } else if (ratio < 1 - SHRINK_BEYOND) this.share = Math.max(MIN_SHARE, this.share * SHRINK);
  }
}
