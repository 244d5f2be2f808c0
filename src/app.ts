/**
 * Composition root: wires config, logger, metrics, database, the HTTP server (api role) and the
 * delivery worker (delivery role). No logic of its own. Closing stops them in reverse order.
 */
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { rootCertificates } from 'node:tls';
import type { FastifyInstance } from 'fastify';
import pino, { type Logger } from 'pino';
import { startOpsServer } from './api/ops-server.ts';
import { API_VERSION } from './api/schemas.ts';
import { buildServer } from './api/server.ts';
import type { ChainAdapter } from './chains/types.ts';
import { type Config, withBilling } from './config/config.ts';
import { raiseProcessAlert, startAlertMonitor } from './delivery/alert-monitor.ts';
import { type RecoveryRunner, startRecoveryRunner } from './delivery/recovery.ts';
import { openPrunerDb, startRetentionPruner } from './delivery/retention.ts';
import { CallbackSender } from './delivery/sender.ts';
import { type Clock, type DeliveryWorker, startDeliveryWorker } from './delivery/worker.ts';
import type { ChainKey } from './domain/chains.ts';
import type { IngestService } from './ingest/service.ts';
import { createMetrics, type Metrics } from './metrics.ts';
import { AccessCache } from './services/access.ts';
import { CreditCharger } from './services/credits.ts';
import { GroupedCreates } from './services/grouped-creates.ts';
import { startHistorySampler } from './services/history-sampler.ts';
import { InFlightCap } from './services/in-flight-cap.ts';
import { StreamWake } from './services/stream-wake.ts';
import { listChainNodes } from './store/chain-nodes.ts';
import { listChainStatus } from './store/chain-state.ts';
import { listenForChanges } from './store/changes.ts';
import { countCustomers, createApiKey, createCustomer } from './store/customers.ts';
import type { SupervisionHooks } from './store/embedded.ts';
import { type OpenDatabase, openDatabase } from './store/open.ts';
import { queueStats } from './store/queue-stats.ts';
import { tokenMetadataCache } from './store/token-metadata.ts';

export interface RunningApp {
  /** The HTTP server, when this process has the api role. */
  server?: FastifyInstance;
  database: OpenDatabase;
  /** Base URL the server listens on (api role). */
  url?: string;
  /** Base URL of the metrics port (metricsPort, processes without the api role). */
  metricsUrl?: string;
  /** The delivery worker, when this process has the delivery role. */
  worker?: DeliveryWorker;
  /** The runner of bulk recovery jobs, with the delivery role. */
  recoveries?: RecoveryRunner;
  /** Chain following, when this process has the ingest role. */
  ingest?: IngestService;
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

/** The guarded HTTPS client shared by delivery, test callbacks and domain verification. */
export function createSender(config: Config): CallbackSender {
  const d = config.delivery;
  return new CallbackSender({
    timeoutMs: d.timeoutMs,
    perDestination: d.perDestinationConcurrency,
    allowNetworks: d.allowNetworks,
    ca: d.caFile ? [...rootCertificates, readFileSync(d.caFile, 'utf8')] : undefined,
    dnsServers: d.dnsServers,
    responseBodyLimit: d.responseBodyLimit,
    userAgent: `herald/${API_VERSION}`,
  });
}

export async function startApp(
  given: Config,
  logger: Logger = createLogger(given),
  options: { clock?: Clock; onFatal?: (error: Error) => void } = {},
): Promise<RunningApp> {
  const config = withBilling(given);
  const metrics = createMetrics();
  let opened: OpenDatabase | undefined;
  const database = await openDatabase(config, {
    metrics,
    onError: (error) => logger.warn({ err: error }, 'idle database connection failed'),
    supervision: embeddedSupervision(config, logger, metrics, () => opened, options.onFatal),
  });
  opened = database;
  if (database.applied.length > 0) logger.info({ migrations: database.applied }, 'database migrations applied');
  if (database.poolerNotice) logger.warn(database.poolerNotice);
  metrics.setPoolSource(database.db.poolStats);
  const stops: (() => Promise<void>)[] = [() => database.close()];
  const closeAll = async () => {
    for (const stop of stops.splice(0).reverse()) await stop();
  };
  try {
    const firstKey = await bootstrapFirstCustomer(config, database);
    const access = new AccessCache(database.db);
    const sender = createSender(config);
    stops.push(() => sender.close());
    const worker = config.roles.includes('delivery')
      ? startDeliveryWorker({ db: database.db, sender, config, logger, metrics, clock: options.clock })
      : undefined;
    let recoveries: RecoveryRunner | undefined;
    if (worker) {
      stops.push(() => worker.stop());
      const runner = startRecoveryRunner({
        db: database.db,
        logger,
        costPerCallback: BigInt(config.costs.recoverPerCallback),
        clock: options.clock,
        liveLoad: () => worker.liveLoad(),
      });
      recoveries = runner;
      stops.push(() => runner.stop());
      metrics.setQueueSource(() =>
        queueStats(database.db, new Date(), { onRecountError: (error) => logger.warn({ err: error }, "the queue gauges' recount failed") }),
      );
      if (config.retention.enabled) {
        const prunerDb = openPrunerDb(database.url, config.retention, { preparedStatements: database.preparedStatements, logger });
        const pruner = startRetentionPruner({ db: prunerDb, retention: config.retention, logger, metrics });
        stops.push(async () => {
          await pruner.stop();
          await prunerDb.close();
        });
      }
      const alerts = startAlertMonitor({ db: database.db, config, sender, timeoutMs: config.delivery.timeoutMs, logger, metrics });
      stops.push(() => alerts.stop());
    }
    const ingest = config.roles.includes('ingest') && config.chains.length > 0 ? await startChainFollowing(config, database, logger, metrics) : undefined;
    metrics.setChainSource(async () =>
      (await listChainStatus(database.db)).map((r) => ({
        ...r,
        processedHeight: r.height,
        nodeHeight: r.nodeHead,
        stopped: r.state === 'stopped',
        held: r.hold !== null,
      })),
    );
    metrics.setNodeSource(() => listChainNodes(database.db));
    if (ingest) stops.push(() => ingest.close());
    let listenerLost = false;
    // The event stream's long-polls wake on the same announcement as the delivery worker (services/stream-wake.ts).
    const streamWake = config.roles.includes('api') ? new StreamWake() : undefined;
    const changes = listenForChanges(database.listenUrl, {
      onChange: (change) => {
        access.forgetCustomer(change.customerId);
        if (change.table === 'api_keys') access.forgetUnknownKeys();
        if (change.table === 'operator_tokens') access.forgetUnknownOperatorTokens();
      },
      onCallbacks:
        worker || streamWake
          ? () => {
              worker?.wake();
              streamWake?.notify();
            }
          : undefined,
      onSubscription: ingest ? (change) => ingest.onSubscriptionChange(change) : undefined,
      onLive: (live) => {
        // After a loss, say it is back: an operator (and the topology test) sees that the process recovered by itself.
        if (live && listenerLost) logger.info('change listener connected again; caches on');
        listenerLost = !live;
        access.setLive(live);
        if (streamWake) {
          streamWake.live = live;
          streamWake.notify();
        }
        // (Re)connected: announcements may have been missed, so the matching indexes are rebuilt.
        if (live && ingest) void ingest.reload().catch((error) => logger.error({ err: error }, 'matching indexes not loaded'));
      },
      onError: (error) => logger.warn({ err: error }, 'change listener lost its database connection; caches off until it is back'),
    });
    stops.push(() => changes.close());
    const readers = config.roles.includes('api') && config.chains.length > 0 ? await createChainReaders(config, database, logger) : undefined;
    if (readers) stops.push(() => readers.close());
    const common = {
      config,
      db: database.db,
      lowPriorityDb: database.lowPriorityDb,
      logger,
      access,
      sender,
      credits: new CreditCharger(database.db),
      creates: new GroupedCreates(database.db),
      dryRuns: new InFlightCap(config.blockJobs.dryRunsPerCustomer),
      chainReader: readers?.get,
      health: database.embedded?.health,
      streamWake,
    };
    const server = config.roles.includes('api') ? await buildServer(common, { logger, metrics }) : undefined;
    if (server) {
      // The operator's chain lag charts: sampled by the API role (docs/reference/api-overview.md "Console API").
      const sampler = startHistorySampler({ db: database.db, logger });
      stops.push(() => sampler.stop());
    }
    let url: string | undefined;
    if (server) {
      await server.listen({ port: config.port, host: config.host });
      const address = server.addresses()[0] as AddressInfo;
      url = `http://${address?.family === 'IPv6' ? `[${address.address}]` : address?.address}:${address?.port}`;
      stops.push(() => closeServer(server, config, logger));
      // Before the server closes (stops run last first): long-polls answer now instead of holding it open.
      stops.push(async () => streamWake?.close());
    }
    let metricsUrl: string | undefined;
    if (!server && config.metricsPort !== undefined) {
      const ops = await startOpsServer({ db: database.db, metrics, host: config.host, port: config.metricsPort, health: database.embedded?.health });
      metricsUrl = ops.url;
      stops.push(() => ops.server.close());
      logger.info({ url: metricsUrl }, 'metrics and probes listening (/metrics, /healthz, /readyz)');
    }
    return { server, database, url, metricsUrl, firstKey, worker, recoveries, ingest, close: closeAll };
  } catch (error) {
    await closeAll();
    throw error;
  }
}

/**
 * What the embedded database's supervisor (store/embedded.ts) does with what it sees: a line in the log
 * when the server dies, an operator alert once it runs again, and, when it cannot be started again,
 * `onFatal` (`herald serve` exits non-zero then, for a process manager to restart it).
 */
function embeddedSupervision(
  config: Config,
  logger: Logger,
  metrics: Metrics,
  database: () => OpenDatabase | undefined,
  onFatal?: (error: Error) => void,
): SupervisionHooks {
  return {
    onDown: (cause) => logger.error({ cause }, 'embedded database down: starting it again'),
    onRestarted: ({ cause, downMs, attempts }) => {
      const opened = database();
      if (!opened) return;
      const data = { cause, downSeconds: Math.round(downMs / 100) / 10, attempts, dataDir: config.dataDir };
      logger.warn(data, 'embedded database started again');
      void raiseProcessAlert({ db: opened.db, config, logger, metrics }, 'database.restarted', 'database/embedded', data).catch((error) =>
        logger.error({ err: error }, 'the alert of the embedded database restart could not be written'),
      );
    },
    onGiveUp: (error) => {
      logger.fatal({ err: error }, 'embedded database could not be started again');
      onFatal?.(error);
    },
  };
}

/**
 * The ingest role's modules (chain adapters, viem) are loaded only when chains are configured: a
 * process that follows nothing does not pay their memory and start time.
 */
async function startChainFollowing(config: Config, database: OpenDatabase, logger: Logger, metrics: Metrics): Promise<IngestService> {
  const [{ startIngest }, { createChainAdapter }, { nodeReporter }] = await Promise.all([
    import('./ingest/service.ts'),
    import('./chains/registry.ts'),
    import('./ingest/node-report.ts'),
  ]);
  return startIngest({
    db: database.db,
    rangeDb: database.lowPriorityDb,
    config,
    logger,
    metrics,
    createAdapter: (chain, options) =>
      createChainAdapter(chain, {
        tokenMetadataCache: tokenMetadataCache(database.db),
        logger,
        background: options?.background,
        ...(options?.reportNodes !== false && { onNodes: nodeReporter(database.db, chain, logger) }),
      }),
  });
}

/**
 * The API role's own adapters, one per configured chain, for the Callback Data reads: API and ingest may
 * run in different processes, so the API never borrows the follower's. They open connections only when
 * a read uses them (no head watching: no WebSocket URL).
 */
async function createChainReaders(config: Config, database: OpenDatabase, logger: Logger) {
  const { createChainAdapter } = await import('./chains/registry.ts');
  const adapters = new Map<string, ChainAdapter>();
  for (const chain of config.chains) {
    const key = { blockchain: chain.blockchain, network: chain.network } as ChainKey;
    const adapter = createChainAdapter({ ...chain, ...key, wsUrl: undefined, wsUrls: [] }, { tokenMetadataCache: tokenMetadataCache(database.db), logger });
    if (adapter) adapters.set(`${chain.blockchain}/${chain.network}`, adapter);
  }
  return {
    get: (blockchain: string, network: string) => adapters.get(`${blockchain}/${network}`),
    close: async () => {
      await Promise.all([...adapters.values()].map((a) => a.close?.()));
    },
  };
}

/**
 * Fastify stops accepting and waits for requests in flight. Connections kept alive by clients become
 * idle one by one as their last response is sent: close those as they appear. Past the grace period,
 * cut the remaining ones so the rest of the program can still stop.
 */
async function closeServer(server: FastifyInstance, config: Config, logger: Logger): Promise<void> {
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
  }
}
