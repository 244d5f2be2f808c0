/**
 * Several nodes of one chain behind one ChainAdapter (docs/reference/chains.md "Several nodes per chain"): the follower and
 * the Callback Data reads see one adapter; the pool reads from the nodes that are *eligible*:
 *
 * - answering: the last health probe (getNodeHealth) succeeded and no request failed since;
 * - on the chain its label names (with `identity`): asked at its first answer and again after every failure,
 *   and at every round while it is on another chain (node-identity.ts);
 * - not rate limited: a 429 keeps the node out for its Retry-After (or a doubling backoff without one);
 * - not syncing (each family's own signal, see getNodeHealth in the adapters);
 * - not on a fork of its own (a deep reorganisation no second node confirmed, see checkReorganisation);
 * - not contradicting itself (a block whose parent is not its own block below, see reportInconsistency);
 * - its head within maxLagBlocks of the best head among the nodes above.
 *
 * A request that fails on one node is tried on the next eligible one, and thrown only when all failed (the
 * follower then retries with backoff: nothing is skipped). Requests stick to the node that answered the
 * last one while it stays eligible, so the blocks of one walk (catching up, walking back to a common
 * ancestor) come from one node's chain. A pool of one behaves as the node alone: it is read whatever its
 * health (eligibility is reported, not enforced), and reorganisations are never held back; but it is not read
 * while its chain identity is not confirmed (a node on another chain is never followed, however many there are).
 *
 * The pool knows nothing of the database: whoever creates it may pass onReport, called with every node's
 * view after each health round (the ingest role stores it in chain_nodes for the status endpoint, the
 * metrics and the alerts).
 */
import type { Logger } from 'pino';
import type { NodeView } from '../domain/node-view.ts';
import { rateLimitOf } from './node-http.ts';
import { type IdentityCheck, identityMismatch } from './node-identity.ts';
import type { ChainAdapter, MempoolReader, NodeHealth, NormalizedBlock, ReorganisationVerdict } from './types.ts';

/** One node of the pool: its adapter and how it is named in logs and views (the redacted URL). */
export interface PoolNode {
  label: string;
  adapter: ChainAdapter;
}

export type { NodeView } from '../domain/node-view.ts';

export interface NodePoolOptions {
  blockchain: string;
  network: string;
  nodes: PoolNode[];
  /** A node whose head is more than this behind the best eligible head is not read. Default 3. */
  maxLagBlocks?: number;
  /** Reorganisations deeper than this need a second node's word. Default 2. */
  reorgQuorumDepth?: number;
  /**
   * Health rounds at least this often while someone listens (onReport), even when the follower does not
   * ask for the head (catching up, stopped): a node that failed comes back without waiting. Default 1000.
   */
  probeIntervalMs?: number;
  /** The chain the nodes must be on (docs/reference/chains.md "Chain identity"); absent: not checked. */
  identity?: IdentityCheck;
  /** Told every node's view after each health round. */
  onReport?: (views: NodeView[]) => void;
  logger?: Pick<Logger, 'warn' | 'info'>;
  now?: () => number;
}

export type NodePool = ChainAdapter & {
  /** The nodes' views as of the last health round. */
  views(): NodeView[];
  /** One health round now (tests; the pool runs them itself). */
  refresh(): Promise<void>;
  /** Stops the health rounds and closes every node's adapter. */
  close(): Promise<void>;
};

/** No node may be read now: every one is ineligible (the message says why, node by node). */
export class NoEligibleNodeError extends Error {
  override name = 'NoEligibleNodeError';
}

const ERROR_WINDOW_MS = 60_000;
const MAX_OUTCOMES = 1000;
const LATENCY_WEIGHT = 0.2;
/** Backoff after a 429 without Retry-After: doubles from 1 s to 60 s; a Retry-After is honoured up to 10 minutes. */
const RATE_LIMIT_MIN_MS = 1_000;
const RATE_LIMIT_MAX_MS = 60_000;
const MAX_RETRY_AFTER_MS = 600_000;
/**
 * A node that served inconsistent blocks is set aside for 5 s, doubling at each repeat up to 5 minutes;
 * a node consistent for 10 minutes since starts again at 5 s.
 */
const INCONSISTENT_MIN_MS = 5_000;
const INCONSISTENT_MAX_MS = 300_000;
const INCONSISTENT_FORGET_MS = 600_000;
/** A read-only pool (no onReport, no timer) probes again before a read when its last round is older than this. */
const STALE_MS = 5_000;

interface NodeState {
  label: string;
  adapter: ChainAdapter;
  head?: { height: number; hash: string };
  syncing?: string;
  /** The last probe or request failed: why (cleared by the next successful probe). */
  failure?: string;
  /** The error of that failure: what a pool of one throws when it cannot read (its node's own error). */
  lastError?: unknown;
  /** Its chain identity was confirmed since its last failure (always true without options.identity). */
  identified: boolean;
  /** It said it is on another chain (the reason, beginning with WRONG_CHAIN): never read until it says otherwise. */
  wrongChain?: string;
  rateLimitedUntil?: number;
  rateLimitBackoffMs: number;
  /** A deep reorganisation this node alone claimed: the block it had at that height. */
  fork?: { height: number; hash: string };
  /** It served blocks that contradict each other (reportInconsistency): why, and until when it is left alone. */
  inconsistent?: { reason: string; until: number; asideMs: number };
  outcomes: { at: number; ok: boolean }[];
  latencyMs?: number;
  probed: boolean;
  /** A verdict after a probe was given (the first one is logged as news only when bad). */
  judged: boolean;
  eligible: boolean;
  reason: string | null;
  changedAt: number;
  checkedAt: number;
}

export function createNodePool(options: NodePoolOptions): NodePool {
  if (options.nodes.length === 0) throw new Error('a node pool needs at least one node');
  const now = options.now ?? Date.now;
  const maxLag = options.maxLagBlocks ?? 3;
  const quorumDepth = options.reorgQuorumDepth ?? 2;
  const logger = options.logger;
  const identity = options.identity;
  const log = { blockchain: options.blockchain, network: options.network };
  const single = options.nodes.length === 1;
  const started = now();
  const nodes: NodeState[] = options.nodes.map((n) => ({
    label: n.label,
    adapter: n.adapter,
    rateLimitBackoffMs: RATE_LIMIT_MIN_MS,
    outcomes: [],
    identified: options.identity === undefined,
    probed: false,
    judged: false,
    eligible: false,
    reason: 'not checked yet',
    changedAt: started,
    checkedAt: started,
  }));
  let preferred: NodeState = nodes[0] as NodeState;
  let round: Promise<void> | undefined;
  let lastRound = 0;
  let best: number | undefined;

  // --- bookkeeping --------------------------------------------------------------------------------------------

  function record(node: NodeState, ok: boolean, startedAt: number, error?: unknown): void {
    const at = now();
    node.outcomes.push({ at, ok });
    if (node.outcomes.length > MAX_OUTCOMES) node.outcomes.shift();
    if (ok) {
      const ms = at - startedAt;
      node.latencyMs = node.latencyMs === undefined ? ms : node.latencyMs + LATENCY_WEIGHT * (ms - node.latencyMs);
      return;
    }
    node.lastError = error;
    // Asked again at the next answer: a node that went away may come back as another chain.
    if (identity) node.identified = false;
    const limited = rateLimitOf(error);
    if (limited) {
      const wait = limited.retryAfterMs !== undefined ? Math.min(limited.retryAfterMs, MAX_RETRY_AFTER_MS) : node.rateLimitBackoffMs;
      node.rateLimitBackoffMs = limited.retryAfterMs !== undefined ? RATE_LIMIT_MIN_MS : Math.min(node.rateLimitBackoffMs * 2, RATE_LIMIT_MAX_MS);
      node.rateLimitedUntil = at + wait;
      node.failure = `rate limited (HTTP 429): left alone for ${Math.ceil(wait / 1000)} s`;
    } else {
      node.failure = `not answering: ${(error as Error)?.message ?? String(error)}`.slice(0, 500);
    }
    // Out of the rotation at once, not at the next round: the next request goes to another node.
    evaluate();
  }

  function errorRate(node: NodeState): number | null {
    const since = now() - ERROR_WINDOW_MS;
    const recent = node.outcomes.filter((o) => o.at >= since);
    if (recent.length === 0) return null;
    return recent.filter((o) => !o.ok).length / recent.length;
  }

  /** Why `node` may not be read regardless of the others' heads; undefined when nothing is wrong with it. */
  function ownProblem(node: NodeState): string | undefined {
    if (node.rateLimitedUntil !== undefined && now() < node.rateLimitedUntil) return node.failure ?? 'rate limited (HTTP 429)';
    if (node.failure !== undefined) return node.failure;
    if (node.wrongChain !== undefined) return node.wrongChain;
    if (node.inconsistent !== undefined && now() < node.inconsistent.until)
      return `serving inconsistent blocks (${node.inconsistent.reason}): left alone for ${Math.ceil(node.inconsistent.asideMs / 1000)} s`;
    if (!node.probed || node.head === undefined || !node.identified) return 'not checked yet';
    if (node.syncing !== undefined) return `syncing: ${node.syncing}`;
    if (node.fork !== undefined) return `on a fork of its own: its block ${node.fork.height} (${node.fork.hash}) replaces ours and no second node agrees`;
    return undefined;
  }

  /** Recomputes eligibility from the nodes' states; logs the changes. */
  function evaluate(): void {
    const healthy = nodes.filter((n) => ownProblem(n) === undefined);
    best = healthy.length > 0 ? Math.max(...healthy.map((n) => (n.head as { height: number }).height)) : undefined;
    const at = now();
    for (const node of nodes) {
      let reason = ownProblem(node) ?? null;
      const height = node.head?.height;
      if (reason === null && best !== undefined && height !== undefined && best - height > maxLag)
        reason = `lagging: ${best - height} blocks behind the best eligible head (at most ${maxLag})`;
      const eligible = reason === null;
      // The first verdict after a probe is news only when bad; later ones are news when they flip.
      const first = node.probed && !node.judged;
      if (first || eligible !== node.eligible) {
        if (!eligible) logger?.warn({ ...log, node: node.label, reason }, `node ineligible: ${reason}`);
        else if (node.judged) logger?.warn({ ...log, node: node.label }, 'node eligible again');
        else logger?.info({ ...log, node: node.label }, 'node eligible');
        node.changedAt = at;
      }
      if (node.probed) node.judged = true;
      node.eligible = eligible;
      node.reason = reason;
    }
  }

  function viewOf(node: NodeState): NodeView {
    return {
      node: node.label,
      eligible: node.eligible,
      reason: node.reason,
      headHeight: node.head?.height ?? null,
      headHash: node.head?.hash ?? null,
      lagBlocks: node.head === undefined || best === undefined ? null : Math.max(0, best - node.head.height),
      errorRate: errorRate(node),
      latencyMs: node.latencyMs === undefined ? null : Math.round(node.latencyMs * 10) / 10,
      checkedAt: new Date(node.checkedAt),
      changedAt: new Date(node.changedAt),
    };
  }

  // --- health rounds ------------------------------------------------------------------------------------------

  async function healthOf(adapter: ChainAdapter): Promise<NodeHealth> {
    if (adapter.getNodeHealth) return await adapter.getNodeHealth();
    const height = await adapter.getHead();
    const hash = adapter.getBlockHash ? await adapter.getBlockHash(height) : (await adapter.getBlock(height)).hash;
    return { height, hash };
  }

  async function probe(node: NodeState): Promise<void> {
    if (node.rateLimitedUntil !== undefined && now() < node.rateLimitedUntil) return;
    const startedAt = now();
    try {
      const health = await healthOf(node.adapter);
      node.probed = true;
      node.checkedAt = now();
      record(node, true, startedAt);
      node.head = { height: health.height, hash: health.hash };
      node.syncing = health.syncing;
      if (!node.identified) await identify(node, health.height);
      node.failure = undefined;
      node.lastError = undefined;
      node.rateLimitedUntil = undefined;
      node.rateLimitBackoffMs = RATE_LIMIT_MIN_MS;
      if (node.fork) await recheckFork(node);
    } catch (error) {
      node.probed = true;
      node.checkedAt = now();
      record(node, false, startedAt, error);
    }
  }

  /**
   * Asks the node which chain it is on. A node on another chain is set aside (evaluate logs it as ineligible;
   * the status and the operator alert say why) and asked again at every round; one on the expected chain is
   * asked again only after its next failure. Throws when the node does not answer (a failed probe).
   */
  async function identify(node: NodeState, height: number): Promise<void> {
    const check = identity as IdentityCheck;
    const wrong = await identityMismatch(node.adapter, check, height);
    node.wrongChain = wrong;
    node.identified = wrong === undefined;
  }

  /** A node marked on a fork of its own is back once it has another block than the one it claimed there. */
  async function recheckFork(node: NodeState): Promise<void> {
    const fork = node.fork as { height: number; hash: string };
    try {
      if ((await hashAt(node.adapter, fork.height)) !== fork.hash) {
        logger?.warn({ ...log, node: node.label, height: fork.height }, 'node left the fork it was on');
        node.fork = undefined;
      }
    } catch {
      // No answer about that height (down, or below it now): it stays aside until it tells which block it has.
    }
  }

  /**
   * Probes every node at once. The round waits for the nodes that answered last time; one that failed is
   * probed in the background, so a node that hangs costs its timeout once, not at every round.
   */
  function refresh(): Promise<void> {
    round ??= (async () => {
      try {
        const awaited: Promise<void>[] = [];
        for (const node of nodes) {
          const p = probe(node);
          if (node.failure === undefined || single) awaited.push(p);
          else
            void p.then(() => {
              evaluate();
              report();
            });
        }
        await Promise.all(awaited);
        evaluate();
        report();
      } finally {
        lastRound = now();
        round = undefined;
      }
    })();
    return round;
  }

  function report(): void {
    if (!options.onReport) return;
    try {
      options.onReport(nodes.map(viewOf));
    } catch (error) {
      logger?.warn({ ...log, err: error }, 'node report failed');
    }
  }

  const timer = options.onReport
    ? setInterval(
        () => {
          if (now() - lastRound >= (options.probeIntervalMs ?? 1000)) void refresh().catch(() => undefined);
        },
        Math.max(50, options.probeIntervalMs ?? 1000),
      )
    : undefined;
  timer?.unref();

  // --- reading ------------------------------------------------------------------------------------------------

  /**
   * The nodes to try for a request, in order: eligible ones whose head has `minHeight` (the one that answered
   * last first, then in configuration order), then the other eligible ones. A pool of one: its node.
   */
  function candidates(minHeight?: number): NodeState[] {
    if (single) return nodes.filter((n) => n.identified);
    const eligible = nodes.filter((n) => n.eligible);
    const ordered = [preferred, ...eligible.filter((n) => n !== preferred)].filter((n) => n.eligible);
    if (minHeight === undefined) return ordered;
    return [...ordered.filter((n) => (n.head?.height ?? -1) >= minHeight), ...ordered.filter((n) => (n.head?.height ?? -1) < minHeight)];
  }

  function noneEligible(): NoEligibleNodeError {
    const why = nodes.map((n) => `${n.label}: ${n.reason ?? 'eligible'}`).join('; ');
    return new NoEligibleNodeError(`no eligible node for ${options.blockchain} ${options.network} (${why})`);
  }

  /**
   * Runs `call` on the first candidate, then on the next when it failed (node trouble), so that one node's
   * failure is another's request, never a skipped one. Throws the last failure when every node failed.
   */
  async function withNode<T>(call: (adapter: ChainAdapter) => Promise<T>, minHeight?: number): Promise<T> {
    if (!single && (lastRound === 0 || (!timer && now() - lastRound > STALE_MS))) await refresh();
    if (single && !first.identified) await confirmSingle();
    let list = candidates(minHeight);
    // No eligible node has the height yet by the heads last seen: look again before asking one for it, and
    // when none has it still, say so without asking (a "not there yet" would count against a sound node).
    if (!single && minHeight !== undefined && !list.some((n) => (n.head?.height ?? -1) >= minHeight)) {
      await refresh();
      list = candidates(minHeight);
      if (list.length > 0 && !list.some((n) => (n.head?.height ?? -1) >= minHeight))
        throw new NoEligibleNodeError(`no eligible node has block ${minHeight} of ${options.blockchain} ${options.network} yet (best head ${best})`);
    }
    if (list.length === 0) throw noneEligible();
    let last: unknown;
    for (const node of list) {
      if (!single && !node.eligible) continue; // made ineligible by a failure during this loop
      const startedAt = now();
      try {
        const result = await call(node.adapter);
        record(node, true, startedAt);
        preferred = node;
        return result;
      } catch (error) {
        // A caller's mistake is the same on every node: not the node's fault, not tried elsewhere.
        if (error instanceof TypeError || error instanceof RangeError) throw error;
        record(node, false, startedAt, error);
        last = error;
      }
    }
    throw last ?? noneEligible();
  }

  /**
   * A pool of one reads its node whatever its health, but not before the node said it is on the expected
   * chain: one round now, and when that did not confirm it, the node's own error (it does not answer) or why
   * it is refused (another chain).
   */
  async function confirmSingle(): Promise<void> {
    await refresh();
    if (first.identified) return;
    if (first.wrongChain === undefined && first.lastError !== undefined) throw first.lastError;
    throw noneEligible();
  }

  async function hashAt(adapter: ChainAdapter, height: number): Promise<string> {
    if (adapter.getBlockHash) return await adapter.getBlockHash(height);
    return (await adapter.getBlock(height)).hash;
  }

  /**
   * The follower found that the block after `ancestorHeight` is not ours any more. A shallow reorganisation
   * (at most reorgQuorumDepth blocks) or a pool of one: act. A deeper one: every node that answers (eligible
   * or not, but not syncing) is asked its block at ancestorHeight + 1; when two of them have the same block
   * there, other than ours, the new chain is confirmed. Otherwise the nodes that claim another block are
   * marked as on a fork of their own (ineligible until they leave it) and the follower does not rewind: it
   * reads the next block again, from an eligible node.
   */
  async function checkReorganisation(claim: { ancestorHeight: number; depth: number; ourHash: string }): Promise<ReorganisationVerdict> {
    if (single || claim.depth <= quorumDepth) return { act: true };
    const height = claim.ancestorHeight + 1;
    const answers = await Promise.all(
      nodes.map(async (node) => {
        if (node.syncing !== undefined || node.wrongChain !== undefined || (node.rateLimitedUntil !== undefined && now() < node.rateLimitedUntil))
          return undefined;
        try {
          return { node, hash: await hashAt(node.adapter, height) };
        } catch {
          return undefined;
        }
      }),
    );
    const claims = new Map<string, NodeState[]>();
    for (const a of answers) if (a && a.hash !== claim.ourHash) claims.set(a.hash, [...(claims.get(a.hash) ?? []), a.node]);
    const agreed = [...claims.entries()].find(([, holders]) => holders.length >= 2);
    if (agreed) {
      for (const node of agreed[1]) node.fork = undefined;
      evaluate();
      logger?.warn(
        { ...log, height, depth: claim.depth, hash: agreed[0], nodes: agreed[1].map((n) => n.label) },
        'deep reorganisation confirmed by a second node',
      );
      return { act: true };
    }
    for (const [hash, holders] of claims) {
      for (const node of holders) {
        node.fork = { height, hash };
        logger?.warn(
          { ...log, node: node.label, height, depth: claim.depth, hash },
          `node claims a reorganisation of ${claim.depth} blocks that no second node confirms: not followed, node set aside`,
        );
      }
    }
    evaluate();
    report();
    const reason =
      claims.size === 0
        ? `no node has a block other than ours at height ${height} any more`
        : `a reorganisation of ${claim.depth} blocks (more than reorgQuorumDepth ${quorumDepth}) claimed by ${[...claims.values()]
            .flat()
            .map((n) => n.label)
            .join(', ')} alone`;
    return { act: false, reason };
  }

  /** The follower found the node it last read from contradicting itself: a failure of that node, set aside with a doubling backoff. */
  function reportInconsistency(reason: string): void {
    const node = preferred;
    const at = now();
    const previous = node.inconsistent;
    const asideMs = previous && at - previous.until < INCONSISTENT_FORGET_MS ? Math.min(previous.asideMs * 2, INCONSISTENT_MAX_MS) : INCONSISTENT_MIN_MS;
    node.inconsistent = { reason, until: at + asideMs, asideMs };
    node.outcomes.push({ at, ok: false });
    if (node.outcomes.length > MAX_OUTCOMES) node.outcomes.shift();
    logger?.warn({ ...log, node: node.label, reason, asideMs }, 'node served inconsistent blocks: set aside');
    evaluate();
    report();
  }

  const first = nodes[0] as NodeState;
  const has = (method: keyof ChainAdapter) => typeof first.adapter[method] === 'function';

  /**
   * The mempool of one node at a time: mempools differ between nodes, and one node's view decides what
   * "first seen" means. The first eligible node in configuration order, kept while it stays eligible; when
   * it is not, the next eligible one (its first read lists its whole mempool, and the loop's seen-set leaves
   * out what the previous node gave). With no eligible node, the one read so far (its errors show in the
   * status). The transactions are read from the node that listed them; only its pushes wake the loop.
   */
  function mempoolOfEligible(): MempoolReader {
    let current: NodeState | undefined;
    let lister: NodeState | undefined;
    const readerOf = (node: NodeState) => node.adapter.mempool as MempoolReader;
    const pick = (): NodeState => {
      if (current?.eligible) return current;
      // Never a node on another chain, even as the last resort (its mempool is not this chain's).
      const usable = (n: NodeState | undefined) => (n?.wrongChain === undefined ? n : undefined);
      const next = nodes.find((n) => n.eligible && n.adapter.mempool) ?? usable(current) ?? usable(first) ?? nodes.find((n) => n.wrongChain === undefined);
      if (next === undefined) throw noneEligible();
      if (current && next !== current) logger?.warn({ ...log, from: current.label, to: next.label }, `mempool now read from ${next.label}`);
      current = next;
      return next;
    };
    const reader: MempoolReader = {
      get method() {
        return readerOf(current ?? first).method;
      },
      newTransactionIds() {
        lister = pick();
        return readerOf(lister).newTransactionIds();
      },
      readPending: (ids) => readerOf(lister ?? pick()).readPending(ids),
    };
    // Eviction checks (docs/concepts/deposit-safety.md#evicted) ask the node whose mempool is read: another
    // node's mempool never had what this one listed.
    if (nodes.some((n) => n.adapter.mempool?.missing)) {
      const of = (node: NodeState) => {
        const r = readerOf(node);
        if (!r.missing || !r.provenUnmined) throw new Error(`${node.label} cannot check evictions`);
        return r as Required<Pick<MempoolReader, 'missing' | 'provenUnmined'>>;
      };
      reader.missing = (ids) => of(lister ?? pick()).missing(ids);
      reader.provenUnmined = (candidates) => of(lister ?? pick()).provenUnmined(candidates);
    }
    if (nodes.some((n) => n.adapter.mempool?.watch))
      reader.watch = (onNews) => {
        const stops = nodes.map((node) => node.adapter.mempool?.watch?.(() => node === current && onNews()));
        return () => {
          for (const stop of stops) stop?.();
        };
      };
    return reader;
  }

  /** A pool of one's mempool, listed only while its node's chain is confirmed (as its blocks are read). */
  function confirmedMempool(reader: MempoolReader): MempoolReader {
    const confirmed: MempoolReader = {
      get method() {
        return reader.method;
      },
      async newTransactionIds() {
        if (!first.identified) await confirmSingle();
        return await reader.newTransactionIds();
      },
      readPending: (ids) => reader.readPending(ids),
    };
    if (reader.missing) confirmed.missing = (ids) => (reader.missing as NonNullable<MempoolReader['missing']>)(ids);
    if (reader.provenUnmined) confirmed.provenUnmined = (c) => (reader.provenUnmined as NonNullable<MempoolReader['provenUnmined']>)(c);
    if (reader.watch) confirmed.watch = (onNews) => (reader.watch as NonNullable<MempoolReader['watch']>)(() => first.identified && onNews());
    if (reader.close) confirmed.close = () => (reader.close as NonNullable<MempoolReader['close']>)();
    return confirmed;
  }

  const pool: NodePool = {
    async getHead() {
      await refresh();
      if (single) {
        if (!first.identified) await confirmSingle();
        if (first.head === undefined || first.failure !== undefined) return await first.adapter.getHead(); // throws its own error
        return first.head.height;
      }
      if (best === undefined) throw noneEligible();
      return best;
    },
    getBlock: (height: number): Promise<NormalizedBlock> => withNode((a) => a.getBlock(height), height),
    getBlockHash: (height: number) => withNode((a) => hashAt(a, height), height),
    checkReorganisation,
    reportInconsistency,
    views: () => nodes.map(viewOf),
    refresh,
    async close() {
      if (timer) clearInterval(timer);
      await Promise.all(nodes.map((n) => n.adapter.close?.()));
    },
  };
  // The optional reads, where the nodes offer them (one family: all the same).
  if (has('findTransaction')) pool.findTransaction = (id) => withNode((a) => (a.findTransaction as NonNullable<ChainAdapter['findTransaction']>)(id));
  if (has('findTransactions')) pool.findTransactions = (ids) => withNode((a) => (a.findTransactions as NonNullable<ChainAdapter['findTransactions']>)(ids));
  if (has('getCoinBalance'))
    pool.getCoinBalance = (address, height) => withNode((a) => (a.getCoinBalance as NonNullable<ChainAdapter['getCoinBalance']>)(address, height), height);
  if (has('getUnspentOutputs'))
    pool.getUnspentOutputs = (address, height) =>
      withNode((a) => (a.getUnspentOutputs as NonNullable<ChainAdapter['getUnspentOutputs']>)(address, height), height);
  if (has('getTokenBalance'))
    pool.getTokenBalance = (contract, address, height) =>
      withNode((a) => (a.getTokenBalance as NonNullable<ChainAdapter['getTokenBalance']>)(contract, address, height), height);
  if (has('getFinalizedHeight')) pool.getFinalizedHeight = () => withNode((a) => (a.getFinalizedHeight as NonNullable<ChainAdapter['getFinalizedHeight']>)());
  if (has('tokenMetadata')) pool.tokenMetadata = (transfer) => withNode((a) => (a.tokenMetadata as NonNullable<ChainAdapter['tokenMetadata']>)(transfer));
  if (has('getBlockDetails')) pool.getBlockDetails = (block) => withNode((a) => (a.getBlockDetails as NonNullable<ChainAdapter['getBlockDetails']>)(block));
  if (has('getTransactionDetails'))
    pool.getTransactionDetails = (id) => withNode((a) => (a.getTransactionDetails as NonNullable<ChainAdapter['getTransactionDetails']>)(id));
  if (first.adapter.mempool) pool.mempool = single ? (identity ? confirmedMempool(first.adapter.mempool) : first.adapter.mempool) : mempoolOfEligible();
  if (nodes.some((n) => n.adapter.watchHeads)) {
    // Any node's announcement wakes the follower, but only an eligible node's: a node on a fork or far
    // ahead of the others would send it for a height no eligible node has.
    pool.watchHeads = (onHead) => {
      const stops = nodes.map((node) => node.adapter.watchHeads?.((height) => ((single && node.identified) || node.eligible) && onHead(height)));
      return () => {
        for (const stop of stops) stop?.();
      };
    };
  }
  return pool;
}
