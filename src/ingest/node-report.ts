/**
 * The ingest role's link from a node pool's health rounds (src/chains/pool.ts) to chain_nodes: the latest
 * view of a chain's nodes is written, one write at a time per chain, and a view that arrives while one is
 * being written replaces any other waiting (only the newest matters). A change of eligibility is written
 * at once; otherwise (heads, latencies) at most once a second, since rounds may come every 50 ms. A failed
 * write is logged and the next round writes again: the view is a report, never a reason to stop following.
 */
import type { Logger } from 'pino';
import type { NodeView } from '../chains/pool.ts';
import type { ChainKey } from '../domain/chains.ts';
import { saveChainNodes } from '../store/chain-nodes.ts';
import type { Db } from '../store/db.ts';

const MIN_WRITE_INTERVAL_MS = 1_000;

export function nodeReporter(db: Db, chain: ChainKey, logger: Pick<Logger, 'warn'>): (views: NodeView[]) => void {
  let writing = false;
  let lastWrite = 0;
  let lastVerdicts = '';
  let waiting: NodeView[] | undefined;
  let failing = false;
  const write = async (views: NodeView[]): Promise<void> => {
    writing = true;
    lastWrite = Date.now();
    lastVerdicts = verdicts(views);
    try {
      await saveChainNodes(db, chain, views);
      failing = false;
    } catch (error) {
      if (!failing) logger.warn({ err: error, ...chain }, 'could not store the nodes’ health; trying again at the next round');
      failing = true;
    } finally {
      writing = false;
      const next = waiting;
      waiting = undefined;
      if (next) void write(next);
    }
  };
  return (views) => {
    if (writing) waiting = views;
    else if (failing || Date.now() - lastWrite >= MIN_WRITE_INTERVAL_MS || verdicts(views) !== lastVerdicts) void write(views);
  };
}

function verdicts(views: NodeView[]): string {
  return JSON.stringify(views.map((v) => [v.node, v.eligible, v.reason]));
}
