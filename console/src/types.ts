/** The API's items as the console reads them (see the OpenAPI document at /openapi.json). */

export interface Health {
  delivered: number;
  failed: number;
  pending: number;
  retrying?: number;
  successRate: number | null;
  lastDeliveredTimestamp: number | null;
  lastFailedTimestamp?: number | null;
  /** delivering, retrying, failing, idle or paused (src/domain/subscriptions.ts deliveryStatus). */
  status?: 'delivering' | 'retrying' | 'failing' | 'idle' | 'paused';
}

export interface Subscription {
  referenceId: string;
  eventType: string;
  blockchain: string;
  network: string;
  isActive: boolean;
  createdTimestamp: number;
  callbackUrl: string;
  callbackSecretKey?: string;
  transactionId?: string;
  address?: string;
  contractAddress?: string;
  amountHigherThan?: number;
  blockHeightReached?: number;
  receiveCallbackOn?: number;
  confirmationsCount?: number;
  deactivationReasons?: { reason: string; timestamp: number }[];
  health?: Health;
}

export interface Attempt {
  attempt: number;
  timestamp: number;
  durationMs: number;
  httpStatus: number | null;
  error: { class: string; message: string } | null;
  responseExcerpt?: string | null;
}

export interface Callback {
  callbackId: string;
  idempotencyKey: string;
  event: string;
  status: string;
  outcome: string | null;
  sequence: number | null;
  createdTimestamp: number;
  nextAttemptTimestamp: number | null;
  attempts: Attempt[];
}

export interface CallbackDetail extends Callback {
  referenceId: string;
  payload: unknown;
}

export interface Domain {
  domain: string;
  isVerified: boolean;
  verifiedTimestamp: number | null;
  verificationToken: string;
  createdTimestamp: number;
}

export interface WalletAssets {
  walletId: string;
  walletName: string;
  coins: {
    blockchain: string;
    network: string;
    unit: string;
    confirmedBalance: string;
    totalReceived: string;
    totalSpent: string;
    openingBalance: string;
  }[];
  fungibleTokens: { amount: string; blockchain: string; network: string; identifier: string; symbol: string; type: string }[];
  nonFungibleTokens: { blockchain: string; network: string; identifier: string; symbol: string; tokenId: string; type: string }[];
}

export interface WatchedAddress {
  blockchain: string;
  network: string;
  address: string;
  watchedFromBlock: number | null;
  createdTimestamp: number;
}

export interface Account {
  customerName: string;
  /** false on a single-tenant install: calls are free, no credits to show (docs/operations/single-tenant.md). */
  billingEnabled: boolean;
  credits: number | string;
  plan: Record<string, unknown>;
  activeSubscriptions: number;
}

export interface UsageRow {
  day: string;
  endpoint: string;
  requests: number;
  credits: number | string;
}

export interface NodeStatus {
  url: string;
  eligible: boolean;
  reason: string | null;
  headHeight: number | null;
  lagBlocks: number | null;
  errorRate: number | null;
  latencyMs: number | null;
  checkedAt: string;
}

export interface OperatorChain {
  blockchain: string;
  network: string;
  state: string;
  headHeight: number | null;
  processedHeight: number | null;
  lagBlocks: number | null;
  lagSeconds: number | null;
  stoppedReason: string | null;
  reorganisations: number;
  /** The deep-reorganisation breaker's hold (state held); null when not held. */
  hold: ChainHold | null;
  nodes: NodeStatus[];
}

export interface ChainHold {
  heldSince: string;
  reason: 'reorganisation' | 'disagreement';
  depth: number;
  breakerDepth: number;
  description: string;
  ancestorHeight: number;
  ancestorHash: string | null;
  blocks: { height: number; orphanedHash: string; newHash: string | null }[];
  trips: number;
  heldCallbacks: number;
}

export interface CustomerSummary {
  name: string;
  plan: Record<string, unknown>;
  credits: number | string;
  activeSubscriptions: number;
  keys: number;
}

export interface CustomerDetail {
  name: string;
  plan: Record<string, unknown>;
  credits: number | string;
  activeSubscriptions: number;
  keys: { keyId: string; prefix: string; createdTimestamp: number; revokedTimestamp: number | null }[];
  domains: { domain: string; verified: boolean; verifiedTimestamp: number | null }[];
}

export interface Delivery {
  due: number;
  oldestDueAgeSeconds: number | null;
  attemptsPerMinute: { timestamp: number; delivered: number; failed: number; retried: number }[];
  slowestDestinations: { host: string; attempts: number; failures: number; p50Ms: number; p95Ms: number }[];
}

export interface Recovery {
  recoveryId: string;
  state: 'queued' | 'running' | 'done' | 'out_of_credits';
  since: number;
  until: number;
  includeCancelled: boolean;
  found: number;
  queued: number;
  creditsConsumed: number;
  createdTimestamp: number;
  finishedTimestamp: number | null;
  pending: number;
  delivered: number;
  failed: number;
}

export interface Replay {
  replayId: string;
  state: 'running' | 'done' | 'out_of_credits';
  fromBlockHeight: number;
  toBlockHeight: number;
  processedHeight: number;
  queued: number;
  creditsConsumed: number;
  createdTimestamp: number;
  finishedTimestamp: number | null;
}

export interface DryRun {
  fromBlockHeight: number;
  toBlockHeight: number;
  callbacks: { idempotencyKey: string; blockHeight: number; transactionId: string | null; event: string; body: unknown }[];
}

export interface ChainStatus {
  blockchain: string;
  network: string;
  state: string;
  nodeHeight: number | null;
  processedHeight: number | null;
  lagBlocks: number | null;
  lagSeconds: number | null;
  stopReason: string | null;
}

export interface Overview {
  sinceTimestamp: number;
  callbacks: { delivered: number; failed: number; pending: number; retrying: number; successRate: number | null };
  failingSubscriptions: {
    total: number;
    items: {
      referenceId: string;
      eventType: string;
      blockchain: string;
      network: string;
      isActive: boolean;
      failed: number;
      lastFailedTimestamp: number | null;
    }[];
  };
  unverifiedDomains: string[];
  firstRun: { domainVerified: boolean; subscriptionCreated: boolean; testCallbackDelivered: boolean };
}

/** A callback of the delivery log across subscriptions (GET /blockchain-events/callbacks). */
export interface Delivery extends Callback {
  referenceId: string;
  blockchain: string;
  network: string;
}
