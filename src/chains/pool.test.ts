import { describe, expect, it } from 'vitest';
import { expectedIdentity } from '../domain/chain-identity.ts';
import { createNodePool, type NodePoolOptions, type NodeView, NoEligibleNodeError } from './pool.ts';
import type { ChainAdapter, NormalizedBlock } from './types.ts';

/**
 * A node as the pool sees one: a chain of block hashes it serves by height, a head, and faults on demand.
 * The pool is the thing under test; these stand in for nodes (their own clients are tested in their families).
 */
class ScriptedNode {
  chain: string[] = [];
  syncing?: string;
  fault?: 'down' | '429';
  retryAfterMs?: number;
  /** The head it reports, when it lags behind its own chain (a node that has not caught up). */
  reportedHead?: number;
  /** What getNodeIdentity says (getblockchaininfo.chain, as a Bitcoin-family node would); absent: the adapter has none. */
  chainId?: string;
  identityCalls = 0;
  calls = 0;

  constructor(
    readonly name: string,
    length: number,
    branch = 'main',
  ) {
    for (let h = 0; h < length; h++) this.chain.push(`${branch}-${h}`);
  }

  get head(): number {
    return this.reportedHead ?? this.chain.length - 1;
  }

  /** Replaces the blocks from `height` on with `count` blocks of another branch. */
  fork(height: number, count: number, branch: string): void {
    this.chain = this.chain.slice(0, height);
    for (let i = 0; i < count; i++) this.chain.push(`${branch}-${height + i}`);
  }

  private check(): void {
    this.calls++;
    if (this.fault === 'down') throw new Error(`${this.name} connection refused`);
    if (this.fault === '429') throw Object.assign(new Error(`${this.name} HTTP 429`), { status: 429, retryAfterMs: this.retryAfterMs });
  }

  adapter(): ChainAdapter {
    const hashAt = (height: number): string => {
      this.check();
      const hash = this.chain[height];
      if (height > this.head || hash === undefined) throw new Error(`${this.name} has no block ${height} yet`);
      return hash;
    };
    const adapter: ChainAdapter = {
      getHead: async () => {
        this.check();
        return this.head;
      },
      getNodeHealth: async () => {
        this.check();
        return { height: this.head, hash: this.chain[this.head] as string, ...(this.syncing ? { syncing: this.syncing } : {}) };
      },
      getBlockHash: async (height) => hashAt(height),
      getBlock: async (height): Promise<NormalizedBlock> => {
        const hash = hashAt(height);
        return {
          height,
          hash,
          parentHash: this.chain[height - 1] ?? '',
          timestamp: height,
          transactionIds: [this.name],
          tokenTransfers: [],
          internalTransfers: [],
          coinMovements: [],
        };
      },
    };
    if (this.chainId !== undefined)
      adapter.getNodeIdentity = async () => {
        this.check();
        this.identityCalls++;
        return { chainId: this.chainId as string };
      };
    return adapter;
  }
}

function poolOf(
  nodes: ScriptedNode[],
  options: { maxLagBlocks?: number; reorgQuorumDepth?: number; now?: () => number; identity?: NodePoolOptions['identity'] } = {},
) {
  const reports: NodeView[][] = [];
  const warnings: string[] = [];
  const pool = createNodePool({
    blockchain: 'litecoin',
    network: 'testnet',
    nodes: nodes.map((n) => ({ label: n.name, adapter: n.adapter() })),
    onReport: (views) => reports.push(views),
    probeIntervalMs: 60_000, // rounds only when the test asks
    logger: { warn: (_o: unknown, message?: string) => warnings.push(message ?? ''), info: () => undefined },
    ...options,
  });
  const view = (name: string) => pool.views().find((v) => v.node === name) as NodeView;
  return { pool, reports, warnings, view };
}

describe('node pool: eligibility', () => {
  it('a node is eligible while it answers, is not syncing and is within maxLagBlocks of the best eligible head', async () => {
    const a = new ScriptedNode('a', 11);
    const b = new ScriptedNode('b', 11);
    const { pool, view, reports, warnings } = poolOf([a, b]);
    expect(await pool.getHead()).toBe(10);
    expect(view('a')).toMatchObject({ eligible: true, reason: null, headHeight: 10, headHash: 'main-10', lagBlocks: 0 });
    expect(view('b')).toMatchObject({ eligible: true, lagBlocks: 0 });
    expect(reports.at(-1)).toHaveLength(2);

    // 3 behind is within maxLagBlocks (3); 4 is not.
    b.reportedHead = 7;
    await pool.refresh();
    expect(view('b')).toMatchObject({ eligible: true, lagBlocks: 3 });
    b.reportedHead = 6;
    await pool.refresh();
    expect(view('b')).toMatchObject({ eligible: false, lagBlocks: 4, reason: 'lagging: 4 blocks behind the best eligible head (at most 3)' });
    expect(warnings).toContain('node ineligible: lagging: 4 blocks behind the best eligible head (at most 3)');

    // Syncing: its own word, whatever its head.
    b.reportedHead = undefined;
    b.syncing = 'initial block download';
    await pool.refresh();
    expect(view('b')).toMatchObject({ eligible: false, reason: 'syncing: initial block download', lagBlocks: 0 });

    // Down: not answering; the best head is the best among the eligible ones.
    b.syncing = undefined;
    a.fault = 'down';
    a.chain.push('main-11', 'main-12');
    await pool.refresh();
    expect(view('a')).toMatchObject({ eligible: false, reason: 'not answering: a connection refused' });
    expect(view('b')).toMatchObject({ eligible: true, lagBlocks: 0 });
    expect(await pool.getHead()).toBe(10);

    // Back: eligible again, and the flip is told.
    a.fault = undefined;
    await pool.refresh();
    await pool.refresh(); // the failed node is probed beside the round; the next one sees it answer
    expect(view('a')).toMatchObject({ eligible: true, headHeight: 12 });
    expect(view('b')).toMatchObject({ eligible: true, lagBlocks: 2 });
    expect(warnings).toContain('node eligible again');
    expect(view('a').changedAt.getTime()).toBeGreaterThan(0);
    expect(view('a').errorRate).toBeGreaterThan(0);
    expect(view('a').latencyMs).not.toBeNull();
  });

  it('a node down from the start is told once at warn; a sound one at info; the view says when each last flipped', async () => {
    let clock = 5_000_000;
    const a = new ScriptedNode('a', 5);
    const b = new ScriptedNode('b', 5);
    b.fault = 'down';
    const { pool, view, warnings } = poolOf([a, b], { now: () => clock });
    expect(view('b')).toMatchObject({ eligible: false, reason: 'not checked yet', headHeight: null, lagBlocks: null, errorRate: null, latencyMs: null });
    clock += 1000;
    await pool.refresh();
    expect(warnings).toEqual(['node ineligible: not answering: b connection refused']);
    expect(view('a')).toMatchObject({ eligible: true, changedAt: new Date(clock) });
    expect(view('b')).toMatchObject({ eligible: false, errorRate: 1, changedAt: new Date(clock) });
    clock += 1000;
    await pool.refresh();
    expect(warnings).toHaveLength(1); // no change, no line
    b.fault = undefined;
    clock += 1000;
    await pool.refresh();
    await pool.refresh();
    expect(warnings).toEqual(['node ineligible: not answering: b connection refused', 'node eligible again']);
    expect(view('b')).toMatchObject({ eligible: true, changedAt: new Date(clock) });
  });

  it('a 429 keeps the node out for its Retry-After, without asking it meanwhile', async () => {
    let clock = 1_000_000;
    const a = new ScriptedNode('a', 5);
    const b = new ScriptedNode('b', 5);
    const { pool, view } = poolOf([a, b], { now: () => clock });
    await pool.refresh();
    a.fault = '429';
    a.retryAfterMs = 30_000;
    // The block is read from b after a's 429: not skipped, not failed.
    const block = await pool.getBlock(4);
    expect(block.hash).toBe('main-4');
    expect(view('a')).toMatchObject({ eligible: false, reason: 'rate limited (HTTP 429): left alone for 30 s' });
    a.fault = undefined;
    const before = a.calls;
    clock += 29_000;
    await pool.refresh();
    expect(a.calls).toBe(before); // not asked while it asked to be left alone
    expect(view('a').eligible).toBe(false);
    clock += 2_000;
    await pool.refresh();
    await pool.refresh();
    expect(view('a')).toMatchObject({ eligible: true, reason: null });
  });

  it('a pool of one reads its node whatever its health, as a single node always was', async () => {
    const a = new ScriptedNode('a', 5);
    a.syncing = 'initial block download';
    const { pool, view } = poolOf([a]);
    expect(await pool.getHead()).toBe(4);
    expect(view('a')).toMatchObject({ eligible: false, reason: 'syncing: initial block download' });
    expect((await pool.getBlock(3)).hash).toBe('main-3');
    a.fault = 'down';
    await expect(pool.getHead()).rejects.toThrow(/connection refused/);
    await expect(pool.getBlock(3)).rejects.toThrow(/connection refused/);
    a.fault = undefined;
    expect((await pool.getBlock(3)).hash).toBe('main-3');
    // Reorganisations are never held back with one node.
    expect(await pool.checkReorganisation?.({ ancestorHeight: 0, depth: 4, ourHash: 'x' })).toEqual({ act: true });
  });
});

describe('node pool: failover', () => {
  it('a failed request is tried on the next eligible node; reads stick to the node that answered', async () => {
    const a = new ScriptedNode('a', 6);
    const b = new ScriptedNode('b', 6);
    const { pool, view } = poolOf([a, b]);
    expect((await pool.getBlock(5)).transactionIds).toEqual(['a']);
    a.fault = 'down';
    expect((await pool.getBlock(5)).transactionIds).toEqual(['b']);
    expect(view('a').eligible).toBe(false);
    a.fault = undefined;
    await pool.refresh();
    await pool.refresh();
    expect(view('a').eligible).toBe(true);
    // Still b: it answered last, and one walk stays on one node's chain.
    expect((await pool.getBlock(4)).transactionIds).toEqual(['b']);
  });

  it('a node without the height yet is passed over for one that has it; with every node failing the failure is thrown', async () => {
    const a = new ScriptedNode('a', 6);
    const b = new ScriptedNode('b', 8);
    const { pool, view } = poolOf([a, b]);
    await pool.refresh();
    expect((await pool.getBlock(7)).transactionIds).toEqual(['b']);
    // A height no node has yet (a head announced before the heads were checked): not asked, nobody blamed.
    const calls = a.calls + b.calls;
    await expect(pool.getBlock(9)).rejects.toThrow(/^no eligible node has block 9 of litecoin testnet yet \(best head 7\)$/);
    expect(a.calls + b.calls - calls).toBe(2); // one health round, no block request
    expect([view('a').eligible, view('b').eligible]).toEqual([true, true]);
    a.fault = 'down';
    b.fault = 'down';
    await expect(pool.getBlock(5)).rejects.toThrow(/connection refused/);
    // Both out now: the next read says so, node by node, until a round finds them back.
    await expect(pool.getBlock(5)).rejects.toThrow(NoEligibleNodeError);
    await expect(pool.getBlock(5)).rejects.toThrow(/a: not answering: a connection refused; b: not answering/);
    a.fault = undefined;
    b.fault = undefined;
    await pool.refresh();
    await pool.refresh();
    expect((await pool.getBlock(5)).hash).toBe('main-5');
  });

  it('head announcements of an ineligible node do not wake the follower', async () => {
    const listeners = new Map<string, (h: number) => void>();
    const a = new ScriptedNode('a', 5);
    const b = new ScriptedNode('b', 5);
    const withWatch = (n: ScriptedNode): ChainAdapter => ({
      ...n.adapter(),
      watchHeads: (onHead) => {
        listeners.set(n.name, onHead);
        return () => listeners.delete(n.name);
      },
    });
    const pool = createNodePool({
      blockchain: 'ethereum',
      network: 'goerli',
      nodes: [
        { label: 'a', adapter: withWatch(a) },
        { label: 'b', adapter: withWatch(b) },
      ],
    });
    await pool.refresh();
    const heard: number[] = [];
    const stop = pool.watchHeads?.((h) => heard.push(h));
    b.syncing = 'eth_syncing says the node is syncing';
    await pool.refresh();
    listeners.get('b')?.(99);
    listeners.get('a')?.(5);
    expect(heard).toEqual([5]);
    stop?.();
    expect(listeners.size).toBe(0);
  });
});

describe('node pool: reorganisation quorum', () => {
  it('a shallow reorganisation is acted on at once', async () => {
    const { pool } = poolOf([new ScriptedNode('a', 10), new ScriptedNode('b', 10)]);
    await pool.refresh();
    expect(await pool.checkReorganisation?.({ ancestorHeight: 7, depth: 2, ourHash: 'main-8' })).toEqual({ act: true });
  });

  it('a deep one claimed by one node alone sets that node aside until it leaves its fork; confirmed by a second, it is acted on', async () => {
    const a = new ScriptedNode('a', 20);
    const b = new ScriptedNode('b', 20);
    const { pool, view, warnings } = poolOf([a, b]);
    await pool.refresh();
    // a switches to a branch from height 15 that b does not have.
    a.fork(15, 6, 'fork');
    const verdict = await pool.checkReorganisation?.({ ancestorHeight: 14, depth: 5, ourHash: 'main-15' });
    expect(verdict).toMatchObject({ act: false });
    expect(verdict && !verdict.act && verdict.reason).toMatch(/reorganisation of 5 blocks .* claimed by a alone/);
    expect(view('a')).toMatchObject({ eligible: false });
    expect(view('a').reason).toMatch(/on a fork of its own: its block 15 \(fork-15\)/);
    expect(warnings.some((w) => /no second node confirms/.test(w))).toBe(true);
    // Reads go to b now.
    expect((await pool.getBlock(15)).hash).toBe('main-15');

    // b switches to the same branch: the reorganisation is confirmed, a is back.
    b.fork(15, 6, 'fork');
    expect(await pool.checkReorganisation?.({ ancestorHeight: 14, depth: 5, ourHash: 'main-15' })).toEqual({ act: true });
    expect(view('a')).toMatchObject({ eligible: true, reason: null });
  });

  it('a node set aside on a fork is eligible again once it returns to our chain', async () => {
    const a = new ScriptedNode('a', 20);
    const b = new ScriptedNode('b', 20);
    const { pool, view } = poolOf([a, b]);
    await pool.refresh();
    a.fork(15, 6, 'fork');
    expect((await pool.checkReorganisation?.({ ancestorHeight: 14, depth: 5, ourHash: 'main-15' }))?.act).toBe(false);
    await pool.refresh();
    expect(view('a').eligible).toBe(false);
    a.fork(15, 7, 'main');
    await pool.refresh();
    expect(view('a')).toMatchObject({ eligible: true, headHeight: 21 });
  });
});

describe('node pool: mempool', () => {
  it('the mempool is read from the first eligible node, kept while eligible; the transactions (and the eviction checks) from the node that listed them; only its pushes wake the loop', async () => {
    const wakes = new Map<string, () => void>();
    const asked: string[] = [];
    const withMempool = (n: ScriptedNode): ChainAdapter => ({
      ...n.adapter(),
      mempool: {
        method: `${n.name} polling`,
        newTransactionIds: async () => {
          asked.push(`${n.name}:list`);
          return [`${n.name}-tx`];
        },
        readPending: async (ids) => {
          asked.push(`${n.name}:read`);
          return { transactionIds: ids, coinMovements: [], tokenTransfers: [], conflicts: [] };
        },
        watch: (onNews) => {
          wakes.set(n.name, onNews);
          return () => wakes.delete(n.name);
        },
        missing: async (ids) => {
          asked.push(`${n.name}:missing`);
          return ids;
        },
        provenUnmined: async (candidates) => {
          asked.push(`${n.name}:proof`);
          return { tip: n.name, unmined: candidates.map((c) => c.transactionId) };
        },
      },
    });
    const a = new ScriptedNode('a', 5);
    const b = new ScriptedNode('b', 5);
    const pool = createNodePool({
      blockchain: 'litecoin',
      network: 'testnet',
      nodes: [
        { label: 'a', adapter: withMempool(a) },
        { label: 'b', adapter: withMempool(b) },
      ],
      probeIntervalMs: 60_000,
    });
    const mempool = pool.mempool as NonNullable<ChainAdapter['mempool']>;
    let woken = 0;
    const stop = mempool.watch?.(() => woken++);
    a.syncing = 'initial block download';
    await pool.refresh();
    expect(await mempool.newTransactionIds()).toEqual(['b-tx']); // a is syncing: the first eligible is b
    expect(mempool.method).toBe('b polling');
    a.syncing = undefined;
    await pool.refresh();
    expect(await mempool.newTransactionIds()).toEqual(['b-tx']); // b stays while eligible
    wakes.get('a')?.();
    wakes.get('b')?.();
    expect(woken).toBe(1);
    b.fault = 'down';
    await pool.refresh();
    await mempool.readPending(['b-tx']); // before the next listing: still b's
    expect(await mempool.newTransactionIds()).toEqual(['a-tx']);
    await mempool.readPending(['a-tx']);
    // Eviction checks (docs/concepts/deposit-safety.md#evicted) ask the node whose mempool was listed.
    expect(await mempool.missing?.(['a-tx'])).toEqual(['a-tx']);
    expect(await mempool.provenUnmined?.([{ transactionId: 'a-tx', claims: [] }])).toEqual({ tip: 'a', unmined: ['a-tx'] });
    expect(asked).toEqual(['b:list', 'b:list', 'b:read', 'a:list', 'a:read', 'a:missing', 'a:proof']);
    stop?.();
    expect(wakes.size).toBe(0);
    await pool.close();
  });
});

describe('node pool: chain identity (docs/reference/chains.md "Chain identity")', () => {
  // litecoin testnet as a declared regtest chain: only getblockchaininfo.chain is compared.
  const identity = {
    blockchain: 'litecoin',
    network: 'testnet',
    expected: expectedIdentity('litecoin', 'testnet', 'utxo', 'regtest') as NonNullable<ReturnType<typeof expectedIdentity>>,
  };
  const WRONG = "wrong chain: getblockchaininfo.chain is 'test', not 'regtest' (the chainId this installation declared for litecoin testnet)";

  it('a node on another chain is never read, the others go on; it is asked again at every round and read once it is right', async () => {
    const a = Object.assign(new ScriptedNode('a', 11), { chainId: 'test' });
    const b = Object.assign(new ScriptedNode('b', 11, 'other'), { chainId: 'regtest' });
    const { pool, view, warnings } = poolOf([a, b], { identity });
    expect(await pool.getHead()).toBe(10);
    expect(view('a')).toMatchObject({ eligible: false, reason: WRONG });
    expect(view('b')).toMatchObject({ eligible: true, reason: null });
    expect(warnings).toContain(`node ineligible: ${WRONG}`);
    for (let h = 0; h <= 10; h++) expect((await pool.getBlock(h)).hash).toBe(`other-${h}`);
    // Asked at every round while wrong; the right one only once while it answers.
    await pool.refresh();
    expect(a.identityCalls).toBe(2);
    expect(b.identityCalls).toBe(1);
    a.chainId = 'regtest';
    await pool.refresh();
    expect(view('a')).toMatchObject({ eligible: true, reason: null });
    expect(a.identityCalls).toBe(3);
  });

  it('a pool of one on another chain: nothing is read (no crash), the reason is reported; after a reconnection it is asked again', async () => {
    const a = Object.assign(new ScriptedNode('a', 11), { chainId: 'test' });
    const { pool, view } = poolOf([a], { identity });
    await expect(pool.getHead()).rejects.toThrow(NoEligibleNodeError);
    await expect(pool.getBlock(3)).rejects.toThrow(WRONG);
    expect(view('a')).toMatchObject({ eligible: false, reason: WRONG });
    a.chainId = 'regtest';
    expect(await pool.getHead()).toBe(10);
    expect((await pool.getBlock(3)).hash).toBe('main-3');
    const asked = a.identityCalls;
    await pool.refresh();
    expect(a.identityCalls).toBe(asked); // confirmed: not asked again while it answers
    // Down, then back as another chain (an operator pointed the URL elsewhere): asked again, refused.
    a.fault = 'down';
    await expect(pool.getBlock(4)).rejects.toThrow('connection refused');
    a.fault = undefined;
    a.chainId = 'main';
    await expect(pool.getBlock(4)).rejects.toThrow("getblockchaininfo.chain is 'main', not 'regtest'");
    expect(view('a').reason).toMatch(/^wrong chain: /);
  });

  it('a node whose adapter tells no identity, or a chain without an expected one, is read as before', async () => {
    const a = new ScriptedNode('a', 5);
    const { pool } = poolOf([a], { identity });
    expect(await pool.getHead()).toBe(4);
    expect(expectedIdentity('litecoin', 'mordor', 'utxo')).toBeUndefined();
  });
});
