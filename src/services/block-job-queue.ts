/**
 * The cap on the blocks one customer may have waiting in the backfill and replay jobs of a chain
 * (config blockJobs.maxQueuedBlocksPerCustomer, docs/guides/recover-and-replay.md "Backfill and replay"). Jobs take turns between
 * customers, so a long queue does not hold up others; the cap bounds what one customer can pile up.
 */
import type { Blockchain, Network } from '../domain/chains.ts';
import { ApiError } from '../domain/errors.ts';
import { lockQueuedBlocks } from '../store/block-jobs.ts';
import type { Queryable } from '../store/db.ts';
import type { Common } from './context.ts';

/** Refuses (429) a job of `blocks` blocks that would take the customer past the cap; call it in the transaction that creates the job. */
export async function assertQueueRoom(
  tx: Queryable,
  common: Pick<Common, 'config'>,
  customerId: string,
  chain: { blockchain: Blockchain; network: Network },
  blocks: number,
): Promise<void> {
  const cap = common.config.blockJobs.maxQueuedBlocksPerCustomer;
  const queued = await lockQueuedBlocks(tx, customerId, chain);
  if (queued + blocks <= cap) return;
  throw new ApiError(
    'request_limit_reached',
    `The customer has ${queued} blocks waiting in backfills and replays of ${chain.blockchain} ${chain.network}, and this one's ${blocks} would pass the cap of ${cap}. ` +
      'Send it again when those have progressed (GET /blockchain-events/replays/{replayId}), or ask for a shorter range.',
    undefined,
    { 'retry-after': '30' },
  );
}
