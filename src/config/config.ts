/**
 * One typed, validated configuration object, read once at start: defaults, then an optional JSON file
 * (`--config`, HERALD_CONFIG, or ./herald.config.json when present), then environment variables, then
 * command-line flags. This is the only module that reads process.env.
 */
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { type Static, Type } from '@sinclair/typebox';
import { Value, type ValueError, ValueErrorType } from '@sinclair/typebox/value';
import {
  BLOCKCHAINS,
  CHAINS,
  type ChainFamily,
  DEFAULT_REORG_BREAKER_DEPTH,
  isBlockchain,
  isNetwork,
  networksText,
  supportsNetwork,
} from '../domain/chains.ts';
import { keyringOf } from '../store/secret-box.ts';

const Costs = Type.Object(
  {
    transactionMined: Type.Integer({ minimum: 0, default: 1000 }),
    addressTokensTransactionsConfirmed: Type.Integer({ minimum: 0, default: 1000 }),
    internalTransactionsForSpecificAmount: Type.Integer({ minimum: 0, default: 10000 }),
    blockMined: Type.Integer({ minimum: 0, default: 1000 }),
    blockHeightReached: Type.Integer({ minimum: 0, default: 10000 }),
    revertedBlock: Type.Integer({ minimum: 0, default: 1000 }),
    addressTokensTransactionsConfirmedEachConfirmation: Type.Integer({ minimum: 0, default: 1000 }),
    allAssetsPerItem: Type.Integer({ minimum: 0, default: 500 }),
    listSubscriptionsPerItem: Type.Integer({ minimum: 0, default: 1 }),
    getSubscription: Type.Integer({ minimum: 0, default: 1 }),
    /** The event stream (extension): per entry read, priced as an item of the callback log. */
    streamPerEvent: Type.Integer({ minimum: 0, default: 1 }),
    deleteSubscription: Type.Integer({ minimum: 0, default: 1 }),
    activateSubscription: Type.Integer({ minimum: 0, default: 5 }),
    /** Secret rotation (extension): priced as activate, a write of the same weight. */
    rotateSecret: Type.Integer({ minimum: 0, default: 5 }),
    /** Bulk recovery (extension): per callback queued again, charged as each chunk is queued. */
    recoverPerCallback: Type.Integer({ minimum: 0, default: 5 }),
    /** Backfill from a height (extension): per callback a backfill queues (its own blocks'; live following's are not charged). */
    backfillPerCallback: Type.Integer({ minimum: 0, default: 5 }),
    /** Replay of a block range (extension): per callback queued or sent again (a dry run sends nothing). */
    replayPerCallback: Type.Integer({ minimum: 0, default: 5 }),
    /**
     * Replay of a block range, dry run or not (extension): per block of the range, charged when the replay
     * is asked for, whether anything matches or not (reading blocks is the work).
     */
    replayPerBlock: Type.Integer({ minimum: 0, default: 1 }),
    /** Wallet and callback-domain endpoints (extensions): not priced by the contract. */
    walletsAndDomains: Type.Integer({ minimum: 0, default: 1 }),
    /** Callback Data reads (docs/reference/api.md#callback-data-reads and #settled-statuses-chains-and-prices): 100 x the vendor's 5 credits each. */
    callbackDataAddress: Type.Integer({ minimum: 0, default: 500 }),
    callbackDataBlockByHash: Type.Integer({ minimum: 0, default: 500 }),
    callbackDataBlockByHeight: Type.Integer({ minimum: 0, default: 500 }),
    callbackDataTransaction: Type.Integer({ minimum: 0, default: 500 }),
    /** docs/reference/api.md#address-internal-transactions-confirmed, #tokens-transfers-for-specific-amount and #settled-statuses-chains-and-prices: 100 x the vendor's 10 and 100 credits. */
    addressInternalTransactionsConfirmed: Type.Integer({ minimum: 0, default: 1000 }),
    addressInternalTransactionsConfirmedEachConfirmation: Type.Integer({ minimum: 0, default: 1000 }),
    tokensTransfersForSpecificAmount: Type.Integer({ minimum: 0, default: 10000 }),
    /** Coin events (docs/reference/api.md#address-coins-transactions-confirmed, #coins-transactions-for-specific-amount and #settled-statuses-chains-and-prices): 100 x the vendor's 10 and 100 credits. */
    addressCoinsTransactionsConfirmed: Type.Integer({ minimum: 0, default: 1000 }),
    coinsTransactionsForSpecificAmount: Type.Integer({ minimum: 0, default: 10000 }),
    addressCoinsTransactionsConfirmedEachConfirmation: Type.Integer({ minimum: 0, default: 1000 }),
    /** Unconfirmed (mempool) events (docs/reference/api.md#address-coins-transactions-unconfirmed, #address-tokens-transactions-unconfirmed and #settled-statuses-chains-and-prices): 100 x the vendor's 10 credits. */
    addressCoinsTransactionsUnconfirmed: Type.Integer({ minimum: 0, default: 1000 }),
    addressTokensTransactionsUnconfirmed: Type.Integer({ minimum: 0, default: 1000 }),
  },
  { additionalProperties: false, default: {} },
);

const Delivery = Type.Object(
  {
    /** A receiver that has not answered completely within this time has failed the attempt. */
    timeoutMs: Type.Integer({ minimum: 100, default: 5000 }),
    /** Requests in flight to one destination (scheme, host, port) at most, per process. */
    perDestinationConcurrency: Type.Integer({ minimum: 1, default: 16 }),
    /** Callbacks claimed per query, and in flight per process at most. */
    batchSize: Type.Integer({ minimum: 1, default: 200 }),
    maxInFlight: Type.Integer({ minimum: 1, default: 512 }),
    /**
     * How long a destination stays leased to a delivery process after the process last renewed it
     * (docs/concepts/delivery.md): a live process renews the leases of the destinations it has callbacks
     * on their way to every third of this, so this is how long the destinations of a process that died
     * wait before another process takes them.
     */
    leaseSeconds: Type.Integer({ minimum: 1, default: 15 }),
    /** Look for due callbacks at least this often (new ones wake the worker at once). */
    pollIntervalMs: Type.Integer({ minimum: 10, default: 1000 }),
    retryScheduleSeconds: Type.Array(Type.Integer({ minimum: 1 }), { default: [30, 120, 600, 1800, 3600, 7200, 14400, 28800, 43200] }),
    retryJitter: Type.Number({ minimum: 0, maximum: 1, default: 0.2 }),
    maxRetryAfterSeconds: Type.Integer({ minimum: 1, default: 43200 }),
    /**
     * Networks (CIDR) EVERY customer's callbacks may reach although not public, e.g. ["10.1.0.0/16"]: for
     * single-tenant installs. A multi-tenant install allows networks per customer (customers.allow_networks).
     */
    allowNetworks: Type.Array(Type.String(), { default: [] }),
    /** PEM file of extra CA certificates trusted for callback and verification requests. */
    caFile: Type.Optional(Type.String()),
    /** DNS servers ("host:port") for callback destinations and TXT verification; default: the system's. */
    dnsServers: Type.Array(Type.String(), { default: [] }),
    /** Bytes of a receiver's response kept in the attempt log. */
    responseBodyLimit: Type.Integer({ minimum: 0, default: 4096 }),
  },
  { additionalProperties: false, default: {} },
);

/** Backfill from a height and replay of a block range (docs/guides/recover-and-replay.md "Backfill and replay"). */
const BlockJobs = Type.Object(
  {
    /** How far back a subscription's fromBlockHeight may reach, in blocks below the chain's processed height. */
    maxBackfillDepth: Type.Integer({ minimum: 0, default: 100_000 }),
    /** Blocks one replay covers at most (toBlockHeight - fromBlockHeight + 1). */
    maxReplayBlocks: Type.Integer({ minimum: 1, default: 10_000 }),
    /** Blocks a dry-run replay evaluates at most (it answers synchronously). */
    maxDryRunBlocks: Type.Integer({ minimum: 1, default: 1_000 }),
    /** Dry-run replays one customer may have in progress at once, per API process; one more is refused (429). */
    dryRunsPerCustomer: Type.Integer({ minimum: 1, default: 2 }),
    /**
     * Blocks one customer may have waiting in the backfill and replay jobs of one chain (the rest of each
     * running job's range); a replay or backfill that would exceed it is refused until they are worked off.
     */
    maxQueuedBlocksPerCustomer: Type.Integer({ minimum: 1, default: 100_000 }),
    /**
     * How long the runner works one customer's job before it turns to the next customer's (round-robin,
     * the customer served least recently first): one customer's long queue delays another's job by about
     * a turn per customer ahead, not by the whole queue.
     */
    turnMs: Type.Integer({ minimum: 10, maximum: 60_000, default: 500 }),
    /** Blocks the ingest role fetches at once per chain for these jobs (its own node connections, beside the follower's). */
    concurrency: Type.Integer({ minimum: 1, maximum: 256, default: 8 }),
    /** Blocks per batch transaction at most. */
    batchBlocks: Type.Integer({ minimum: 1, maximum: 10_000, default: 200 }),
  },
  { additionalProperties: false, default: {} },
);

const Retention = Type.Object(
  {
    /** Delivered callbacks (and their attempts) are deleted this many days after they finished. */
    deliveredDays: Type.Number({ minimum: 0, default: 30 }),
    /** Failed callbacks (retries exhausted, receiver gone), likewise. */
    failedDays: Type.Number({ minimum: 0, default: 90 }),
    /** Cancelled callbacks (subscription deleted, reorganisation), likewise. */
    cancelledDays: Type.Number({ minimum: 0, default: 7 }),
    /** The delivery role prunes at start and then this often; false: only `herald prune` does. */
    enabled: Type.Boolean({ default: true }),
    intervalSeconds: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 3600 }),
    /** Callbacks deleted per statement (one short transaction each). */
    batchSize: Type.Integer({ minimum: 1, maximum: 100_000, default: 2000 }),
    /** Pause between two batches, leaving the database to delivery. */
    // Unset: 0 while the pruner's backend runs at a lower priority (the kernel already gives delivery the
    // CPU first), 10 otherwise (pacingOf in src/delivery/retention.ts).
    pauseMs: Type.Optional(Type.Integer({ minimum: 0 })),
    /**
     * Largest share of the pass's time spent in batches: after a batch that took t, the pruner pauses
     * t * (1 - dutyCycle) / dutyCycle (at least pauseMs), so it yields more when the database is slower.
     * Unset: 1 while the pruner's backend runs at a lower priority (backendNice took: it only gets the
     * CPU the rest leaves idle), 0.5 otherwise (pacingOf in src/delivery/retention.ts).
     */
    dutyCycle: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1 })),
    /**
     * Nice level (0-19) of the pruner's own database backend when it is a local process herald may
     * renice (src/store/backend-priority.ts): it then uses the CPU the rest leaves idle. 0: unchanged.
     */
    backendNice: Type.Integer({ minimum: 0, maximum: 19, default: 19 }),
  },
  { additionalProperties: false, default: {} },
);
export type RetentionConfig = Static<typeof Retention>;
/** The retention settings with every default (tests, benchmarks). */
export const defaultRetention = (): RetentionConfig => Value.Default(Retention, {}) as RetentionConfig;

const Alerts = Type.Object(
  {
    /** Where alerts are POSTed (https); absent: alerts are only logged (warn) and counted (herald_alerts_total). */
    webhookUrl: Type.Optional(Type.String({ minLength: 1 })),
    /** Signs the alerts (Standard Webhooks): "whsec_<base64>" or any other string (its UTF-8 bytes). Required with webhookUrl. */
    secret: Type.Optional(Type.String({ minLength: 1 })),
    /** A chain further behind its node than this (seconds) for holdSeconds is lagging; this long without any sign of following, stopped. */
    lagSeconds: Type.Integer({ minimum: 1, default: 300 }),
    /** A state (lagging, recovered, node ineligible or eligible again) is alerted once it has held this long; a stopped chain at once. */
    holdSeconds: Type.Number({ minimum: 0, default: 60 }),
    /** Deactivations and exhausted callbacks: one alert per customer, destination and reason at most this often, with the count. */
    groupSeconds: Type.Number({ minimum: 0, default: 300 }),
    /** How often the monitor looks (and sends due alerts). */
    intervalSeconds: Type.Number({ minimum: 0.05, default: 10 }),
    /** Waits before the retries of an alert the webhook did not take (2xx); after the last, it is given up (logged at error). */
    retrySeconds: Type.Array(Type.Number({ minimum: 0 }), { default: [10, 30, 120, 600, 1800, 3600] }),
  },
  { additionalProperties: false, default: {} },
);
export type AlertsConfig = Static<typeof Alerts>;

/** Secrets at rest (docs/operations/secrets-at-rest.md): the callback secrets stored encrypted, with these keys. */
const Secrets = Type.Object(
  {
    /** The key new secrets are encrypted with: 32 random bytes in base64 (openssl rand -base64 32). */
    encryptionKey: Type.Optional(Type.String({ minLength: 1 })),
    /** Instead of encryptionKey: a file whose first line is that key, and whose further lines are older keys. */
    encryptionKeyFile: Type.Optional(Type.String({ minLength: 1 })),
    /** Older keys: they only decrypt (until `herald secrets rotate-key` has moved every row to the current key). */
    previousEncryptionKeys: Type.Array(Type.String({ minLength: 1 }), { default: [] }),
  },
  { additionalProperties: false, default: {} },
);
export type SecretsConfig = Static<typeof Secrets>;

const Chain = Type.Object(
  {
    blockchain: Type.String(),
    network: Type.String(),
    /**
     * The chain the nodes run, when it is not the label's (docs/reference/chains.md "Chain identity"): a development or test node,
     * e.g. 31337 for a local EVM node, "regtest" for a Bitcoin-family one. Absent: the label's own (ethereum
     * mainnet is eth_chainId 1, litecoin testnet getblockchaininfo.chain "test" with testnet's genesis block, ...).
     */
    chainId: Type.Optional(Type.Union([Type.Integer({ minimum: 0 }), Type.String({ minLength: 1 })])),
    /** The node's JSON-RPC (or HTTP API) URL; credentials may be in it (they are never logged). A pool of one. */
    rpcUrl: Type.Optional(Type.String({ minLength: 1 })),
    /**
     * Several nodes of the chain, instead of rpcUrl: blocks are read from the eligible ones (answering, not
     * syncing, head within maxLagBlocks of the best), a failed request is retried on another.
     */
    rpcUrls: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { minItems: 1 })),
    /** Bitcoin-family nodes: RPC user and password (also accepted as user:password@ in rpcUrl). */
    rpcUser: Type.Optional(Type.String({ minLength: 1 })),
    rpcPassword: Type.Optional(Type.String()),
    /** Bitcoin-family nodes: the node's `.cookie` file (re-read when the node restarts and rotates it). */
    rpcCookieFile: Type.Optional(Type.String({ minLength: 1 })),
    /** Optional WebSocket URL: new heads wake the follower at once instead of at its next poll. */
    wsUrl: Type.Optional(Type.String({ minLength: 1 })),
    /** The WebSocket URLs of the nodes of rpcUrls, in the same order (fewer is fine: the others are polled). */
    wsUrls: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
    /**
     * Bitcoin-family nodes: the node's ZMQ `rawtx` publisher (`-zmqpubrawtx=tcp://...`): new mempool
     * transactions are pushed, getrawmempool polling stays as the safety net (every mempoolPollIntervalMs).
     */
    zmqUrl: Type.Optional(Type.String({ pattern: '^(tcp|ipc)://.+' })),
    /** The ZMQ URLs of the nodes of rpcUrls, in the same order (fewer is fine: the others are polled). */
    zmqUrls: Type.Optional(Type.Array(Type.String({ pattern: '^(tcp|ipc)://.+' }))),
    /** Several nodes: a node whose head is more than this many blocks behind the best eligible head is not used. */
    maxLagBlocks: Type.Optional(Type.Integer({ minimum: 0, default: 3 })),
    /**
     * Several nodes: a reorganisation deeper than this is acted on only when a second node agrees on the new
     * chain; otherwise the node that claims it is made ineligible and herald does not rewind.
     */
    reorgQuorumDepth: Type.Optional(Type.Integer({ minimum: 0, default: 2 })),
    /**
     * The deep-reorganisation breaker (docs/concepts/confirmations-and-reorganisations.md#the-deep-reorganisation-breaker): a
     * reorganisation deeper than this many blocks, or nodes disagreeing deeper than it, holds every confirmed callback of
     * the chain until an operator releases it (`herald chains release`). Default per blockchain
     * (src/domain/chains.ts DEFAULT_REORG_BREAKER_DEPTH); 0 turns the breaker off.
     */
    reorgBreakerDepth: Type.Optional(Type.Integer({ minimum: 0, maximum: 1000 })),
    /** Confirmations of confirmed events and of the wallet ledger on this chain; default: defaultConfirmations. */
    confirmations: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
    /** How often the node's head is polled when caught up: every second, a block mined is seen within one (half a second on average) without push notifications. */
    pollIntervalMs: Type.Integer({ minimum: 10, default: 1000 }),
    /**
     * Unconfirmed events (docs/reference/api.md#address-coins-transactions-unconfirmed and #address-tokens-transactions-unconfirmed): read the node's mempool beside the block follower, on the
     * families that have a mempool reader (Bitcoin family, EVM); default true.
     */
    mempool: Type.Optional(Type.Boolean()),
    /**
     * How often the mempool is polled for new transactions (getrawmempool, eth_getFilterChanges); default 1000.
     * Where the node pushes them (zmqUrl; wsUrl while its subscription is up), default 30000: polling is then
     * the safety net, and a gap in the push (a ZMQ sequence jump, a reconnection) polls at once.
     */
    mempoolPollIntervalMs: Type.Optional(Type.Integer({ minimum: 10 })),
    /**
     * While the block follower catches up (blocks back to back), the mempool reader reads a batch at most
     * this often, so a burst of pending transactions does not slow the blocks; 0 lets it take every gap
     * between two blocks. Default 500.
     */
    mempoolCatchUpYieldMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 60_000 })),
    /**
     * The `evicted` reason of the DROPPED events (docs/concepts/deposit-safety.md#evicted): an announced
     * unconfirmed transaction is called evicted only when the node found it in no mempool at three
     * consecutive checks (one every half span) spanning at least this, and proved it unmined. Default
     * 600000 (ten minutes).
     */
    mempoolEvictionSpanMs: Type.Optional(Type.Integer({ minimum: 100, maximum: 86_400_000 })),
    /** The lowest block the node serves (a pruned node): a backfill's fromBlockHeight may not be lower. Default 0. */
    lowestBlockHeight: Type.Optional(Type.Integer({ minimum: 0 })),
    /** First block to follow when the chain has no cursor yet; default: the node's head. */
    startHeight: Type.Optional(Type.Integer({ minimum: 0 })),
    /** Node requests in flight at most when fetching one block's receipts or traces one by one. */
    concurrency: Type.Integer({ minimum: 1, maximum: 256, default: 8 }),
    /** A node request that takes longer has failed (and is retried with backoff). */
    requestTimeoutMs: Type.Integer({ minimum: 100, default: 10000 }),
    /**
     * Bitcoin-family chains: worker threads per node that read, parse and normalise blocks, so a block's
     * megabytes of JSON are never parsed on the main thread; 0: on the main thread. Default 1.
     */
    blockWorkers: Type.Optional(Type.Integer({ minimum: 0, maximum: 16 })),
    /**
     * The safety verdict's `dust` flag (docs/concepts/deposit-safety.md#dust): an incoming amount below this, in base
     * units (satoshi, wei, sun, drop), is flagged; "0" turns it off. Default: Bitcoin family, the node's own
     * threshold of the output's script type (Bitcoin Core: 546 legacy, 294 segwit v0 key hash, 330 segwit v0
     * script hash and taproot; litecoin ten times that; dogecoin 1000000 for every output); other chains 0 (off).
     */
    dustThreshold: Type.Optional(Type.String({ pattern: '^[0-9]{1,40}$' })),
    /**
     * Well-known tokens of this chain besides those herald ships (src/matching/known-tokens.ts, mainnet only): a
     * token with the same symbol or name and another contract is flagged `lookalike-token`. EVM and Tron: the
     * contract address; Omni: the property id.
     */
    knownTokens: Type.Optional(
      Type.Array(
        Type.Object(
          { contract: Type.String({ minLength: 1 }), symbol: Type.Optional(Type.String({ minLength: 1 })), name: Type.Optional(Type.String({ minLength: 1 })) },
          { additionalProperties: false },
        ),
      ),
    ),
  },
  { additionalProperties: false },
);
/**
 * A chain entry. loadConfig fills rpcUrls and wsUrls from rpcUrl and wsUrl (and rpcUrl and wsUrl with the
 * first node's) and the defaults; entries built in code may give either spelling: read the nodes with
 * chainNodes and the optional numbers with their defaults.
 */
export type ChainConfig = Static<typeof Chain>;

export const DEFAULT_MAX_LAG_BLOCKS = 3;
/** Block worker threads per Bitcoin-family node when blockWorkers is not given. */
export const DEFAULT_BLOCK_WORKERS = 1;
export const DEFAULT_REORG_QUORUM_DEPTH = 2;

/** The chain's breaker depth: its own reorgBreakerDepth, else the blockchain's default; 0: off. */
export function reorgBreakerDepthOf(chain: Pick<ChainConfig, 'blockchain' | 'reorgBreakerDepth'>): number {
  if (chain.reorgBreakerDepth !== undefined) return chain.reorgBreakerDepth;
  return isBlockchain(chain.blockchain) ? DEFAULT_REORG_BREAKER_DEPTH[chain.blockchain] : 0;
}

/** The chain's nodes: each RPC URL with its WebSocket and ZMQ URLs when given (same order). A single rpcUrl is a pool of one. */
export function chainNodes(chain: ChainConfig): { rpcUrl: string; wsUrl?: string; zmqUrl?: string }[] {
  const rpcUrls = chain.rpcUrls ?? (chain.rpcUrl !== undefined ? [chain.rpcUrl] : []);
  const wsUrls = chain.wsUrls ?? (chain.wsUrl !== undefined ? [chain.wsUrl] : []);
  const zmqUrls = chain.zmqUrls ?? (chain.zmqUrl !== undefined ? [chain.zmqUrl] : []);
  return rpcUrls.map((rpcUrl, i) => ({
    rpcUrl,
    ...(wsUrls[i] !== undefined ? { wsUrl: wsUrls[i] } : {}),
    ...(zmqUrls[i] !== undefined ? { zmqUrl: zmqUrls[i] } : {}),
  }));
}

/** Subscription creation (docs/reference/chains.md "Chains without a node"). */
const Subscriptions = Type.Object(
  {
    /**
     * Accept subscriptions on chains no node of this installation follows (to set them up before the node is
     * added); they send nothing until one is. Default false: such a create is refused with 409 invalid_data.
     */
    allowUnfollowedChains: Type.Boolean({ default: false }),
  },
  { additionalProperties: false, default: {} },
);

/** Single-tenant installs (docs/operations/single-tenant.md). */
const Billing = Type.Object(
  {
    /**
     * false: no credits, plans or per-call prices anywhere: every call is free (costs read as 0), no 402, no
     * x-credits-* headers, every customer may use mainnets and any number of subscriptions (the per-key
     * request rate stays: it protects the service), and the console shows no credits.
     */
    enabled: Type.Boolean({ default: true }),
  },
  { additionalProperties: false, default: {} },
);

export const ROLES = ['api', 'ingest', 'delivery'] as const;
export type Role = (typeof ROLES)[number];

export const ConfigSchema = Type.Object(
  {
    /** What this process does; several processes on one database may split the roles. */
    roles: Type.Array(Type.Union(ROLES.map((r) => Type.Literal(r))), { default: [...ROLES], minItems: 1 }),
    delivery: Delivery,
    retention: Retention,
    blockJobs: BlockJobs,
    subscriptions: Subscriptions,
    /** Operator alerts (delivery role): chains stopped or lagging, nodes ineligible, deactivations, exhausted callbacks. */
    alerts: Alerts,
    secrets: Secrets,
    /** The chains this deployment follows (ingest role); also HERALD_RPC_<BLOCKCHAIN>_<NETWORK>. */
    chains: Type.Array(Chain, { default: [] }),
    /** Port of the https://{domain}/.well-known/... proof fetched to verify a callback domain (tests, proxies). */
    domainVerificationPort: Type.Integer({ minimum: 1, maximum: 65535, default: 443 }),
    host: Type.String({ default: '127.0.0.1' }),
    port: Type.Integer({ minimum: 0, maximum: 65535, default: 8080 }),
    /**
     * A process without the api role serves /metrics, /healthz and /readyz on this port (on `host`), so
     * delivery and ingest processes can be scraped and probed too. Absent: they listen on nothing.
     */
    metricsPort: Type.Optional(Type.Integer({ minimum: 0, maximum: 65535 })),
    dataDir: Type.String({ default: './data' }),
    /** PostgreSQL server to use; when absent an embedded server is started under dataDir. */
    databaseUrl: Type.Optional(Type.String()),
    databasePoolSize: Type.Integer({ minimum: 1, maximum: 200, default: 20 }),
    /**
     * The one connection that needs a session of its own (LISTEN for the change announcements): a direct
     * connection to the server when databaseUrl goes through a transaction-mode pooler. Default databaseUrl.
     */
    listenDatabaseUrl: Type.Optional(Type.String()),
    /**
     * Named prepared statements per connection; false behind a transaction-mode pooler (PgBouncer 1.18).
     * Unset: true, except that with databaseUrl a probe at start looks for such a pooler (store/pooler-probe.ts).
     */
    databasePreparedStatements: Type.Optional(Type.Boolean()),
    logLevel: Type.Union(
      ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
      { default: 'info' },
    ),
    /** Log one line per completed request (off by default: at thousands of requests/s it is noise). */
    logRequests: Type.Boolean({ default: false }),
    /** Largest accepted request body in bytes (contract: 64 KiB). Bulk creates take up to 16 MiB. */
    bodyLimit: Type.Integer({ minimum: 1024, default: 65536 }),
    /** Bulk create requests one API key may have in progress at once, per API process; one more is refused (429) before its body is read. */
    bulkRequestsPerKey: Type.Integer({ minimum: 1, default: 2 }),
    /** Confirmations of the confirmed events when a subscription does not say (contract: 3). */
    defaultConfirmations: Type.Integer({ minimum: 1, maximum: 100, default: 3 }),
    costs: Costs,
    billing: Billing,
    /** Plan given to customers created without explicit values (and to the first-start `default`). */
    defaultPlan: Type.Object(
      {
        credits: Type.Integer({ minimum: 0, default: 10_000_000 }),
        mainnetAllowed: Type.Boolean({ default: true }),
        maxActiveSubscriptions: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { default: null }),
        requestsPerSecond: Type.Integer({ minimum: 1, default: 100 }),
      },
      { additionalProperties: false, default: {} },
    ),
    /** Seconds to wait for in-flight requests on SIGTERM/SIGINT before closing anyway. */
    shutdownGraceSeconds: Type.Number({ minimum: 0, default: 10 }),
  },
  { additionalProperties: false },
);

export type Config = Static<typeof ConfigSchema>;
export type CostName = keyof Config['costs'];

/** Values given on the command line; they win over everything else. */
export interface ConfigOverrides {
  configFile?: string;
  host?: string;
  port?: number;
  dataDir?: string;
  databaseUrl?: string;
  roles?: string[];
}

export class ConfigError extends Error {}

function readFile(path: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(readFileSync(path, 'utf8'));
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('it is not a JSON object');
    // "$schema" names the file's JSON Schema for editors (deploy/herald.config.schema.json): not a setting.
    const { $schema: _schema, ...settings } = parsed as Record<string, unknown>;
    return settings;
  } catch (error) {
    throw new ConfigError(`Cannot read the configuration file ${path}: ${(error as Error).message}.`);
  }
}

/**
 * Every HERALD_* variable loadConfig reads (besides the per-chain ones, CHAIN_VARIABLE_PREFIXES): `herald
 * config check` names any other as unknown, a misspelt name being otherwise silently ignored.
 */
const ENVIRONMENT_VARIABLES = [
  'HERALD_CONFIG',
  'HERALD_HOST',
  'HERALD_PORT',
  'HERALD_METRICS_PORT',
  'HERALD_DATA_DIR',
  'HERALD_LOG_LEVEL',
  'HERALD_LOG_REQUESTS',
  'HERALD_DB_POOL_SIZE',
  'HERALD_LISTEN_DATABASE_URL',
  'HERALD_DB_PREPARED_STATEMENTS',
  'HERALD_ROLES',
  'HERALD_SUBSCRIPTIONS_ALLOW_UNFOLLOWED_CHAINS',
  'HERALD_DELIVERY_ALLOW_NETWORKS',
  'HERALD_DELIVERY_CA_FILE',
  'HERALD_ALERTS_WEBHOOK_URL',
  'HERALD_ALERTS_SECRET',
  'HERALD_ALERTS_LAG_SECONDS',
  'HERALD_SECRETS_ENCRYPTION_KEY',
  'HERALD_SECRETS_ENCRYPTION_KEY_FILE',
  'HERALD_SECRETS_PREVIOUS_ENCRYPTION_KEYS',
  'HERALD_BILLING_ENABLED',
];
/** HERALD_<PREFIX><BLOCKCHAIN>_<NETWORK>, read by chainsFromEnvironment. */
const CHAIN_VARIABLE_PREFIXES = ['HERALD_RPC_COOKIE_', 'HERALD_RPC_', 'HERALD_WS_', 'HERALD_ZMQ_', 'HERALD_CHAIN_ID_'];

/** The HERALD_* variables of `env` that herald does not read (a typo, or a chain it does not know); HERALD_TEST_* are the tests'. */
export function unknownEnvironmentVariables(env: NodeJS.ProcessEnv): string[] {
  const chainNames = new Set(BLOCKCHAINS.flatMap((b) => CHAINS[b].networks.map((n) => `${b}_${n}`.toUpperCase().replaceAll('-', '_'))));
  return Object.keys(env)
    .filter((name) => name.startsWith('HERALD_') && !name.startsWith('HERALD_TEST_') && !ENVIRONMENT_VARIABLES.includes(name))
    .filter((name) => !CHAIN_VARIABLE_PREFIXES.some((prefix) => name.startsWith(prefix) && chainNames.has(name.slice(prefix.length))))
    .sort();
}

function fromEnvironment(env: NodeJS.ProcessEnv): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (env.DATABASE_URL) out.databaseUrl = env.DATABASE_URL;
  if (env.HERALD_HOST) out.host = env.HERALD_HOST;
  if (env.HERALD_PORT) out.port = Number(env.HERALD_PORT);
  if (env.HERALD_METRICS_PORT) out.metricsPort = Number(env.HERALD_METRICS_PORT);
  if (env.HERALD_DATA_DIR) out.dataDir = env.HERALD_DATA_DIR;
  if (env.HERALD_LOG_LEVEL) out.logLevel = env.HERALD_LOG_LEVEL;
  if (env.HERALD_LOG_REQUESTS) out.logRequests = env.HERALD_LOG_REQUESTS === 'true' || env.HERALD_LOG_REQUESTS === '1';
  if (env.HERALD_DB_POOL_SIZE) out.databasePoolSize = Number(env.HERALD_DB_POOL_SIZE);
  if (env.HERALD_LISTEN_DATABASE_URL) out.listenDatabaseUrl = env.HERALD_LISTEN_DATABASE_URL;
  if (env.HERALD_DB_PREPARED_STATEMENTS) out.databasePreparedStatements = booleanFromEnvironment(env.HERALD_DB_PREPARED_STATEMENTS);
  if (env.HERALD_ROLES) out.roles = env.HERALD_ROLES.split(',').map((r) => r.trim());
  return out;
}

/** Billing settings from the environment, merged into the file's billing section. */
function billingFromEnvironment(env: NodeJS.ProcessEnv): Record<string, unknown> {
  return env.HERALD_BILLING_ENABLED ? { enabled: booleanFromEnvironment(env.HERALD_BILLING_ENABLED) } : {};
}

/** Subscription settings from the environment, merged into the file's subscriptions section. */
function subscriptionsFromEnvironment(env: NodeJS.ProcessEnv): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (env.HERALD_SUBSCRIPTIONS_ALLOW_UNFOLLOWED_CHAINS) out.allowUnfollowedChains = booleanFromEnvironment(env.HERALD_SUBSCRIPTIONS_ALLOW_UNFOLLOWED_CHAINS);
  return out;
}

/** true/1 and false/0; anything else is left as is, for the validation to name it. */
function booleanFromEnvironment(value: string): unknown {
  if (value === 'true' || value === '1') return true;
  if (value === 'false' || value === '0') return false;
  return value;
}

/** Delivery settings from the environment, merged into the file's delivery section. */
function deliveryFromEnvironment(env: NodeJS.ProcessEnv): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (env.HERALD_DELIVERY_ALLOW_NETWORKS !== undefined) {
    out.allowNetworks = env.HERALD_DELIVERY_ALLOW_NETWORKS.split(',')
      .map((n) => n.trim())
      .filter(Boolean);
  }
  if (env.HERALD_DELIVERY_CA_FILE) out.caFile = env.HERALD_DELIVERY_CA_FILE;
  return out;
}

/** Alert settings from the environment, merged into the file's alerts section. */
function alertsFromEnvironment(env: NodeJS.ProcessEnv): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (env.HERALD_ALERTS_WEBHOOK_URL) out.webhookUrl = env.HERALD_ALERTS_WEBHOOK_URL;
  if (env.HERALD_ALERTS_SECRET) out.secret = env.HERALD_ALERTS_SECRET;
  if (env.HERALD_ALERTS_LAG_SECONDS) out.lagSeconds = Number(env.HERALD_ALERTS_LAG_SECONDS);
  return out;
}

/** Secrets-at-rest settings from the environment, merged into the file's secrets section. */
function secretsFromEnvironment(env: NodeJS.ProcessEnv): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (env.HERALD_SECRETS_ENCRYPTION_KEY) out.encryptionKey = env.HERALD_SECRETS_ENCRYPTION_KEY;
  if (env.HERALD_SECRETS_ENCRYPTION_KEY_FILE) out.encryptionKeyFile = env.HERALD_SECRETS_ENCRYPTION_KEY_FILE;
  if (env.HERALD_SECRETS_PREVIOUS_ENCRYPTION_KEYS) {
    out.previousEncryptionKeys = env.HERALD_SECRETS_PREVIOUS_ENCRYPTION_KEYS.split(',')
      .map((k) => k.trim())
      .filter(Boolean);
  }
  return out;
}

/** The keys must be readable and well formed now, not at the first secret written. */
function checkSecrets(secrets: SecretsConfig): string[] {
  try {
    keyringOf(secrets);
    return [];
  } catch (error) {
    return [`  /secrets: ${(error as Error).message}`];
  }
}

/** The webhook must be an https URL and come with its secret (an unsigned alert could be forged). */
function checkAlerts(alerts: AlertsConfig): string[] {
  if (alerts.webhookUrl === undefined) return alerts.secret === undefined ? [] : ['  /alerts/secret: given without alerts.webhookUrl'];
  const problems: string[] = [];
  let url: URL | undefined;
  try {
    url = new URL(alerts.webhookUrl);
  } catch {
    problems.push('  /alerts/webhookUrl: not a URL');
  }
  if (url && url.protocol !== 'https:') problems.push(`  /alerts/webhookUrl: must be https, not ${url.protocol}`);
  if (alerts.secret === undefined) problems.push('  /alerts/secret: required with alerts.webhookUrl (alerts are signed)');
  else if (alerts.secret.startsWith('whsec_') && Buffer.from(alerts.secret.slice(6), 'base64').length < 16)
    problems.push('  /alerts/secret: a whsec_ secret must hold at least 16 base64-encoded bytes');
  return problems;
}

/**
 * Chains from HERALD_RPC_<BLOCKCHAIN>_<NETWORK> (upper case, dashes as underscores; a comma-separated list
 * for several nodes), optional HERALD_WS_<BLOCKCHAIN>_<NETWORK> and HERALD_ZMQ_<BLOCKCHAIN>_<NETWORK> (likewise, in the same order) and
 * HERALD_RPC_COOKIE_<BLOCKCHAIN>_<NETWORK> (a Bitcoin-family node's cookie file) and HERALD_CHAIN_ID_<BLOCKCHAIN>_<NETWORK>
 * (the chain a development node runs, see chainId), merged over the file's entry for the same chain: the
 * variable's nodes replace the file's.
 */
function chainsFromEnvironment(env: NodeJS.ProcessEnv, fileChains: unknown): unknown[] {
  const chains = Array.isArray(fileChains) ? fileChains.map((c) => ({ ...(c as Record<string, unknown>) })) : [];
  const envName = (blockchain: string, network: string) => `${blockchain}_${network}`.toUpperCase().replaceAll('-', '_');
  for (const blockchain of BLOCKCHAINS) {
    for (const network of CHAINS[blockchain].networks) {
      const rpcUrl = env[`HERALD_RPC_${envName(blockchain, network)}`];
      const wsUrl = env[`HERALD_WS_${envName(blockchain, network)}`];
      const zmqUrl = env[`HERALD_ZMQ_${envName(blockchain, network)}`];
      const cookieFile = env[`HERALD_RPC_COOKIE_${envName(blockchain, network)}`];
      const chainId = env[`HERALD_CHAIN_ID_${envName(blockchain, network)}`];
      if (!rpcUrl && !wsUrl && !zmqUrl && !cookieFile && !chainId) continue;
      let entry = chains.find((c) => c.blockchain === blockchain && c.network === network);
      if (!entry) {
        entry = { blockchain, network };
        chains.push(entry);
      }
      if (rpcUrl) {
        delete entry.rpcUrl;
        entry.rpcUrls = urlList(rpcUrl);
      }
      if (wsUrl) {
        delete entry.wsUrl;
        entry.wsUrls = urlList(wsUrl);
      }
      if (zmqUrl) {
        delete entry.zmqUrl;
        entry.zmqUrls = urlList(zmqUrl);
      }
      if (cookieFile) entry.rpcCookieFile = cookieFile;
      if (chainId) entry.chainId = chainId.trim();
    }
  }
  return chains;
}

function urlList(value: string): string[] {
  return value
    .split(',')
    .map((u) => u.trim())
    .filter(Boolean);
}

/**
 * rpcUrls and wsUrls from rpcUrl and wsUrl when the entry gives the single form (a pool of one), and rpcUrl
 * and wsUrl as the first node's, so that both spellings read the same everywhere after loading.
 */
function normaliseNodes(chain: ChainConfig): ChainConfig {
  const nodes = chainNodes(chain);
  const out: ChainConfig = {
    ...chain,
    rpcUrls: nodes.map((n) => n.rpcUrl),
    wsUrls: nodes.flatMap((n) => (n.wsUrl ? [n.wsUrl] : [])),
    rpcUrl: nodes[0]?.rpcUrl,
  };
  if (out.wsUrls?.[0] !== undefined) out.wsUrl = out.wsUrls[0];
  // zmqUrls only when given (no empty list): most chains have none.
  const zmqUrls = nodes.flatMap((n) => (n.zmqUrl ? [n.zmqUrl] : []));
  if (zmqUrls.length > 0) {
    out.zmqUrls = zmqUrls;
    out.zmqUrl = zmqUrls[0];
  }
  return out;
}

/** A declared chainId must be one the family's nodes can say (node-identity.ts compares it with their answer). */
function checkChainId(family: ChainFamily, chainId: string | number): string | undefined {
  const value = String(chainId).trim();
  if (family === 'evm' && !/^([0-9]+|0x[0-9a-fA-F]+)$/.test(value)) return `an EVM chain id is a number (eth_chainId, e.g. 31337), not '${value}'`;
  if (family === 'xrp' && !/^[0-9]+$/.test(value)) return `an XRP network id is a number (server_info network_id, e.g. 1), not '${value}'`;
  if (family === 'tron' && !/^[0-9a-fA-F]{64}$/.test(value)) return `a Tron chain is named by its genesis block id (64 hex digits), not '${value}'`;
  if (family === 'utxo' && /^[0-9]+$/.test(value))
    return `a Bitcoin-family chain is named as getblockchaininfo.chain says it ('main', 'test', 'regtest'), not ${value}`;
  return undefined;
}

/** A chain entry must name a known pair, once. */
function checkChains(chains: ChainConfig[]): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  chains.forEach((c, i) => {
    if (c.rpcUrl === undefined && c.rpcUrls === undefined) problems.push(`  /chains/${i}: give the node's URL, rpcUrl (one node) or rpcUrls (several)`);
    if (c.rpcUrl !== undefined && c.rpcUrls !== undefined) problems.push(`  /chains/${i}: give either rpcUrl or rpcUrls, not both`);
    if (c.wsUrl !== undefined && c.wsUrls !== undefined) problems.push(`  /chains/${i}: give either wsUrl or wsUrls, not both`);
    const rpcCount = c.rpcUrls?.length ?? (c.rpcUrl !== undefined ? 1 : 0);
    const wsCount = c.wsUrls?.length ?? (c.wsUrl !== undefined ? 1 : 0);
    if (wsCount > rpcCount) problems.push(`  /chains/${i}: ${wsCount} WebSocket URLs for ${rpcCount} node(s); wsUrls go with rpcUrls, in the same order`);
    if (c.zmqUrl !== undefined && c.zmqUrls !== undefined) problems.push(`  /chains/${i}: give either zmqUrl or zmqUrls, not both`);
    const zmqCount = c.zmqUrls?.length ?? (c.zmqUrl !== undefined ? 1 : 0);
    if (zmqCount > rpcCount) problems.push(`  /chains/${i}: ${zmqCount} ZMQ URLs for ${rpcCount} node(s); zmqUrls go with rpcUrls, in the same order`);
    if (zmqCount > 0 && isBlockchain(c.blockchain) && CHAINS[c.blockchain].family !== 'utxo')
      problems.push(`  /chains/${i}: zmqUrl is for Bitcoin-family nodes (their -zmqpubrawtx); EVM nodes push pending transactions over wsUrl`);
    if (c.rpcUrls && new Set(c.rpcUrls).size !== c.rpcUrls.length) problems.push(`  /chains/${i}/rpcUrls: a node is listed twice`);
    if (!isBlockchain(c.blockchain)) problems.push(`  /chains/${i}/blockchain: '${c.blockchain}' is not one of ${BLOCKCHAINS.join(', ')}`);
    else if (!isNetwork(c.network) || !supportsNetwork(c.blockchain, c.network))
      problems.push(`  /chains/${i}/network: ${c.blockchain} takes ${networksText(c.blockchain)}, not '${c.network}'`);
    const credentials = [c.rpcUser !== undefined || c.rpcPassword !== undefined, c.rpcCookieFile !== undefined];
    if (credentials.some(Boolean) && isBlockchain(c.blockchain) && CHAINS[c.blockchain].family !== 'utxo')
      problems.push(`  /chains/${i}: rpcUser, rpcPassword and rpcCookieFile are for Bitcoin-family nodes; put other nodes' credentials in rpcUrl`);
    else if (credentials.every(Boolean)) problems.push(`  /chains/${i}: give either rpcUser and rpcPassword or rpcCookieFile, not both`);
    else if ((c.rpcUser === undefined) !== (c.rpcPassword === undefined)) problems.push(`  /chains/${i}: rpcUser and rpcPassword go together`);
    const chainIdProblem = c.chainId !== undefined && isBlockchain(c.blockchain) ? checkChainId(CHAINS[c.blockchain].family, c.chainId) : undefined;
    if (chainIdProblem) problems.push(`  /chains/${i}/chainId: ${chainIdProblem}`);
    const key = `${c.blockchain}/${c.network}`;
    if (seen.has(key)) problems.push(`  /chains/${i}: ${key} is configured twice`);
    seen.add(key);
  });
  return problems;
}

/** TypeBox's message, but an unknown key says so (a misspelt setting is the usual cause). */
function errorText(error: ValueError): string {
  if (error.type === ValueErrorType.ObjectAdditionalProperties) return 'unknown key (not a setting of herald: see deploy/herald.config.schema.json)';
  return error.message;
}

export function loadConfig(overrides: ConfigOverrides = {}, env: NodeJS.ProcessEnv = process.env): Config {
  const explicitFile = overrides.configFile ?? env.HERALD_CONFIG;
  const fileName = explicitFile ?? (existsSync('herald.config.json') ? 'herald.config.json' : undefined);
  const file = fileName ? readFile(resolve(fileName)) : {};
  const flags = Object.fromEntries(
    Object.entries({ host: overrides.host, port: overrides.port, dataDir: overrides.dataDir, databaseUrl: overrides.databaseUrl }).filter(
      ([, v]) => v !== undefined,
    ),
  );
  const merged = { ...file, ...fromEnvironment(env), ...flags };
  const delivery = deliveryFromEnvironment(env);
  if (Object.keys(delivery).length > 0) merged.delivery = { ...(file.delivery as Record<string, unknown> | undefined), ...delivery };
  const alerts = alertsFromEnvironment(env);
  if (Object.keys(alerts).length > 0) merged.alerts = { ...(file.alerts as Record<string, unknown> | undefined), ...alerts };
  const secrets = secretsFromEnvironment(env);
  if (Object.keys(secrets).length > 0) merged.secrets = { ...(file.secrets as Record<string, unknown> | undefined), ...secrets };
  const subscriptions = subscriptionsFromEnvironment(env);
  if (Object.keys(subscriptions).length > 0) merged.subscriptions = { ...(file.subscriptions as Record<string, unknown> | undefined), ...subscriptions };
  const billing = billingFromEnvironment(env);
  if (Object.keys(billing).length > 0) merged.billing = { ...(file.billing as Record<string, unknown> | undefined), ...billing };
  if (overrides.roles) merged.roles = overrides.roles;
  const chains = chainsFromEnvironment(env, file.chains);
  if (chains.length > 0) merged.chains = chains;
  const withDefaults = Value.Default(ConfigSchema, Value.Clone(merged));
  const errors = [...Value.Errors(ConfigSchema, withDefaults)];
  const lines = errors.slice(0, 10).map((e) => `  ${e.path || '/'}: ${errorText(e)}`);
  const valid = withDefaults as Config;
  if (errors.length === 0) lines.push(...checkChains(valid.chains), ...checkAlerts(valid.alerts), ...checkSecrets(valid.secrets));
  if (lines.length > 0) {
    throw new ConfigError(`The configuration is invalid${fileName ? ` (file ${fileName})` : ''}:\n${lines.join('\n')}`);
  }
  return withBilling({ ...valid, chains: valid.chains.map(normaliseNodes) });
}

/**
 * Without billing every call is free: the prices read as 0 wherever a service charges (nothing is debited,
 * nothing refused). loadConfig applies it, and startApp again for a configuration built in code.
 */
export function withBilling(config: Config): Config {
  if (config.billing?.enabled !== false) return config;
  return { ...config, costs: Object.fromEntries(Object.keys(config.costs).map((name) => [name, 0])) as Config['costs'] };
}
