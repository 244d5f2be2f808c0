/**
 * The delivery worker's decisions about claiming (worker.ts), pure so that they are tested with plain
 * numbers: how many callbacks the next claim may take, whether to claim again without sleeping, and
 * whether a finished callback is worth another pass (docs/concepts/delivery.md).
 */

export interface ClaimLimits {
  /** The most one claim takes. */
  batchSize: number;
  /** The most callbacks on their way at once. */
  maxInFlight: number;
}

/**
 * How many callbacks the next claim may take with `inFlight` on their way. `roomLimited`: less than half
 * a claim's worth of room, so the worker does not claim (a claim costs the same for 3 callbacks as for
 * 300) and waits for callbacks to finish instead.
 */
export function claimRoom(limits: ClaimLimits, inFlight: number): { room: number; roomLimited: boolean } {
  const room = Math.min(limits.batchSize, limits.maxInFlight - inFlight);
  return { room, roomLimited: room < Math.min(limits.batchSize, limits.maxInFlight) / 2 };
}

/**
 * More may be due right now, so the worker claims again without sleeping: the claim was full, or a
 * destination took its whole share and can take more now. One that took its share and is saturated now
 * (its queue allowance filled) waits for its requests to end: a claim at once would skip it and find
 * nothing, a statement for nothing after every claim of a busy destination. The same holds for a full
 * claim when `openDestinations` (how many destinations it could take callbacks of) says it reached every
 * one of them and each is saturated now.
 */
export function claimAgainAtOnce(
  room: number,
  claimed: readonly { shareFilled?: boolean; destination?: string }[],
  saturatedNow: () => readonly string[] = () => [],
  openDestinations?: number,
): boolean {
  if (room <= 0) return false;
  if (claimed.length === room) {
    if (openDestinations === undefined) return true;
    const reached = new Set(claimed.map((c) => c.destination));
    if (reached.size < openDestinations) return true;
    return !allSaturated(reached, saturatedNow);
  }
  const filled = new Set(claimed.filter((c) => c.shareFilled).map((c) => c.destination));
  if (filled.size === 0) return false;
  return !allSaturated(filled, saturatedNow);
}

function allSaturated(destinations: ReadonlySet<string | undefined>, saturatedNow: () => readonly string[]): boolean {
  const saturated = new Set(saturatedNow());
  for (const destination of destinations) if (destination === undefined || !saturated.has(destination)) return false;
  return true;
}

/**
 * A callback to `destination` finished: another pass is worth it only when the worker was short of room,
 * or when the last claim skipped that destination (saturated then) and it is not saturated now. Another
 * pass after every callback would claim, or decide not to, thousands of times a second for nothing.
 */
export function worthAnotherPass(
  lastClaim: { roomLimited: boolean; skipped: ReadonlySet<string> },
  destination: string,
  saturatedNow: () => readonly string[],
): boolean {
  return lastClaim.roomLimited || (lastClaim.skipped.has(destination) && !saturatedNow().includes(destination));
}
