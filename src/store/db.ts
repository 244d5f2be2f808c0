/**
 * The one wrapper every SQL statement goes through: it labels each query (for metrics and logs), times
 * it, and classifies failures by SQLSTATE into retryable (connection lost, serialization failure,
 * deadlock) and non-retryable errors. Nothing outside src/store/ builds SQL.
 */
import pg from 'pg';
import { sleep } from '../lib/loop.ts';
import type { Metrics } from '../metrics.ts';

// int8 (bigint) and numeric come back as strings by default; bigint columns here hold credits and
// heights, which fit a JS number only up to 2^53, so they are parsed to bigint explicitly per query.
export type Row = Record<string, unknown>;

export interface QueryOptions {
  /**
   * Plan the statement at each run instead of preparing it once per connection: for a statement whose
   * best plan depends on a table that grows fast (a named statement first planned while the table was
   * small keeps a sequential scan as its generic plan: 49 ms instead of 0.4 for a lookup by three ids
   * after 500,000 rows were added, PostgreSQL 15).
   */
  planEachTime?: boolean;
}

export interface Queryable {
  query<T extends object = Row>(label: string, sql: string, params?: readonly unknown[], options?: QueryOptions): Promise<T[]>;
}

export interface TransactionOptions {
  /**
   * Statements without parameters sent with BEGIN as one simple query, so they cost no round trip of
   * their own (a SET LOCAL, a lock whose arguments are literals). Never build it from untrusted text.
   */
  prelude?: string;
}

export interface Db extends Queryable {
  transaction<T>(label: string, work: (tx: Queryable) => Promise<T>, options?: TransactionOptions): Promise<T>;
  /** Pool figures for /metrics and /readyz. */
  poolStats(): { total: number; idle: number; waiting: number };
  close(): Promise<void>;
}

/** The cheapest statement that proves the database answers (readiness). */
export async function pingDatabase(q: Queryable): Promise<void> {
  await q.query('readyz', 'SELECT 1');
}

/** Tries of a transaction that meets a deadlock or serialization failure. */
const TRANSACTION_ATTEMPTS = 4;

/** SQLSTATE classes worth trying again: the same statement may well succeed a moment later. */
const RETRYABLE_SQLSTATE = /^(08|40001|40P01|57P0[123]|53300)/;

export class DbError extends Error {
  constructor(
    readonly label: string,
    readonly sqlstate: string | undefined,
    readonly retryable: boolean,
    readonly constraint: string | undefined,
    cause: unknown,
  ) {
    super(`Database query '${label}' failed${sqlstate ? ` (SQLSTATE ${sqlstate})` : ''}: ${(cause as Error)?.message ?? String(cause)}`, {
      cause,
    });
    this.name = 'DbError';
  }

  get isUniqueViolation(): boolean {
    return this.sqlstate === '23505';
  }
}

/**
 * The level at which a background loop (delivery, pruning, alerts, recoveries, index changes) logs a
 * failure it will retry: a database that is briefly away (a restart, a failover, a full pool) is a warning,
 * not an error, so an operator paging on errors is not woken by a planned restart; anything else is an error.
 */
export function retryLogLevel(error: unknown): 'warn' | 'error' {
  return error instanceof DbError && error.retryable ? 'warn' : 'error';
}

function classify(label: string, error: unknown): DbError {
  const e = error as { code?: unknown; constraint?: unknown };
  const sqlstate = typeof e.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code) ? e.code : undefined;
  // Errors without a SQLSTATE are client-side: a dropped socket or a pool that could not connect.
  const retryable = sqlstate ? RETRYABLE_SQLSTATE.test(sqlstate) : true;
  return new DbError(label, sqlstate, retryable, typeof e.constraint === 'string' ? e.constraint : undefined, error);
}

/** Label -> SQL of every prepared statement: one label must always name the same SQL. */
const preparedSql = new Map<string, string>();

function timedQuery(client: pg.Pool | pg.PoolClient, metrics: Metrics | undefined, prepare: boolean, metricsLabelPrefix = ''): Queryable['query'] {
  return async <T extends object>(label: string, sql: string, params?: readonly unknown[], options?: QueryOptions) => {
    // Statements with parameters are prepared once per connection under their label: the hot queries
    // are then neither parsed nor planned again. Those without (BEGIN, migrations) go as simple queries.
    // Without `prepare` every statement is unnamed (parsed each time): a named statement lives in one
    // server session, which a pooler in transaction mode (PgBouncer) hands to another client.
    const name = prepare && params && params.length > 0 && !options?.planEachTime ? label : undefined;
    if (name && (preparedSql.get(name) ?? sql) !== sql) throw new Error(`Query label '${label}' is used for two different statements.`);
    if (name) preparedSql.set(name, sql);
    const end = metrics?.dbQueryDuration.startTimer({ query: metricsLabelPrefix + label });
    try {
      const result = await client.query({ name, text: sql, values: params as unknown[] | undefined });
      return result.rows as T[];
    } catch (error) {
      throw classify(label, error);
    } finally {
      end?.();
    }
  };
}

export interface DbOptions {
  poolSize: number;
  metrics?: Metrics;
  onError?: (error: Error) => void;
  /** Named prepared statements per connection (default true); false behind a transaction-mode pooler. */
  preparedStatements?: boolean;
  /** The connections' application_name (pg_stat_activity tells pools apart by it); default PGAPPNAME's. */
  applicationName?: string;
  /** Run on each new connection before the pool hands it out: its statements run before any other of that connection (e.g. backend-priority.ts). */
  onConnect?: (client: pg.ClientBase) => Promise<void>;
  /** Put before each statement's label in the query-time metric (a second pool's statements apart). */
  metricsLabelPrefix?: string;
}

export function createDb(url: string, options: DbOptions): Db {
  const prepare = options.preparedStatements ?? true;
  const { onConnect } = options;
  const pool = new pg.Pool({
    connectionString: url,
    max: options.poolSize,
    idleTimeoutMillis: 30_000,
    ...(options.applicationName && { application_name: options.applicationName }),
    // pg-pool awaits this hook before it hands a new connection out: its statements run first and alone.
    // (A 'connect' listener cannot: the connection is not ready for queries yet when it fires, so the
    // hook's statement and the pool's first one would queue on one busy client, which pg 9 refuses.)
    // A hook that fails is reported, not fatal: the connection still serves.
    ...(onConnect && { onConnect: (client: pg.ClientBase) => onConnect(client).catch((error: Error) => options.onError?.(error)) }),
  });
  // An idle client whose server went away emits 'error' on the pool; without a listener that would
  // crash the process. The next query gets a fresh connection.
  pool.on('error', (error) => options.onError?.(error));
  const query = timedQuery(pool, options.metrics, prepare, options.metricsLabelPrefix);

  return {
    query,
    async transaction(label, work, options) {
      // A deadlock or serialization failure rolls the whole transaction back; running it again from the
      // start is correct (work reads everything it needs inside) and almost always succeeds.
      for (let attempt = 1; ; attempt++) {
        try {
          return await runTransaction(label, work, options?.prelude);
        } catch (error) {
          const conflict = error instanceof DbError && (error.sqlstate === '40P01' || error.sqlstate === '40001');
          if (!conflict || attempt >= TRANSACTION_ATTEMPTS) throw error;
          await sleep(Math.random() * 10 * attempt);
        }
      }
    },
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    close: () => pool.end(),
  };

  async function runTransaction<T>(label: string, work: (tx: Queryable) => Promise<T>, prelude: string | undefined): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (error) {
      throw classify(label, error);
    }
    // A checked-out client has no error listener of the pool's: a connection the server ends between two
    // statements (a restart, a failover: SQLSTATE 57P01) would be an unhandled 'error' event and end the
    // process. Caught here, the next statement fails instead, as retryable, and the client is destroyed.
    let lost = false;
    const onLost = () => {
      lost = true;
    };
    client.on('error', onLost);
    const tx = { query: timedQuery(client, options.metrics, prepare, options.metricsLabelPrefix) };
    try {
      await tx.query(`${label}:begin`, prelude ? `BEGIN; ${prelude}` : 'BEGIN');
      const result = await work(tx);
      await tx.query(`${label}:commit`, 'COMMIT');
      client.removeListener('error', onLost);
      client.release(lost);
      return result;
    } catch (error) {
      // A failed ROLLBACK means the connection is broken: destroy it rather than return it to the pool.
      const rollbackFailed =
        lost ||
        (await client.query('ROLLBACK').then(
          () => false,
          () => true,
        ));
      client.removeListener('error', onLost);
      client.release(rollbackFailed);
      throw error;
    }
  }
}
