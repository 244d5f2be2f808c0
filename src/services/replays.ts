/**
 * Replay of a block range (extension, docs/guides/recover-and-replay.md "Backfill and replay"): evaluate blocks again for one
 * subscription and send what matches, with the idempotencyKeys and bodies live following gave them.
 *
 * - Every replay costs costs.replayPerBlock per block of its range, charged when it is asked for (in the
 *   transaction that creates the job; a 402 leaves nothing queued), whether anything matches or not:
 *   reading the blocks is the work.
 * - Not a dry run: a job (store/block-jobs.ts) that the ingest role of the chain works through, in turns
 *   between customers (ingest/block-jobs.ts); it charges costs.replayPerCallback per callback it queues
 *   or sends again, as it queues each batch. A customer's waiting blocks are capped (block-job-queue.ts).
 *   A key already delivered is sent again (same row, body, key and x-callback-sequence, a new retry
 *   series): a replay is asked for because something may be missing on the receiver's side, and a
 *   receiver that has it discards it by its idempotencyKey.
 * - A dry run evaluates the blocks here, synchronously (at most blockJobs.maxDryRunBlocks), with the API
 *   role's own adapter, and answers what would be sent; nothing is queued. A customer has at most
 *   blockJobs.dryRunsPerCustomer of them in progress (429 beyond): each holds the API process's event loop
 *   for moments as its blocks arrive, and a hundred at once stalled every other customer's requests.
 */
import { randomUUID } from 'node:crypto';
import type { NormalizedBlock } from '../chains/types.ts';
import type { BlockJob } from '../domain/block-jobs.ts';
import type { Blockchain, ChainKey, Network } from '../domain/chains.ts';
import { FINALIZED_DUE_HEIGHT } from '../domain/confirmations.ts';
import { ApiError, invalidData, notFound, pullOnlySubscription } from '../domain/errors.ts';
import { isUuid } from '../domain/ids.ts';
import { BlockPrefetcher } from '../ingest/prefetch.ts';
import { COIN_EVENTS, pastBlockEvaluator, transactionIdOf } from '../matching/evaluate.ts';
import { safetyPolicy } from '../matching/safety.ts';
import * as jobs from '../store/block-jobs.ts';
import { getCursor, loadCallbackTargets, loadIndexableByIds, readFinalizedHeight } from '../store/chain-state.ts';
import { creditBalance, debitCredits } from '../store/customers.ts';
import { announceSubscription, getSubscription } from '../store/subscriptions.ts';
import * as ledger from '../wallets/ledger.ts';
import { assertQueueRoom } from './block-job-queue.ts';
import type { Caller, Charged, Common } from './context.ts';

export interface ReplayInput {
  fromBlockHeight: number;
  toBlockHeight: number;
  dryRun?: boolean;
}

export interface DryRunCallback {
  idempotencyKey: string;
  blockHeight: number;
  transactionId: string | null;
  event: string;
  body: unknown;
}

export interface DryRun {
  fromBlockHeight: number;
  toBlockHeight: number;
  callbacks: DryRunCallback[];
}

export type ReplayResult = { dryRun: true; value: DryRun } | { dryRun: false; value: BlockJob };

/** Blocks fetched at once by a dry run. */
const DRY_RUN_CONCURRENCY = 8;

export async function replaySubscription(common: Common, caller: Caller, id: string, input: ReplayInput): Promise<Charged<ReplayResult>> {
  if (!input.dryRun) return await replay(common, caller, id, input);
  // Refused before any other work: a burst of dry runs costs the process nothing past the cap.
  const release = common.dryRuns.tryEnter(caller.owner.customerId);
  if (!release) {
    throw new ApiError(
      'request_limit_reached',
      `This customer has ${common.dryRuns.limit} dry-run replays in progress already, the most it may have at once. Send this one when one of them has been answered.`,
      undefined,
      { 'retry-after': '1' },
    );
  }
  try {
    return await replay(common, caller, id, input);
  } finally {
    release();
  }
}

async function replay(common: Common, caller: Caller, id: string, input: ReplayInput): Promise<Charged<ReplayResult>> {
  if (!isUuid(id)) throw notFound('subscription', id);
  const customerId = caller.owner.customerId;
  const s = await getSubscription(common.db, customerId, id);
  if (!s) throw notFound('subscription', id);
  // A replay sends callbacks again (docs/guides/recover-and-replay.md): a pull-only subscription has none to send.
  if (s.callbackUrl === null) throw pullOnlySubscription(id, 'a replay');
  if (s.eventType === 'BLOCK_REVERTED') {
    throw invalidData([
      {
        attribute: 'referenceId',
        message: 'A BLOCK_REVERTED subscription cannot be replayed: blocks are evaluated as the chain has them now, not as they were dropped.',
      },
    ]);
  }
  const chain: ChainKey = { blockchain: s.blockchain, network: s.network };
  const limits = common.config.blockJobs;
  const cap = input.dryRun ? limits.maxDryRunBlocks : limits.maxReplayBlocks;
  const details = [];
  if (input.toBlockHeight < input.fromBlockHeight) details.push({ attribute: 'toBlockHeight', message: 'toBlockHeight must be at least fromBlockHeight.' });
  else if (input.toBlockHeight - input.fromBlockHeight + 1 > cap) {
    details.push({
      attribute: 'toBlockHeight',
      message: `A ${input.dryRun ? 'dry-run ' : ''}replay covers at most ${cap} blocks; this range has ${input.toBlockHeight - input.fromBlockHeight + 1}. Split it.`,
    });
  }
  const cursor = await getCursor(common.db, chain);
  if (!cursor) details.push({ attribute: 'toBlockHeight', message: `herald has not followed ${s.blockchain} ${s.network} yet: there is nothing to replay.` });
  else if (input.toBlockHeight > cursor.height) {
    details.push({
      attribute: 'toBlockHeight',
      message: `herald has processed ${s.blockchain} ${s.network} up to block ${cursor.height}; give a toBlockHeight at most that (later blocks are sent by live following).`,
    });
  }
  if (details.length > 0) throw invalidData(details);
  if (!s.isActive) {
    throw invalidData([
      { attribute: 'referenceId', message: `Subscription '${id}' is not active, so replayed callbacks would not be sent. Activate it first.` },
    ]);
  }
  // A replay queued during a backfill would number its callbacks before the backfilled ones (a dry run queues nothing).
  if (!input.dryRun && (await jobs.hasRunningJob(common.db, id, 'backfill'))) {
    throw invalidData([
      { attribute: 'referenceId', message: 'The subscription is still being backfilled; replay once its backfill is done (see its backfill.state).' },
    ]);
  }

  const blocks = input.toBlockHeight - input.fromBlockHeight + 1;
  const blockCost = BigInt(common.config.costs.replayPerBlock) * BigInt(blocks);
  const processed = (cursor as { height: number }).height;
  if (input.dryRun) {
    // Charged before the blocks are read, given back if the node cannot be read.
    const charge = await common.credits.charge(customerId, blockCost, caller.endpoint);
    try {
      return { value: { dryRun: true, value: await dryRun(common, chain, id, input, processed) }, ...charge };
    } catch (error) {
      await common.credits
        .refund(customerId, charge, caller.endpoint)
        .catch((refundError) =>
          common.logger.error({ err: refundError, customerId, credits: String(charge.consumed) }, 'could not give back the credits of a failed dry run'),
        );
      throw error;
    }
  }

  const per = BigInt(common.config.costs.replayPerCallback);
  const job = await common.db.transaction('replays:start', async (tx) => {
    // Counted under the customer's row lock (the cap holds across concurrent requests), then charged.
    await assertQueueRoom(tx, common, customerId, chain, blocks);
    const available = await creditBalance(tx, customerId);
    if (available < blockCost + per) {
      throw new ApiError(
        'insufficient_credits',
        `A replay of ${blocks} blocks costs ${blockCost} credits for the blocks read (${common.config.costs.replayPerBlock} each), plus ${per} per callback it queues, and the customer has ${available}. ` +
          'Ask the operator to add credits (herald credits add), or replay a shorter range.',
      );
    }
    // The customer's row is locked since assertQueueRoom: the balance just read is the one debited.
    if (blockCost > 0n && !(await debitCredits(tx, customerId, blockCost, [{ endpoint: caller.endpoint, requests: 1, credits: blockCost }])).ok) {
      throw new Error('the credits changed under the customer row lock');
    }
    const created = await jobs.createBlockJob(tx, {
      id: randomUUID(),
      kind: 'replay',
      customerId,
      subscriptionId: id,
      chain,
      fromHeight: input.fromBlockHeight,
      toHeight: input.toBlockHeight,
      creditsConsumed: blockCost,
    });
    // Wakes the chain's ingest process (it listens for subscription changes).
    await announceSubscription(tx, { id, ...chain });
    return created;
  });
  return { value: { dryRun: false, value: job }, consumed: blockCost, available: await creditBalance(common.db, customerId) };
}

/** What a replay of the range would send, evaluated here with the API role's adapter (callbacks due at or below the processed height). */
async function dryRun(common: Common, chain: ChainKey, id: string, input: ReplayInput, processed: number): Promise<DryRun> {
  const reader = common.chainReader?.(chain.blockchain, chain.network);
  if (!reader?.getBlock) {
    throw new ApiError(
      'service_unavailable',
      `herald has no node for ${chain.blockchain} ${chain.network} on this API process, so it cannot evaluate blocks for a dry run; retry on a process that has, or run the replay without dryRun.`,
    );
  }
  const [subscription] = await loadIndexableByIds(common.db, [id]);
  const target = (await loadCallbackTargets(common.db, [id])).get(id);
  if (!subscription || !target) throw notFound('subscription', id);
  const evaluator = pastBlockEvaluator({
    subscription,
    target,
    chain,
    defaultConfirmations: confirmationsOf(common, chain.blockchain, chain.network),
    safety: safetyPolicy(
      chain,
      common.config.chains.find((c) => c.blockchain === chain.blockchain && c.network === chain.network),
    ),
    tokenMetadata: reader.tokenMetadata?.bind(reader),
    ...(COIN_EVENTS.has(subscription.eventType) && { resolveSpends: (block: NormalizedBlock) => ledger.resolveSpends(common.db, chain, block) }),
  });
  const finalized = await readFinalizedHeight(common.db, chain);
  const prefetch = new BlockPrefetcher({ getBlock: (h) => (reader.getBlock as (h: number) => Promise<NormalizedBlock>)(h) }, DRY_RUN_CONCURRENCY);
  const callbacks: DryRunCallback[] = [];
  try {
    for (let h = input.fromBlockHeight; h <= input.toBlockHeight; h++) {
      const block = await prefetch.get(h, input.toBlockHeight);
      for (const c of await evaluator.evaluate(block)) {
        // Not due yet: live following sends it (an event waiting for finality: until its block is final).
        if (c.dueHeight === FINALIZED_DUE_HEIGHT ? c.blockHeight > finalized : c.dueHeight > processed) continue;
        callbacks.push({
          idempotencyKey: c.idempotencyKey,
          blockHeight: c.blockHeight,
          transactionId: transactionIdOf(c.body),
          event: c.eventType,
          body: JSON.parse(c.body),
        });
      }
    }
  } catch (error) {
    if (error instanceof ApiError) throw error;
    common.logger.warn({ err: error, ...chain }, 'dry-run replay: the node did not answer');
    throw new ApiError('service_unavailable', `The ${chain.blockchain} ${chain.network} node could not be read just now; retry in a moment.`, undefined, {
      'retry-after': '5',
    });
  } finally {
    prefetch.clear();
  }
  return { fromBlockHeight: input.fromBlockHeight, toBlockHeight: input.toBlockHeight, callbacks };
}

function confirmationsOf(common: Common, blockchain: Blockchain, network: Network): number {
  const chain = common.config.chains.find((c) => c.blockchain === blockchain && c.network === network);
  return chain?.confirmations ?? common.config.defaultConfirmations;
}

export async function getReplay(common: Common, caller: Caller, id: string): Promise<Charged<BlockJob>> {
  const found = isUuid(id) ? await jobs.getBlockJob(common.db, caller.owner.customerId, 'replay', id) : undefined;
  if (!found) throw notFound('replay', id);
  return { value: found, ...(await common.credits.charge(caller.owner.customerId, BigInt(common.config.costs.getSubscription), caller.endpoint)) };
}
