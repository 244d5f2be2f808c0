/**
 * Opens the database the configuration names: DATABASE_URL when set, otherwise the embedded server
 * under the data directory (started if no process serves it yet). Migrations are applied on open.
 */
import type { Config } from '../config/config.ts';
import { CHAINS } from '../domain/chains.ts';
import type { Metrics } from '../metrics.ts';
import { createBackgroundDb } from './backend-priority.ts';
import { createDb, type Db } from './db.ts';
import { type EmbeddedDatabase, openEmbeddedDatabase, type SupervisionHooks } from './embedded.ts';
import { migrate } from './migrate.ts';
import { transactionPoolerInFront } from './pooler-probe.ts';
import { keyringOf, useKeyring } from './secret-box.ts';
import { syncChainUnits } from './wallets.ts';

/**
 * Connections of the low-priority pool: one for bulk creation, which writes one chunk at a time in the
 * whole process (its requests take turns: services/bulk-turns.ts), one for the ingest's reads of the
 * bulk-created ranges (src/ingest/service.ts), so that neither waits behind the other.
 */
const LOW_PRIORITY_POOL_SIZE = 2;
/** Their backends' nice level, as the block workers' threads (src/chains/utxo/block-worker.ts). */
const LOW_PRIORITY_NICE = 10;

export interface OpenDatabase {
  db: Db;
  /**
   * A small second pool for work that may wait while other requests are served (bulk creation's
   * chunks, and the ingest's reads of the rows they made): its connections are `herald-bulk` in
   * pg_stat_activity, and where their server processes are provably local processes herald may renice
   * (the embedded database; backend-priority.ts) they run at nice 10, so other customers' statements
   * get the CPU first. A remote server's, or a pooler's, keep their priority.
   */
  lowPriorityDb: Db;
  /** Connection string of the pool's database (DATABASE_URL or the embedded server). */
  url: string;
  /** Connection string for the one session-bound connection (LISTEN): listenDatabaseUrl, else `url`. */
  listenUrl: string;
  /** Present when the embedded server is used. */
  embedded?: EmbeddedDatabase;
  /** Migrations applied by this open. */
  applied: string[];
  /** Whether the pools name their statements: databasePreparedStatements, or what the probe at open found. */
  preparedStatements: boolean;
  /**
   * Set when databasePreparedStatements was not set and the probe found a transaction-mode pooler behind
   * databaseUrl: the pools' statements are unnamed. What to tell the operator (the log, the CLI's stderr).
   */
  poolerNotice?: string;
  close(): Promise<void>;
}

export async function openDatabase(
  config: Config,
  options: {
    metrics?: Metrics;
    onError?: (error: Error) => void;
    poolSize?: number;
    supervision?: SupervisionHooks;
    /** Make the embedded database when the data directory has none (serve, migrate); otherwise refuse (store/embedded.ts). */
    create?: boolean;
  } = {},
): Promise<OpenDatabase> {
  // The callback secrets are encrypted and decrypted with these keys wherever the store reads or writes them.
  useKeyring(keyringOf(config.secrets));
  const embedded = config.databaseUrl ? undefined : await openEmbeddedDatabase(config.dataDir, options.supervision, { create: options.create ?? true });
  const url = config.databaseUrl ?? (embedded as EmbeddedDatabase).url;
  let db: Db | undefined;
  let lowPriorityDb: Db | undefined;
  try {
    const { preparedStatements, poolerNotice } = await statementNaming(config, url);
    db = createDb(url, {
      poolSize: options.poolSize ?? config.databasePoolSize,
      metrics: options.metrics,
      onError: options.onError,
      preparedStatements,
    });
    lowPriorityDb = createBackgroundDb(url, {
      poolSize: LOW_PRIORITY_POOL_SIZE,
      nice: LOW_PRIORITY_NICE,
      metrics: options.metrics,
      metricsLabelPrefix: 'low-priority:',
      onError: options.onError,
      preparedStatements,
      applicationName: 'herald-bulk',
    });
    const applied = await migrate(db);
    await syncChainUnits(
      db,
      Object.entries(CHAINS).map(([blockchain, c]) => ({ blockchain, unit: c.unit, decimals: c.decimals })),
    );
    return {
      db,
      lowPriorityDb,
      url,
      // The embedded server has no pooler in front: its own URL serves LISTEN too.
      listenUrl: (config.databaseUrl ? config.listenDatabaseUrl : undefined) ?? url,
      embedded,
      applied,
      preparedStatements,
      ...(poolerNotice && { poolerNotice }),
      async close() {
        await (db as Db).close();
        await (lowPriorityDb as Db).close();
        await embedded?.stop();
      },
    };
  } catch (error) {
    await db?.close().catch(() => undefined);
    await lowPriorityDb?.close().catch(() => undefined);
    await embedded?.stop();
    throw error;
  }
}

/**
 * Named statements unless the configuration says otherwise or, with databaseUrl and no setting, the probe
 * finds a transaction-mode pooler in front (the embedded server has none).
 */
async function statementNaming(config: Config, url: string): Promise<{ preparedStatements: boolean; poolerNotice?: string }> {
  if (config.databasePreparedStatements !== undefined) return { preparedStatements: config.databasePreparedStatements };
  if (!config.databaseUrl || !(await transactionPoolerInFront(url))) return { preparedStatements: true };
  const listen = config.listenDatabaseUrl
    ? ''
    : ' LISTEN (key revocation, delivery wake-up, new subscriptions) needs a session of its own: give HERALD_LISTEN_DATABASE_URL, a direct connection to the server.';
  return {
    preparedStatements: false,
    poolerNotice:
      'DATABASE_URL leads to a pooler in transaction mode (one server session answered two clients): statements are sent unnamed. ' +
      `Set HERALD_DB_PREPARED_STATEMENTS=false (databasePreparedStatements) to say so and skip this check at start.${listen}`,
  };
}
