/**
 * Composition root: wires config, logger, metrics, database and HTTP server. No logic of its own.
 */
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import pino, { type Logger } from 'pino';
import { buildServer } from './api/server.ts';
import type { Config } from './config/config.ts';
import { createMetrics } from './metrics.ts';
import { AccessCache } from './services/access.ts';
import { CreditCharger } from './services/credits.ts';
import { listenForChanges } from './store/changes.ts';
import { countCustomers, createApiKey, createCustomer } from './store/customers.ts';
import { type OpenDatabase, openDatabase } from './store/open.ts';

export interface RunningApp {
  server: FastifyInstance;
  database: OpenDatabase;
  /** Base URL the server listens on. */
  url: string;
  /** The API key made on the very first start, when there was one. */
  firstKey?: string;
  close(): Promise<void>;
}

export function createLogger(config: Config): Logger {
  // Synchronous writes to stdout: pino's asynchronous mode flushes at exit and, if stdout is a pipe
  // whose reader has gone (EPIPE), retries forever, so `herald serve | shipper` could never stop.
  // herald logs little (no line per request by default), so writing synchronously costs nothing.
  return pino({ level: config.logLevel, base: { service: 'herald' } }, pino.destination({ dest: 1, sync: true }));
}

/** On the first start of a new embedded database: a `default` customer and one key, shown once. */
async function bootstrapFirstCustomer(config: Config, database: OpenDatabase): Promise<string | undefined> {
  if (!database.embedded?.created || (await countCustomers(database.db)) > 0) return undefined;
  const plan = config.defaultPlan;
  const customer = await createCustomer(database.db, 'default', plan, BigInt(plan.credits));
  return (await createApiKey(database.db, customer.id, { label: 'first start' })).key;
}

export async function startApp(config: Config, logger: Logger = createLogger(config)): Promise<RunningApp> {
  const metrics = createMetrics();
  const database = await openDatabase(config, { metrics, onError: (error) => logger.warn({ err: error }, 'idle database connection failed') });
  if (database.applied.length > 0) logger.info({ migrations: database.applied }, 'database migrations applied');
  metrics.setPoolSource(database.db.poolStats);
  try {
    const firstKey = await bootstrapFirstCustomer(config, database);
    const access = new AccessCache(database.db);
    const changes = listenForChanges(database.url, {
      onChange: (change) => access.forgetCustomer(change.customerId),
      onLive: (live) => access.setLive(live),
      onError: (error) => logger.warn({ err: error }, 'change listener lost its database connection; caches off until it is back'),
    });
    const common = { config, db: database.db, logger, access, credits: new CreditCharger(database.db) };
    const server = await buildServer(common, { logger, metrics });
    await server.listen({ port: config.port, host: config.host });
    const address = server.addresses()[0] as AddressInfo;
    const url = `http://${address?.family === 'IPv6' ? `[${address.address}]` : address?.address}:${address?.port}`;
    return {
      server,
      database,
      url,
      firstKey,
      async close() {
        // Fastify stops accepting and waits for requests in flight. Connections kept alive by clients
        // become idle one by one as their last response is sent: close those as they appear. Past the
        // grace period, cut the remaining ones so the database (and embedded server) still stop.
        const sweep = setInterval(() => server.server.closeIdleConnections(), 50);
        const grace = setTimeout(() => {
          logger.error(`requests still in flight after ${config.shutdownGraceSeconds} s; closing their connections`);
          server.server.closeAllConnections();
        }, config.shutdownGraceSeconds * 1000);
        try {
          await server.close();
        } finally {
          clearInterval(sweep);
          clearTimeout(grace);
          await changes.close();
          await database.close();
        }
      },
    };
  } catch (error) {
    await database.close();
    throw error;
  }
}
