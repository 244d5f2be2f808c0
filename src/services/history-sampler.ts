/**
 * The chain lag history of the operator's charts: once a minute the API role reads every chain's
 * cursor (what GET /blockchain-events/status reads) and records its lag for that minute, then prunes
 * the history tables to HISTORY_DAYS. Any number of API processes may run it: the first sample of a
 * minute is kept (ON CONFLICT DO NOTHING), and pruning twice deletes nothing more.
 */
import type { Logger } from 'pino';
import { chainLag } from '../domain/chain-lag.ts';
import { listChainStatus } from '../store/chain-state.ts';
import { type Db, retryLogLevel } from '../store/db.ts';
import { HISTORY_DAYS, pruneHistory, recordLagSamples } from '../store/history.ts';

const MINUTE_MS = 60_000;

export function wholeMinute(at: Date): Date {
  return new Date(Math.floor(at.getTime() / MINUTE_MS) * MINUTE_MS);
}

/** One sample of every chain for the minute of `now`, and the history older than HISTORY_DAYS deleted. */
export async function sampleHistory(db: Db, now: Date): Promise<void> {
  const rows = await listChainStatus(db);
  const samples = rows.map((r) => ({ blockchain: r.blockchain, network: r.network, ...chainLag(r, now) }));
  await recordLagSamples(db, wholeMinute(now), samples);
  await pruneHistory(db, new Date(now.getTime() - HISTORY_DAYS * 24 * 60 * MINUTE_MS));
}

export interface HistorySampler {
  stop(): Promise<void>;
}

/** Samples at start and then at the start of every minute, until stopped. */
export function startHistorySampler(deps: { db: Db; logger: Logger; now?: () => Date }): HistorySampler {
  const now = deps.now ?? (() => new Date());
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  const pass = async () => {
    try {
      await sampleHistory(deps.db, now());
    } catch (error) {
      // A missed minute is a gap in a chart, nothing more; the next one tries again.
      deps.logger[retryLogLevel(error)]({ err: error }, 'history: chain lag sample failed');
    }
    if (!stopped) timer = setTimeout(schedule, MINUTE_MS - (now().getTime() % MINUTE_MS) + 1000);
  };
  const schedule = () => {
    running = pass();
  };
  timer = setTimeout(schedule, 0);
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
