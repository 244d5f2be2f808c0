/**
 * Operator alerts (docs/operations/alerts.md). A monitor in the delivery role looks, every
 * alerts.intervalSeconds, at what the other roles wrote to the database:
 *   chains    chain_cursors (stopped, or behind the node by more than alerts.lagSeconds, or silent)
 *   nodes     chain_nodes (eligible or not, as the ingest role judged them; on another chain than the label's)
 *   tallies   subscriptions deactivated and callbacks exhausted, counted by the delivery worker
 * and raises one alert per change of state: a state must hold for alerts.holdSeconds first (a chain
 * stopped is alerted at once), and counted events give one alert per customer, destination and reason
 * at most every alerts.groupSeconds, however many there were. Each alert is a warn log line, a count in
 * herald_alerts_total{kind} and, with alerts.webhookUrl, a signed POST (src/delivery/alert-sender.ts).
 *
 * Why the delivery role: it must keep running when the ingest processes are the trouble (a chain whose
 * followers all died is an alert), it already sends HTTP from the database's outbox, and the API
 * processes stay with requests. Every delivery process runs it; the database decides which one alerts
 * (store/alerts.ts), so two of them raise each alert once.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { WRONG_CHAIN } from '../chains/node-identity.ts';
import type { Config } from '../config/config.ts';
import { chainLag } from '../domain/chain-lag.ts';
import { holdReason } from '../domain/holds.ts';
import type { Metrics } from '../metrics.ts';
import { claimTransition, type DueTally, insertAlerts, type NewAlert, observeSubject, pruneAlertOutbox, takeDueTallies } from '../store/alerts.ts';
import { listChainNodes } from '../store/chain-nodes.ts';
import { type ChainStatusRow, listChainStatus } from '../store/chain-state.ts';
import { type Db, retryLogLevel } from '../store/db.ts';
import { sendDueAlerts } from './alert-sender.ts';
import type { CallbackSender } from './sender.ts';

export type AlertKind =
  | 'chain.stopped'
  | 'chain.held'
  | 'chain.lagging'
  | 'chain.recovered'
  | 'node.ineligible'
  | 'node.wrong-chain'
  | 'node.eligible'
  | 'subscription.deactivated'
  | 'callbacks.exhausted'
  | 'database.restarted';

/** What one look found of a subject: its state and the facts an alert about it carries. */
interface Observation {
  subject: string;
  state: string;
  healthy: boolean;
  /** Seconds the state must hold before it is alerted. */
  holdSeconds: number;
  data: Record<string, unknown>;
}

export interface ChainHealth {
  state: 'ok' | 'lagging' | 'held' | 'stopped';
  reason: string | null;
  lagBlocks: number | null;
  lagSeconds: number | null;
  nodeHeight: number | null;
}

/**
 * A chain is stopped when its follower stopped it (a reorganisation deeper than the window) or when
 * for lagSeconds nothing shows that anyone follows it (no block applied, no node head seen: every
 * ingest process is gone, or no node answers); lagging when its last processed block is older than
 * lagSeconds while the node has newer ones. `bestNodeHead`: the highest head of its eligible nodes.
 */
export function chainHealth(row: ChainStatusRow, bestNodeHead: number | null, now: Date, lagSeconds: number): ChainHealth {
  const nodeHeight = bestNodeHead === null ? row.nodeHead : Math.max(bestNodeHead, row.nodeHead ?? bestNodeHead);
  const lag = chainLag({ height: row.height, nodeHead: nodeHeight, blockTimestamp: row.blockTimestamp }, now);
  const facts = { ...lag, nodeHeight };
  if (row.state === 'stopped') return { state: 'stopped', reason: row.stopReason ?? 'stopped', ...facts };
  const lastSign = Math.max(row.updatedAt.getTime(), row.nodeHeadSeenAt?.getTime() ?? 0);
  const silentSeconds = Math.floor((now.getTime() - lastSign) / 1000);
  if (silentSeconds > lagSeconds) {
    return {
      state: 'stopped',
      reason: `no block applied and no node head seen for ${silentSeconds} s: no ingest process is following the chain, or none of its nodes answers`,
      ...facts,
    };
  }
  // Held by the deep-reorganisation breaker: following goes on, confirmed callbacks wait for the operator.
  if (row.hold) return { state: 'held', reason: holdReason(row.hold), ...facts };
  if (lag.lagSeconds !== null && lag.lagSeconds > lagSeconds) {
    return { state: 'lagging', reason: `${lag.lagBlocks} blocks behind the node; the last processed block is ${lag.lagSeconds} s old`, ...facts };
  }
  return { state: 'ok', reason: null, ...facts };
}

/** The kind of alert a change of state raises; undefined: none (a subject first seen healthy). */
function kindOf(subject: string, from: string, to: string): AlertKind | undefined {
  if (subject.startsWith('chain/')) {
    if (to === 'stopped') return 'chain.stopped';
    if (to === 'held') return 'chain.held';
    if (to === 'lagging') return 'chain.lagging';
    return from === 'unknown' ? undefined : 'chain.recovered';
  }
  if (to === 'ineligible') return 'node.ineligible';
  if (to === 'wrong-chain') return 'node.wrong-chain';
  return from === 'unknown' ? undefined : 'node.eligible';
}

/** The JSON sent for an alert (Standard Webhooks' recommended shape: type, timestamp, data). */
export function alertBody(kind: AlertKind, at: Date, data: Record<string, unknown>): string {
  return JSON.stringify({ type: kind, timestamp: at.toISOString(), data });
}

export interface AlertMonitorDeps {
  db: Db;
  config: Pick<Config, 'alerts' | 'chains'>;
  logger: Logger;
  metrics?: Metrics;
  now?: () => Date;
}

/**
 * The chains and nodes as they are now. Watched: the chains this process is configured with, or, when it
 * has none (a delivery process is often given no node URLs), every chain followed on this database.
 */
async function observe(deps: AlertMonitorDeps, now: Date): Promise<Observation[]> {
  const { alerts, chains } = deps.config;
  const [cursors, nodes] = await Promise.all([listChainStatus(deps.db), listChainNodes(deps.db)]);
  const watched = new Set((chains.length > 0 ? chains : cursors).map((c) => `${c.blockchain}/${c.network}`));
  // A node row not rewritten for lagSeconds says nothing about the node now (its chain's silence is
  // the chain's alert); it is left out rather than alerted on stale facts.
  const fresh = nodes.filter((n) => watched.has(`${n.blockchain}/${n.network}`) && now.getTime() - n.checkedAt.getTime() <= alerts.lagSeconds * 1000);
  const observations: Observation[] = [];
  for (const row of cursors) {
    const key = `${row.blockchain}/${row.network}`;
    if (!watched.has(key)) continue;
    const heads = fresh.filter((n) => n.eligible && n.headHeight !== null && `${n.blockchain}/${n.network}` === key).map((n) => n.headHeight as number);
    const health = chainHealth(row, heads.length > 0 ? Math.max(...heads) : null, now, alerts.lagSeconds);
    observations.push({
      subject: `chain/${key}`,
      state: health.state,
      healthy: health.state === 'ok',
      holdSeconds: health.state === 'stopped' || health.state === 'held' ? 0 : alerts.holdSeconds,
      data: {
        blockchain: row.blockchain,
        network: row.network,
        state: health.state,
        reason: health.reason,
        processedHeight: row.height,
        processedHash: row.hash,
        nodeHeight: health.nodeHeight,
        lagBlocks: health.lagBlocks,
        lagSeconds: health.lagSeconds,
        lastBlockTimestamp: row.blockTimestamp,
        lagLimitSeconds: alerts.lagSeconds,
        ...(row.hold && {
          hold: {
            heldSince: row.hold.heldAt.toISOString(),
            reason: row.hold.reason,
            depth: row.hold.depth,
            breakerDepth: row.hold.breakerDepth,
            blocks: row.hold.trips.at(-1)?.blocks ?? [],
          },
        }),
      },
    });
  }
  for (const n of fresh) {
    // A node on another chain than its label's is alerted at once, as a stopped chain: it never comes right by waiting.
    const wrongChain = !n.eligible && n.reason?.startsWith(WRONG_CHAIN) === true;
    const state = n.eligible ? 'eligible' : wrongChain ? 'wrong-chain' : 'ineligible';
    observations.push({
      subject: `node/${n.blockchain}/${n.network}/${n.node}`,
      state,
      healthy: n.eligible,
      holdSeconds: wrongChain ? 0 : alerts.holdSeconds,
      data: {
        blockchain: n.blockchain,
        network: n.network,
        node: n.node,
        eligible: n.eligible,
        reason: n.reason,
        headHeight: n.headHeight,
        lagBlocks: n.lagBlocks,
        errorRate: n.errorRate,
        latencyMs: n.latencyMs,
        checkedAt: n.checkedAt.toISOString(),
      },
    });
  }
  return observations;
}

function summary(kind: AlertKind, data: Record<string, unknown>): string {
  const chain = `${data.blockchain}/${data.network}`;
  switch (kind) {
    case 'chain.stopped':
      return `chain ${chain} stopped: ${data.reason}`;
    case 'chain.held':
      return `chain ${chain} held: ${data.reason}`;
    case 'chain.lagging':
      return `chain ${chain} lagging: ${data.reason}`;
    case 'chain.recovered':
      return `chain ${chain} recovered (was ${data.previousState})`;
    case 'node.ineligible':
      return `node ${data.node} of ${chain} ineligible: ${data.reason}`;
    case 'node.wrong-chain':
      return `node ${data.node} of ${chain} refused, not followed: ${data.reason}`;
    case 'node.eligible':
      return `node ${data.node} of ${chain} eligible again`;
    case 'subscription.deactivated':
      return `${data.subscriptions} subscription(s) of customer ${data.customerId} to ${data.destination} deactivated: ${data.reason}`;
    case 'callbacks.exhausted':
      return `${data.callbacks} callback(s) of customer ${data.customerId} to ${data.destination} failed after their last retry`;
    case 'database.restarted':
      return `the embedded database was started again after ${data.downSeconds} s down: ${data.cause}`;
  }
}

/**
 * An alert about this process itself, which no monitor could observe in the database (the embedded
 * database was down: nothing could be written then): raised once, by the process that saw it, as the
 * monitor raises its own (log line, metric, outbox when a webhook is configured).
 */
export async function raiseProcessAlert(
  deps: Pick<AlertMonitorDeps, 'db' | 'logger' | 'metrics'> & { config: Pick<Config, 'alerts'> },
  kind: AlertKind,
  subject: string,
  data: Record<string, unknown>,
  now = new Date(),
): Promise<void> {
  deps.metrics?.alerts.inc({ kind });
  deps.logger.warn({ alert: kind, subject, ...data }, `alert: ${summary(kind, data)}`);
  if (deps.config.alerts.webhookUrl !== undefined) {
    await insertAlerts(deps.db, [{ id: randomUUID(), kind, subject, body: alertBody(kind, now, data) }], now);
  }
}

function tallyAlert(tally: DueTally): { kind: AlertKind; data: Record<string, unknown> } {
  const common = {
    customerId: tally.customerId,
    customerName: tally.customerName,
    destination: tally.destination,
    firstAt: tally.firstAt.toISOString(),
    lastAt: tally.lastAt.toISOString(),
  };
  return tally.kind === 'subscription.deactivated'
    ? { kind: tally.kind, data: { ...common, reason: tally.reason, subscriptions: tally.count } }
    : { kind: tally.kind, data: { ...common, callbacks: tally.count } };
}

/**
 * One look: records what is seen, claims the changes of state that have held long enough and the
 * tallies that are due, and raises their alerts (log, metric, outbox when a webhook is configured).
 * Returns the alerts this process raised.
 */
export async function detectAlerts(deps: AlertMonitorDeps, now: Date): Promise<{ kind: AlertKind; subject: string; data: Record<string, unknown> }[]> {
  const { db, logger, metrics } = deps;
  const webhook = deps.config.alerts.webhookUrl !== undefined;
  const raised: { kind: AlertKind; subject: string; data: Record<string, unknown> }[] = [];
  const raise = (kind: AlertKind, subject: string, data: Record<string, unknown>) => {
    raised.push({ kind, subject, data });
    metrics?.alerts.inc({ kind });
    logger.warn({ alert: kind, subject, ...data }, `alert: ${summary(kind, data)}`);
  };
  for (const o of await observe(deps, now)) {
    const seen = await observeSubject(db, o.subject, o.state, o.healthy, now);
    if (seen.state === o.state || now.getTime() - seen.observedSince.getTime() < o.holdSeconds * 1000) continue;
    const kind = kindOf(o.subject, seen.state, o.state);
    const data = { ...o.data, previousState: seen.state, since: seen.observedSince.toISOString() };
    const alert: NewAlert | undefined = kind && webhook ? { id: randomUUID(), kind, subject: o.subject, body: alertBody(kind, now, data) } : undefined;
    if ((await claimTransition(db, { subject: o.subject, from: seen.state, to: o.state, now, alert })) && kind) raise(kind, o.subject, data);
  }
  const tallies = await takeDueTallies(db, {
    now,
    groupSeconds: deps.config.alerts.groupSeconds,
    limit: 100,
    makeAlert: webhook
      ? (tally) => {
          const { kind, data } = tallyAlert(tally);
          return { id: randomUUID(), kind, subject: tally.subject, body: alertBody(kind, now, data) };
        }
      : undefined,
  });
  for (const tally of tallies) {
    const { kind, data } = tallyAlert(tally);
    raise(kind, tally.subject, data);
  }
  return raised;
}

/** Sent and given-up alerts are kept this long in the outbox (for the operator to look at), then deleted. */
const OUTBOX_KEEP_MS = 7 * 86_400_000;
const PRUNE_EVERY_MS = 3_600_000;

export interface AlertMonitor {
  /** Resolves once the pass under way (if any) has ended. */
  stop(): Promise<void>;
}

/**
 * Looks at start and then every alerts.intervalSeconds; each pass detects, then sends the alerts due
 * (new ones and retries) when a webhook is configured. A pass that fails is logged; the next one tries
 * again (each claim is its own transaction: nothing is half done).
 */
export function startAlertMonitor(deps: AlertMonitorDeps & { sender: CallbackSender; timeoutMs: number }): AlertMonitor {
  const { alerts } = deps.config;
  const now = deps.now ?? (() => new Date());
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  let prunedAt = 0;
  const pass = async () => {
    try {
      await detectAlerts(deps, now());
      if (alerts.webhookUrl !== undefined && alerts.secret !== undefined) {
        await sendDueAlerts({ ...deps, alerts: { ...alerts, webhookUrl: alerts.webhookUrl, secret: alerts.secret } }, now());
      }
      if (Date.now() - prunedAt >= PRUNE_EVERY_MS) {
        await pruneAlertOutbox(deps.db, new Date(now().getTime() - OUTBOX_KEEP_MS));
        prunedAt = Date.now();
      }
    } catch (error) {
      deps.logger[retryLogLevel(error)]({ err: error }, 'alert monitor pass failed; trying again at the next');
    }
    if (!stopped) timer = setTimeout(schedule, alerts.intervalSeconds * 1000);
  };
  const schedule = () => {
    running = pass();
  };
  timer = setTimeout(schedule, 0);
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
