/** `herald serve`: start everything, print the first key once, stop cleanly on SIGTERM/SIGINT. */
import { createLogger, type RunningApp, startApp } from '../app.ts';
import type { Config } from '../config/config.ts';
import { HERALD_VERSION } from '../version.ts';

/** How long a stop after the embedded database was lost may take before the process exits anyway. */
const FATAL_STOP_MS = 10_000;

export async function serve(config: Config): Promise<void> {
  // A reader that went away (herald serve | head) must not crash the server: output is best effort.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
  });
  const logger = createLogger(config);
  const started = performance.now();
  let app: RunningApp | undefined;
  let stopping = false;
  const stop = async (signal: string, exitCode = 0) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping: no new connections, finishing requests in flight');
    try {
      await app?.close();
      logger.info('stopped');
      process.exit(exitCode);
    } catch (error) {
      logger.error({ err: error }, 'error while stopping');
      process.exit(1);
    }
  };
  // The embedded database could not be started again after it died: stop, and exit non-zero so that a
  // process manager (systemd, Kubernetes) restarts herald with a fresh server. Whatever still waits on
  // the lost database gets FATAL_STOP_MS to finish.
  const onFatal = () => {
    setTimeout(() => process.exit(1), FATAL_STOP_MS).unref();
    void stop('embedded database lost', 1);
  };
  app = await startApp(config, logger, { onFatal });
  logger.info(
    {
      version: HERALD_VERSION,
      url: app.url,
      database: app.database.embedded ? `embedded (${config.dataDir})` : 'DATABASE_URL',
      startMs: Math.round(performance.now() - started),
    },
    'herald is ready',
  );
  if (app.firstKey) {
    process.stdout.write(
      `\n  First start: created customer 'default' with this API key (shown once, store it now):\n\n    ${app.firstKey}\n\n` +
        `  Try it:  curl -H 'x-api-key: ${app.firstKey}' '${app.url}/wallet-as-a-service/wallets/all-assets'\n\n`,
    );
  }
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
}
