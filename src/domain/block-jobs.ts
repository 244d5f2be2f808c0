/**
 * Block jobs: a backfill (a subscription created with fromBlockHeight) or a replay walks a range of
 * past blocks for one subscription, in batches, beside the live follower (src/ingest/block-jobs.ts).
 * No I/O.
 */
import type { Blockchain, Network } from './chains.ts';

export type BlockJobKind = 'backfill' | 'replay';
export type BlockJobState = 'running' | 'done' | 'out_of_credits';

export interface BlockJob {
  id: string;
  kind: BlockJobKind;
  customerId: string;
  subscriptionId: string;
  blockchain: Blockchain;
  network: Network;
  fromHeight: number;
  toHeight: number;
  processedHeight: number;
  state: BlockJobState;
  queued: number;
  creditsConsumed: bigint;
  createdAt: Date;
  finishedAt: Date | null;
}

/** What a subscription item shows of its backfill until it is done. */
export interface BackfillProgress {
  fromBlockHeight: number;
  toBlockHeight: number;
  processedHeight: number;
  state: BlockJobState;
}
