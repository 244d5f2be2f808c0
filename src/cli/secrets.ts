/**
 * `herald secrets rotate-key`: encrypts every stored callback secret with the current key
 * (secrets.encryptionKey), in batches of one transaction each (docs/operations/secrets-at-rest.md). Resumable: a
 * run that was stopped is run again, and it rewrites only the rows not yet under the current key.
 */
import type { Command } from 'commander';
import { currentKeyId } from '../store/secret-box.ts';
import { reencryptSecrets } from '../store/subscriptions.ts';
import { openForCommand } from './database.ts';
import { commandGroup, configFrom, integer, printResult, withJsonOption, withStoreOptions } from './options.ts';

export function registerSecretsCommands(program: Command): void {
  const secrets = commandGroup(program, 'secrets', 'callback secrets at rest: encrypted with secrets.encryptionKey');
  withStoreOptions(
    withJsonOption(
      secrets
        .command('rotate-key')
        .description(
          'encrypt every callback secret with the current key (secrets.encryptionKey or the first line of secrets.encryptionKeyFile); ' +
            'the older keys must still be given (secrets.previousEncryptionKeys) to read the rows they encrypted',
        )
        .option('--batch-size <n>', 'subscriptions per transaction', integer('--batch-size', 1), 1000),
    ),
  ).action(async (o: { batchSize: number; json?: boolean; dataDir?: string; config?: string }) => {
    const config = configFrom(o);
    const database = await openForCommand(config);
    // Ctrl-C stops after the batch under way: every batch is its own transaction, and a new run resumes.
    let stopped = false;
    const onSignal = () => {
      stopped = true;
    };
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    try {
      const keyId = currentKeyId();
      if (keyId === undefined) {
        process.stderr.write(
          'No encryption key is configured: set secrets.encryptionKey (HERALD_SECRETS_ENCRYPTION_KEY) or secrets.encryptionKeyFile, ' +
            'with the older keys in secrets.previousEncryptionKeys.\n',
        );
        process.exitCode = 2;
        return;
      }
      let after: string | null = null;
      let read = 0;
      let changed = 0;
      while (!stopped) {
        const batch = await reencryptSecrets(database.db, after, o.batchSize);
        read += batch.read;
        changed += batch.changed;
        if (batch.last === undefined) break;
        after = batch.last;
      }
      printResult(o, { keyId, read, encrypted: changed, stopped }, () => [
        `${stopped ? 'stopped: run it again to go on; ' : ''}encrypted ${changed} of ${read} subscriptions' callback secrets with key ${keyId}` +
          `${stopped ? '' : '; every secret is now under that key'}`,
      ]);
    } finally {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      await database.close();
    }
  });
}
