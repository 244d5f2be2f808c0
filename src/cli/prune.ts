/** `herald prune [--dry-run]`: the retention pass of the delivery role, on demand (docs/operations/retention.md). */
import type { Command } from 'commander';
import { openPrunerDb, pruneOldCallbacks } from '../delivery/retention.ts';
import { openForCommand } from './database.ts';
import { configFrom, printResult, withJsonOption, withStoreOptions } from './options.ts';

export function registerPruneCommand(program: Command): void {
  withStoreOptions(
    withJsonOption(
      program
        .command('prune')
        .description('delete finished callbacks (and their attempts) older than retention.deliveredDays, failedDays and cancelledDays')
        .option('--dry-run', 'only count what would be deleted'),
    ),
  ).action(async (o: { dryRun?: boolean; json?: boolean; dataDir?: string; config?: string }) => {
    const config = configFrom(o);
    const database = await openForCommand(config);
    // Ctrl-C stops after the batch under way: every batch is its own transaction.
    const abort = new AbortController();
    const onSignal = () => abort.abort();
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    try {
      const prunerDb = openPrunerDb(database.url, config.retention, { preparedStatements: database.preparedStatements });
      const figures = await pruneOldCallbacks(prunerDb, config.retention, { dryRun: o.dryRun, signal: abort.signal }).finally(() => prunerDb.close());
      const verb = o.dryRun ? 'would delete' : 'deleted';
      printResult(o, { dryRun: o.dryRun === true, ...figures }, () => [
        ...Object.entries(figures.byStatus).map(
          ([status, f]) => `${status}: ${verb} ${f.callbacks} callbacks and ${f.attempts} attempts finished before ${f.before.toISOString()}`,
        ),
        `total: ${verb} ${figures.callbacks} callbacks and ${figures.attempts} attempts in ${figures.seconds.toFixed(3)} s` +
          `${o.dryRun ? '' : ` (${figures.busySeconds.toFixed(3)} s in batches)`}` +
          `${figures.interrupted ? ' (interrupted)' : ''}`,
      ]);
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      await database.close();
    }
  });
}
