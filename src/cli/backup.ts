/**
 * `herald backup` and `herald restore` (docs/operations/backup.md): the embedded database or DATABASE_URL's,
 * to and from one file (store/backup.ts).
 */
import type { Command } from 'commander';
import { backupDatabase, RestoreError, restoreDatabase } from '../store/backup.ts';
import { createDb } from '../store/db.ts';
import { openEmbeddedDatabase } from '../store/embedded.ts';
import { openForCommand } from './database.ts';
import { configFrom, printResult, withJsonOption, withStoreOptions } from './options.ts';

const defaultFile = () =>
  `herald-backup-${new Date()
    .toISOString()
    .replaceAll(':', '-')
    .replace(/\.\d+Z$/, 'Z')}.json.gz`;

export function registerBackupCommands(program: Command): void {
  withStoreOptions(
    withJsonOption(
      program
        .command('backup')
        .description('write every table of the database to one file, from one consistent snapshot, while herald runs (docs/operations/backup.md)')
        .option('-o, --output <file>', 'the backup file (default: herald-backup-<time>.json.gz in the current directory)'),
    ),
  ).action(async (o: { output?: string; json?: boolean; dataDir?: string; config?: string }) => {
    const config = configFrom(o);
    const database = await openForCommand(config);
    try {
      const summary = await backupDatabase(database.url, o.output ?? defaultFile());
      printResult(o, summary, () => [
        `wrote ${summary.file}: ${summary.rows} rows of ${Object.keys(summary.tables).length} tables, schema at ${summary.migrations.at(-1) ?? 'no migration'}`,
      ]);
    } finally {
      await database.close();
    }
  });

  withStoreOptions(
    withJsonOption(
      program
        .command('restore')
        .description(
          'load a backup into a new data directory (--data-dir) or an empty database (DATABASE_URL), then apply the migrations of this herald beyond the backup',
        )
        .argument('<file>', 'a file written by herald backup'),
    ),
  ).action(async (file: string, o: { json?: boolean; dataDir?: string; config?: string }) => {
    const config = configFrom(o);
    const embedded = config.databaseUrl ? undefined : await openEmbeddedDatabase(config.dataDir, {}, { create: true });
    const url = config.databaseUrl ?? (embedded?.url as string);
    const db = createDb(url, { poolSize: 2, preparedStatements: config.databasePreparedStatements ?? true, applicationName: 'herald-restore' });
    try {
      const summary = await restoreDatabase(db, url, file);
      printResult(o, summary, () => [
        `restored ${summary.rows} rows of ${Object.keys(summary.tables).length} tables from ${file} (schema at ${summary.migrations.at(-1) ?? 'no migration'})`,
        ...(summary.applied.length > 0 ? [`then applied the migrations ${summary.applied.join(', ')}`] : []),
      ]);
    } catch (error) {
      if (error instanceof RestoreError) {
        process.stderr.write(`herald: cannot restore: ${error.message}\n`);
        process.exitCode = 2;
      } else throw error;
    } finally {
      await db.close();
      await embedded?.stop();
    }
  });
}
