/**
 * What the operator console's chains and delivery pages show: chain states with their nodes and
 * reorganisations, a chain's lag history, the delivery queue, attempts per minute and the slowest
 * destinations. Read from the database, so any API process answers for every ingest and delivery process.
 */

import type { ChainKey } from '../domain/chains.ts';
import { listHolds } from '../store/chain-holds.ts';
import { deliveryHistory, lagHistory, reorganisationCounts, slowestDestinations } from '../store/history.ts';
import { queueStats } from '../store/queue-stats.ts';
import type { Common } from './context.ts';
import { wholeMinute } from './history-sampler.ts';
import { chainStatusItems } from './status.ts';

const MINUTE_MS = 60_000;
const DAY_MS = 24 * 60 * MINUTE_MS;

export async function chains(common: Common, now: Date) {
  const [items, reorganisations, holds] = await Promise.all([
    chainStatusItems(common, now),
    reorganisationCounts(common.db, new Date(now.getTime() - DAY_MS)),
    listHolds(common.db),
  ]);
  const heldCallbacks = new Map(holds.map((h) => [`${h.blockchain}/${h.network}`, h.heldCallbacks]));
  return items.map((c) => {
    const key = `${c.blockchain}/${c.network}`;
    return { ...c, reorganisations: reorganisations.get(key) ?? 0, hold: c.hold && { ...c.hold, heldCallbacks: heldCallbacks.get(key) ?? 0 } };
  });
}

/** The lag samples of the last `minutes` minutes (the current one included), oldest first. */
export async function lag(common: Common, chain: ChainKey, minutes: number, now: Date) {
  return await lagHistory(common.db, chain, new Date(wholeMinute(now).getTime() - (minutes - 1) * MINUTE_MS));
}

/** The queue now, attempts per minute over the last `minutes` (every minute, the current one included), and the slowest destinations of the last hour. */
export async function delivery(common: Common, minutes: number, now: Date) {
  const to = wholeMinute(now);
  const [queue, perMinute, slowest] = await Promise.all([
    queueStats(common.db, now, { onRecountError: (error) => common.logger.warn({ err: error }, "the queue gauges' recount failed") }),
    deliveryHistory(common.db, new Date(to.getTime() - (minutes - 1) * MINUTE_MS), to),
    slowestDestinations(common.db, new Date(now.getTime() - 60 * MINUTE_MS), 10),
  ]);
  return { due: queue.due, oldestDueAgeSeconds: Math.round(queue.oldestDueSeconds), perMinute, slowest };
}
