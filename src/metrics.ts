/**
 * Prometheus metrics, one registry per running app (so tests can run several apps in one process).
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

export interface Metrics {
  registry: Registry;
  httpRequests: Counter<'method' | 'route' | 'status'>;
  httpDuration: Histogram<'method' | 'route'>;
  dbQueryDuration: Histogram<'query'>;
  callbacksSent: Counter<'outcome'>;
  callbackAttemptDuration: Histogram;
  /** Called on each scrape for the callback queue gauges (due callbacks, age of the oldest): store/queue-stats.ts. */
  setQueueSource(source: () => Promise<{ due: number; oldestDueSeconds: number }>): void;
  chainBlocks: Counter<'blockchain' | 'network'>;
  chainReorganisations: Counter<'blockchain' | 'network'>;
  /** Mempool transactions read (new to herald), and unconfirmed callbacks queued, per chain. */
  mempoolTransactionsSeen: Counter<'blockchain' | 'network'>;
  mempoolCallbacksFired: Counter<'blockchain' | 'network'>;
  /** Called on each scrape for the chain following gauges (read from the database: any process reports). */
  setChainSource(source: () => Promise<ChainGaugeRow[]>): void;
  /** Called on each scrape for the per-node gauges (chain_nodes: any process reports). */
  setNodeSource(source: () => Promise<NodeGaugeRow[]>): void;
  /** Rows deleted by the retention pruner, per callback status and table. */
  retentionPruned: Counter<'status' | 'table'>;
  /** When the last retention pass ended (seconds since the epoch). */
  retentionLastRun: Gauge;
  /** Operator alerts raised by this process (the one that claimed the change of state), per kind. */
  alerts: Counter<'kind'>;
  /** Alert webhook attempts that failed: `retry` (another attempt is due) or `given_up` (none left). */
  alertSendFailures: Counter<'outcome'>;
  /** Called on each scrape so pool gauges are current. */
  setPoolSource(source: () => { total: number; idle: number; waiting: number }): void;
}

export interface ChainGaugeRow {
  blockchain: string;
  network: string;
  processedHeight: number | null;
  nodeHeight: number | null;
  stopped: boolean;
  /** Held by the deep-reorganisation breaker (store/chain-holds.ts). */
  held: boolean;
}

export interface NodeGaugeRow {
  blockchain: string;
  network: string;
  /** The redacted URL. */
  node: string;
  eligible: boolean;
  headHeight: number | null;
  lagBlocks: number | null;
  errorRate: number | null;
  latencyMs: number | null;
}

export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'herald_' });
  let poolSource: (() => { total: number; idle: number; waiting: number }) | undefined;
  const poolGauge = (name: string, help: string, key: 'total' | 'idle' | 'waiting') =>
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        if (poolSource) this.set(poolSource()[key]);
      },
    });
  poolGauge('herald_db_pool_connections', 'Connections open in the database pool.', 'total');
  poolGauge('herald_db_pool_idle_connections', 'Idle connections in the database pool.', 'idle');
  poolGauge('herald_db_pool_waiting_requests', 'Queries waiting for a pool connection.', 'waiting');

  let queueSource: (() => Promise<{ due: number; oldestDueSeconds: number }>) | undefined;
  let queueRead: Promise<{ due: number; oldestDueSeconds: number }> | undefined;
  // Both gauges share one query per scrape.
  const readQueue = () => {
    queueRead ??= (queueSource?.() ?? Promise.resolve({ due: 0, oldestDueSeconds: 0 })).finally(() => setTimeout(() => (queueRead = undefined), 100));
    return queueRead;
  };
  new Gauge({
    name: 'herald_callbacks_due',
    help: 'Callbacks due now and not yet sent (queue depth): exact below 1,000 per destination, a destination with more as of its last count, made once a minute or less often (docs/reference/metrics.md).',
    registers: [registry],
    async collect() {
      if (queueSource) this.set((await readQueue()).due);
    },
  });
  new Gauge({
    name: 'herald_callbacks_oldest_due_seconds',
    help: 'How long the oldest due callback has been waiting (exact).',
    registers: [registry],
    async collect() {
      if (queueSource) this.set((await readQueue()).oldestDueSeconds);
    },
  });

  let chainSource: (() => Promise<ChainGaugeRow[]>) | undefined;
  let chainRead: Promise<ChainGaugeRow[]> | undefined;
  const readChains = () => {
    chainRead ??= (chainSource?.() ?? Promise.resolve([])).finally(() => setTimeout(() => (chainRead = undefined), 100));
    return chainRead;
  };
  const chainGauge = (name: string, help: string, value: (row: ChainGaugeRow) => number | null) =>
    new Gauge({
      name,
      help,
      labelNames: ['blockchain', 'network'],
      registers: [registry],
      async collect() {
        if (!chainSource) return;
        this.reset();
        for (const row of await readChains()) {
          const v = value(row);
          if (v !== null) this.set({ blockchain: row.blockchain, network: row.network }, v);
        }
      },
    });
  chainGauge('herald_chain_processed_height', 'Height of the last block processed per followed chain.', (r) => r.processedHeight);
  chainGauge('herald_chain_node_height', "The node's head height when last asked.", (r) => r.nodeHeight);
  chainGauge('herald_chain_lag_blocks', 'Blocks between the node head and the last processed block.', (r) =>
    r.nodeHeight === null || r.processedHeight === null ? null : Math.max(0, r.nodeHeight - r.processedHeight),
  );
  chainGauge('herald_chain_stopped', '1 when following stopped (a reorganisation deeper than the window): an operator must look.', (r) => (r.stopped ? 1 : 0));
  chainGauge(
    'herald_chain_held',
    "1 when the deep-reorganisation breaker holds the chain's confirmed callbacks: an operator must look, then release it (herald chains release).",
    (r) => (r.held ? 1 : 0),
  );

  let nodeSource: (() => Promise<NodeGaugeRow[]>) | undefined;
  let nodeRead: Promise<NodeGaugeRow[]> | undefined;
  const readNodes = () => {
    nodeRead ??= (nodeSource?.() ?? Promise.resolve([])).finally(() => setTimeout(() => (nodeRead = undefined), 100));
    return nodeRead;
  };
  const nodeGauge = (name: string, help: string, value: (row: NodeGaugeRow) => number | null) =>
    new Gauge({
      name,
      help,
      labelNames: ['blockchain', 'network', 'node'],
      registers: [registry],
      async collect() {
        if (!nodeSource) return;
        this.reset();
        for (const row of await readNodes()) {
          const v = value(row);
          if (v !== null) this.set({ blockchain: row.blockchain, network: row.network, node: row.node }, v);
        }
      },
    });
  nodeGauge('herald_chain_node_eligible', '1 while the node is read from (answers, not syncing, head within maxLagBlocks of the best).', (r) =>
    r.eligible ? 1 : 0,
  );
  nodeGauge('herald_chain_node_head_height', "The node's head height at its last health check.", (r) => r.headHeight);
  nodeGauge('herald_chain_node_lag_blocks', "Blocks between the node's head and the best eligible head.", (r) => r.lagBlocks);
  nodeGauge('herald_chain_node_error_rate', "Share of the node's requests that failed over the last minute (0..1).", (r) => r.errorRate);
  nodeGauge('herald_chain_node_latency_seconds', "Moving average of the node's answered requests' latency.", (r) =>
    r.latencyMs === null ? null : r.latencyMs / 1000,
  );

  return {
    registry,
    setNodeSource(source) {
      nodeSource = source;
    },
    chainBlocks: new Counter({
      name: 'herald_chain_blocks_processed_total',
      help: 'Blocks applied by this process, per chain.',
      labelNames: ['blockchain', 'network'],
      registers: [registry],
    }),
    mempoolTransactionsSeen: new Counter({
      name: 'herald_mempool_transactions_seen_total',
      help: "Transactions first seen in the node's mempool by this process, per chain.",
      labelNames: ['blockchain', 'network'],
      registers: [registry],
    }),
    mempoolCallbacksFired: new Counter({
      name: 'herald_mempool_callbacks_fired_total',
      help: 'Unconfirmed-event callbacks queued by this process, per chain.',
      labelNames: ['blockchain', 'network'],
      registers: [registry],
    }),
    chainReorganisations: new Counter({
      name: 'herald_chain_reorganisations_total',
      help: 'Reorganisations handled by this process (rewinds to a common ancestor), per chain.',
      labelNames: ['blockchain', 'network'],
      registers: [registry],
    }),
    setChainSource(source) {
      chainSource = source;
    },
    callbacksSent: new Counter({
      name: 'herald_callbacks_sent_total',
      help: 'Callback attempts by outcome: delivered, retry, gone (410), exhausted (last retry failed).',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    callbackAttemptDuration: new Histogram({
      name: 'herald_callback_attempt_duration_seconds',
      help: 'Time of one callback attempt, from connect to the end of the response read.',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    setQueueSource(source) {
      queueSource = source;
    },
    httpRequests: new Counter({
      name: 'herald_http_requests_total',
      help: 'HTTP requests answered, by route and status.',
      labelNames: ['method', 'route', 'status'],
      registers: [registry],
    }),
    httpDuration: new Histogram({
      name: 'herald_http_request_duration_seconds',
      help: 'Time from request received to response sent.',
      labelNames: ['method', 'route'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    }),
    dbQueryDuration: new Histogram({
      name: 'herald_db_query_duration_seconds',
      help: 'Database query time, by query label.',
      labelNames: ['query'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5],
      registers: [registry],
    }),
    retentionPruned: new Counter({
      name: 'herald_retention_pruned_rows_total',
      help: 'Rows deleted by the retention pruner: table callbacks or callback_attempts, by callback status.',
      labelNames: ['status', 'table'],
      registers: [registry],
    }),
    retentionLastRun: new Gauge({
      name: 'herald_retention_last_run_timestamp_seconds',
      help: 'When the last retention pass of this process ended.',
      registers: [registry],
    }),
    alerts: new Counter({
      name: 'herald_alerts_total',
      help: 'Operator alerts raised by this process, per kind (chain.stopped, chain.lagging, chain.recovered, node.ineligible, node.eligible, subscription.deactivated, callbacks.exhausted, database.restarted).',
      labelNames: ['kind'],
      registers: [registry],
    }),
    alertSendFailures: new Counter({
      name: 'herald_alert_send_failures_total',
      help: 'Failed attempts to POST an alert to alerts.webhookUrl: retry (another attempt is due) or given_up (no retry left).',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    setPoolSource(source) {
      poolSource = source;
    },
  };
}
