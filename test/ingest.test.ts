/**
 * Chain following against a real database and a fake node: an in-memory chain that can grow, fork and
 * reorganise. Proves the timing and reorganisation rules of docs/reference/events/README.md and that a crash inside
 * a block's transaction loses and doubles nothing.
 */
import { execFile } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createNodePool } from '../src/chains/pool.ts';
import type { ChainAdapter, NormalizedBlock, TokenTransfer } from '../src/chains/types.ts';
import { applyNextBlock, type FollowerDeps, followChain, type StepResult } from '../src/ingest/follower.ts';
import { startIngest } from '../src/ingest/service.ts';
import { SubscriptionIndex } from '../src/matching/index.ts';
import { releaseChain } from '../src/services/chains.ts';
import { claimDueCallbacks, recordOutcomes } from '../src/store/callbacks.ts';
import { getHold } from '../src/store/chain-holds.ts';
import { getCursor, loadIndexableSubscriptions } from '../src/store/chain-state.ts';
import { type Db, DbError, type Queryable } from '../src/store/db.ts';
import { SAMPLE, startTestApp, type TestApp, type TestCustomer } from './harness.ts';
import { until } from './support/wait.ts';

const CHAIN = { blockchain: 'ethereum', network: 'goerli' } as const;
const run = promisify(execFile);
const TOKEN = '0x1111111111111111111111111111111111111111';
const OTHER = '0x2222222222222222222222222222222222222222';

interface FakeTx {
  id: string;
  tokenTransfers?: Omit<TokenTransfer, 'transactionId' | 'logIndex'>[];
}

/** An in-memory chain: blocks[h] is the canonical block at height h (0 = genesis). */
class FakeChain implements ChainAdapter {
  blocks: NormalizedBlock[] = [];
  private nonce = 0;
  failNext = 0;
  /** A height whose block this node serves with a parent hash that is not its own block below (a node contradicting itself). */
  lieAboutParentAt?: number;
  /** Calls of getBlock and getBlockHash, to see which the follower uses. */
  calls = { getBlock: 0, getBlockHash: 0 };

  constructor() {
    this.blocks.push(this.make(0, `0x${'0'.repeat(64)}`, []));
  }

  private make(height: number, parentHash: string, txs: FakeTx[]): NormalizedBlock {
    const hash = `0x${createHash('sha256')
      .update(`block ${height} ${++this.nonce}`)
      .digest('hex')}`;
    let logIndex = 0;
    return {
      height,
      hash,
      parentHash,
      timestamp: 1_700_000_000 + height * 12,
      transactionIds: txs.map((t) => t.id),
      tokenTransfers: txs.flatMap((t) => (t.tokenTransfers ?? []).map((tt) => ({ ...tt, transactionId: t.id, logIndex: logIndex++ }))),
      internalTransfers: [],
      coinMovements: [],
    };
  }

  get head(): number {
    return this.blocks.length - 1;
  }

  /** Adds one block on top, with these transactions. */
  grow(txs: FakeTx[] = []): NormalizedBlock {
    const block = this.make(this.blocks.length, (this.blocks.at(-1) as NormalizedBlock).hash, txs);
    this.blocks.push(block);
    return block;
  }

  /** Drops the blocks from `height` up: the next grow() builds a competing branch from height - 1. */
  fork(height: number): void {
    this.blocks.length = height;
  }

  async getHead(): Promise<number> {
    return this.head;
  }

  async getBlockHash(height: number): Promise<string> {
    this.calls.getBlockHash++;
    const block = this.blocks[height];
    if (!block) throw new Error(`no block at ${height}`);
    return block.hash;
  }

  async getBlock(height: number): Promise<NormalizedBlock> {
    this.calls.getBlock++;
    if (this.failNext > 0) {
      this.failNext--;
      throw new Error('node unavailable');
    }
    const block = this.blocks[height];
    if (!block) throw new Error(`no block at ${height}`);
    if (height === this.lieAboutParentAt) return { ...structuredClone(block), parentHash: `0x${'e'.repeat(64)}` };
    return structuredClone(block);
  }
}

const txid = (n: number) => `0x${n.toString(16).padStart(64, '0')}`;
const tokenTo = (to: string, amount = 5n) => ({ tokenType: 'ERC-20' as const, contract: TOKEN, from: OTHER, to, amount });

interface CallbackRow {
  subscription_id: string;
  idempotency_key: string;
  status: string;
  outcome: string | null;
  event_type: string;
  body: string;
}

let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

async function setup(options: { window?: number } = {}) {
  t = await startTestApp({ roles: ['api'] });
  const app = t;
  const db = app.app.database.db;
  const customer = await app.customer();
  const chain = new FakeChain();
  const logger = { error: vi.fn(), warn: vi.fn(), info: vi.fn() };
  let index = new SubscriptionIndex(CHAIN.blockchain, CHAIN.network);
  const deps: FollowerDeps = { db, adapter: chain, index: () => index, logger, defaultConfirmations: 3, window: options.window, startHeight: 1 };

  async function subscribe(kind: 'mined' | 'tokens' | 'tokens-each', item: Record<string, unknown>, who: TestCustomer = customer): Promise<string> {
    const path = {
      mined: 'transaction-mined',
      tokens: 'address-tokens-transactions-confirmed',
      'tokens-each': 'address-tokens-transactions-confirmed-each-confirmation',
    }[kind];
    const r = await app.request('POST', `/blockchain-events/${CHAIN.blockchain}/${CHAIN.network}/subscriptions/${path}`, {
      key: who.key,
      body: { data: { item: { callbackUrl: SAMPLE.callbackUrl, ...item } } },
    });
    expect(r.status, r.text).toBeLessThan(300);
    index = new SubscriptionIndex(CHAIN.blockchain, CHAIN.network);
    for (const s of await loadIndexableSubscriptions(db, CHAIN)) index.add(s);
    return r.body.data.item.referenceId;
  }

  /** Applies blocks until caught up; returns every step's result. */
  async function follow(d: FollowerDeps = deps): Promise<StepResult[]> {
    const steps: StepResult[] = [];
    for (let i = 0; i < 500; i++) {
      const step = await applyNextBlock(d, CHAIN);
      steps.push(step);
      if (step.kind === 'caught-up' || step.kind === 'stopped') return steps;
    }
    throw new Error('did not catch up');
  }

  /** Applies exactly one block (or reorganisation step). */
  const step = (d: FollowerDeps = deps) => applyNextBlock(d, CHAIN);

  async function callbacks(subscriptionId?: string): Promise<CallbackRow[]> {
    return await db.query<CallbackRow>(
      'test:ingest-callbacks',
      `SELECT subscription_id, idempotency_key, status, outcome, event_type, body FROM callbacks
       WHERE $1::uuid IS NULL OR subscription_id = $1::uuid ORDER BY created_at, id`,
      [subscriptionId ?? null],
    );
  }

  async function pendingCount(): Promise<number> {
    const [row] = await db.query<{ n: number }>('test:ingest-pending', 'SELECT count(*)::int AS n FROM pending_events WHERE blockchain = $1', [
      CHAIN.blockchain,
    ]);
    return row?.n ?? 0;
  }

  return { db, customer, chain, logger, deps, subscribe, follow, step, callbacks, pendingCount };
}

describe('chain following', () => {
  it('enqueues the mined callback of a subscribed transaction exactly once', async () => {
    const s = await setup();
    const sub = await s.subscribe('mined', { transactionId: txid(7) });
    s.chain.grow();
    const mined = s.chain.grow([{ id: txid(7) }, { id: txid(8) }]);
    s.chain.grow();
    await s.follow();
    for (let i = 0; i < 5; i++) s.chain.grow([{ id: txid(100 + i) }]);
    await s.follow();

    const rows = await s.callbacks(sub);
    expect(rows).toHaveLength(1);
    const body = JSON.parse((rows[0] as CallbackRow).body);
    expect(body).toMatchObject({
      referenceId: sub,
      idempotencyKey: rows[0]?.idempotency_key,
      data: {
        product: 'BLOCKCHAIN_EVENTS',
        event: 'TRANSACTION_MINED',
        item: { ...CHAIN, transactionId: txid(7), minedInBlock: { height: 2, hash: mined.hash, timestamp: mined.timestamp } },
      },
    });
    expect(body.idempotencyKey).toMatch(/^[0-9a-f]{64}$/);
    expect(await s.callbacks()).toHaveLength(1);
    expect(await getCursor(s.db, CHAIN)).toMatchObject({ height: 8, state: 'following' });
  });

  it('enqueues a token callback at the receiveCallbackOn-th confirmation: not before, once, never again', async () => {
    const s = await setup();
    const sub = await s.subscribe('tokens', { address: SAMPLE.evmAddress, receiveCallbackOn: 4 });
    s.chain.grow();
    const block = s.chain.grow([{ id: txid(9), tokenTransfers: [tokenTo(SAMPLE.evmAddress, 1234n)] }]); // height 2
    for (let i = 0; i < 10; i++) s.chain.grow();

    expect((await s.step()).kind).toBe('applied'); // 1
    expect((await s.step()).kind).toBe('applied'); // 2: mined, 1 confirmation
    expect(await s.pendingCount()).toBe(1);
    await s.step(); // 3: 2 confirmations
    await s.step(); // 4: 3 confirmations (N-1)
    expect(await s.callbacks(sub)).toHaveLength(0);
    await s.step(); // 5: 4 confirmations
    const rows = await s.callbacks(sub);
    expect(rows).toHaveLength(1);
    expect(await s.pendingCount()).toBe(0);
    const body = JSON.parse((rows[0] as CallbackRow).body);
    expect(body.data.event).toBe('ADDRESS_TOKENS_TRANSACTION_CONFIRMED');
    expect(body.data.item).toMatchObject({
      address: SAMPLE.evmAddress,
      direction: 'incoming',
      transactionId: txid(9),
      minedInBlock: { height: 2, hash: block.hash },
    });
    await s.follow();
    expect(await s.callbacks(sub)).toHaveLength(1);
  });

  it('a step that finds the cursor elsewhere than it expected (another follower moved it) rolls back: what it took stays due', async () => {
    const s = await setup();
    const sub = await s.subscribe('tokens', { address: SAMPLE.evmAddress, receiveCallbackOn: 4 });
    s.chain.grow();
    s.chain.grow([{ id: txid(9), tokenTransfers: [tokenTo(SAMPLE.evmAddress, 1234n)] }]); // height 2, due at 5
    for (let i = 0; i < 10; i++) s.chain.grow();
    await s.step(); // 1
    await s.step(); // 2
    expect(await s.pendingCount()).toBe(1);

    // A follower that believes block 4 applied (the cursor is at 2): block 5 links to 4, so it goes as far as the
    // block's transaction, whose statement reads the cursor and takes what is due at 5 at once.
    const hinted: FollowerDeps = { ...s.deps, lastApplied: { value: { height: 4, hash: (s.chain.blocks[4] as NormalizedBlock).hash } } };
    expect((await s.step(hinted)).kind).toBe('raced');
    expect(await s.pendingCount()).toBe(1);
    expect(await s.callbacks(sub)).toHaveLength(0);
    expect((await getCursor(s.db, CHAIN))?.height).toBe(2);

    await s.follow();
    expect(await s.callbacks(sub)).toHaveLength(1);
    expect(await s.pendingCount()).toBe(0);
  });

  it('a reorganisation of depth 2 cancels the orphaned events; the re-mined transaction fires with the new block and a new key', async () => {
    const s = await setup();
    const mined = await s.subscribe('mined', { transactionId: txid(42) });
    const tokens = await s.subscribe('tokens', { address: SAMPLE.evmAddress, receiveCallbackOn: 3 });
    const tx: FakeTx = { id: txid(42), tokenTransfers: [tokenTo(SAMPLE.evmAddress)] };
    s.chain.grow(); // 1
    s.chain.grow(); // 2
    s.chain.grow(); // 3
    s.chain.grow(); // 4
    const orphan = s.chain.grow([tx]); // 5
    await s.follow();
    const before = await s.callbacks(mined);
    expect(before).toHaveLength(1);
    expect(await s.pendingCount()).toBe(1);
    expect(await s.callbacks(tokens)).toHaveLength(0);

    // The node switches to a branch from height 4: 4' (empty), 5' (the same transaction), 6', 7'.
    s.chain.fork(4);
    s.chain.grow();
    const remined = s.chain.grow([tx]);
    s.chain.grow();
    s.chain.grow();
    const first = await s.step();
    expect(first).toMatchObject({ kind: 'reorganised', ancestorHeight: 3, depth: 2, pendingDeleted: 1, callbacksCancelled: 1 });
    expect(await s.pendingCount()).toBe(0);
    expect(await getCursor(s.db, CHAIN)).toMatchObject({ height: 3 });
    await s.follow();

    const minedRows = await s.callbacks(mined);
    expect(minedRows).toHaveLength(2);
    const [old, fresh] = minedRows as [CallbackRow, CallbackRow];
    expect(old).toMatchObject({ status: 'cancelled', outcome: 'reorganised' });
    expect(JSON.parse(old.body).data.item.minedInBlock.hash).toBe(orphan.hash);
    expect(fresh.status).toBe('pending');
    expect(fresh.idempotency_key).not.toBe(old.idempotency_key);
    const freshBody = JSON.parse(fresh.body);
    expect(freshBody.idempotencyKey).toBe(fresh.idempotency_key);
    expect(freshBody.data.item.minedInBlock).toEqual({ height: 5, hash: remined.hash, timestamp: remined.timestamp });

    // The orphaned confirmed event never fired; the re-mined one fired once, at 3 confirmations (7').
    const tokenRows = await s.callbacks(tokens);
    expect(tokenRows).toHaveLength(1);
    const tokenBody = JSON.parse((tokenRows[0] as CallbackRow).body);
    expect(tokenBody.data.item.minedInBlock.hash).toBe(remined.hash);
    expect(tokenBody.idempotencyKey).not.toBe(old.idempotency_key);
  });

  it("each confirmation: one callback per confirmation 1..N with its counts and own key; a reorganisation in the middle starts again at 1 in the new block and never repeats the dropped block's", async () => {
    const s = await setup();
    const sub = await s.subscribe('tokens-each', { address: SAMPLE.evmAddress, confirmationsCount: 4 });
    const tx: FakeTx = { id: txid(77), tokenTransfers: [tokenTo(SAMPLE.evmAddress, 500n)] };
    s.chain.grow(); // 1
    s.chain.grow(); // 2
    const orphan = s.chain.grow([tx]); // 3: the transfer
    s.chain.grow(); // 4
    await s.follow();
    const sent = (await s.callbacks(sub)).map((r) => ({ ...r, json: JSON.parse(r.body) }));
    // Confirmations 1 (block 3) and 2 (block 4) so far, in order, each with its own key.
    expect(sent.map((r) => [r.json.data.item.currentConfirmations, r.json.data.item.targetConfirmations])).toEqual([
      [1, 4],
      [2, 4],
    ]);
    expect(new Set(sent.map((r) => r.idempotency_key)).size).toBe(2);
    for (const r of sent) {
      expect(r.json.idempotencyKey).toBe(r.idempotency_key);
      expect(r.json.data).toMatchObject({
        event: 'ADDRESS_TOKENS_TRANSACTION_CONFIRMED_EACH_CONFIRMATION',
        item: { address: SAMPLE.evmAddress, transactionId: txid(77), direction: 'incoming', minedInBlock: { height: 3, hash: orphan.hash } },
      });
    }
    expect(await s.pendingCount()).toBe(2); // confirmations 3 and 4 wait for blocks 5 and 6

    // The node switches to a branch from height 3: 3' (empty), 4' (the transfer again), 5', ...
    s.chain.fork(3);
    s.chain.grow(); // 3'
    const remined = s.chain.grow([tx]); // 4'
    for (let i = 0; i < 6; i++) s.chain.grow();
    const first = await s.step();
    expect(first).toMatchObject({ kind: 'reorganised', ancestorHeight: 2, pendingDeleted: 2, callbacksCancelled: 2 });
    await s.follow();

    const all = (await s.callbacks(sub)).map((r) => ({ ...r, json: JSON.parse(r.body) }));
    const dropped = all.filter((r) => r.json.data.item.minedInBlock.hash === orphan.hash);
    const fresh = all.filter((r) => r.json.data.item.minedInBlock.hash === remined.hash);
    // The dropped block's confirmations: the two already made, cancelled unsent; 3 and 4 never made.
    expect(dropped.map((r) => r.json.data.item.currentConfirmations)).toEqual([1, 2]);
    for (const r of dropped) expect(r).toMatchObject({ status: 'cancelled', outcome: 'reorganised' });
    // The new block: 1 to 4 again, once each, with keys of their own.
    expect(fresh.map((r) => r.json.data.item.currentConfirmations)).toEqual([1, 2, 3, 4]);
    expect(fresh.every((r) => r.json.data.item.minedInBlock.height === 4)).toBe(true);
    expect(new Set(all.map((r) => r.idempotency_key)).size).toBe(6);
    expect(await s.pendingCount()).toBe(0);
  });

  it('a head replaced at the same height is a reorganisation at once, before any further block; caught up and unchanged costs one hash call', async () => {
    const s = await setup();
    const mined = await s.subscribe('mined', { transactionId: txid(55) });
    for (let i = 0; i < 4; i++) s.chain.grow(); // 1..4
    const orphan = s.chain.grow([{ id: txid(55) }]); // 5
    expect((await s.follow()).at(-1)).toEqual({ kind: 'caught-up', head: 5 });
    expect(await s.callbacks(mined)).toMatchObject([{ status: 'pending' }]);

    // Caught up and nothing changed: the check asks the hash at the cursor, never the whole block.
    s.chain.calls = { getBlock: 0, getBlockHash: 0 };
    expect(await s.step()).toEqual({ kind: 'caught-up', head: 5 });
    expect(s.chain.calls).toEqual({ getBlock: 0, getBlockHash: 1 });

    // The node replaces block 5 by 5' (without the transaction) at the same height: no block 6 exists.
    s.chain.fork(5);
    const replacement = s.chain.grow();
    expect(s.chain.head).toBe(5);
    expect(await s.step()).toMatchObject({ kind: 'reorganised', ancestorHeight: 4, depth: 1, callbacksCancelled: 1 });
    const [row] = await s.callbacks(mined);
    expect(row).toMatchObject({ status: 'cancelled', outcome: 'reorganised' });
    expect(JSON.parse((row as CallbackRow).body).data.item.minedInBlock.hash).toBe(orphan.hash);
    expect(await getCursor(s.db, CHAIN)).toMatchObject({ height: 4 });
    // The replacement is then applied as the next block, and nothing fires for it.
    expect(await s.step()).toMatchObject({ kind: 'applied', height: 5, hash: replacement.hash });
    expect(await s.step()).toEqual({ kind: 'caught-up', head: 5 });
    expect(await s.callbacks(mined)).toHaveLength(1);
  });

  it('several nodes: a fork past the window that one node alone claims neither stops nor rewinds the chain; confirmed by a second node, it stops it as with one', async () => {
    const s = await setup({ window: 4 });
    const other = new FakeChain();
    for (let i = 0; i < 8; i++) s.chain.grow();
    other.blocks = [...s.chain.blocks];
    const pool = createNodePool({
      blockchain: CHAIN.blockchain,
      network: CHAIN.network,
      nodes: [
        { label: 'a', adapter: s.chain },
        { label: 'b', adapter: other },
      ],
      logger: s.logger,
    });
    const d = { ...s.deps, adapter: pool };
    expect((await s.follow(d)).at(-1)).toEqual({ kind: 'caught-up', head: 8 });
    const ours = await getCursor(s.db, CHAIN);

    // Node a alone moves to a branch from height 2: past the window of 4, and b does not have it.
    s.chain.fork(2);
    for (let i = 0; i < 9; i++) s.chain.grow();
    const steps = await s.follow(d);
    expect(steps).toEqual([
      { kind: 'reorganisation-refused', depth: 4, reason: 'a reorganisation of 4 blocks (more than reorgQuorumDepth 2) claimed by a alone' },
      { kind: 'caught-up', head: 8 },
    ]);
    expect(await getCursor(s.db, CHAIN)).toMatchObject({ height: 8, hash: ours?.hash, state: 'following' });
    expect(s.logger.error).not.toHaveBeenCalled();
    expect(pool.views().find((v) => v.node === 'a')).toMatchObject({ eligible: false, reason: expect.stringMatching(/^on a fork of its own/) });

    // b moves to the same branch: two nodes agree, and a reorganisation past the window stops the chain as it always did.
    other.blocks = [...s.chain.blocks];
    expect((await s.follow(d)).at(-1)).toMatchObject({ kind: 'stopped', reason: expect.stringMatching(/deeper than the window of 4 blocks/) });
    expect(s.logger.error).toHaveBeenCalledTimes(1);
    await pool.close();
  });

  it('the deep-reorganisation breaker: a rewind deeper than reorgBreakerDepth holds the confirmed callbacks (never claimed, an in-flight retry stays held) until the release; a shallower one does not', async () => {
    const s = await setup();
    const d = { ...s.deps, reorgBreakerDepth: 2 };
    const tokens = await s.subscribe('tokens', { address: SAMPLE.evmAddress, receiveCallbackOn: 1 });
    const mined = await s.subscribe('mined', { transactionId: txid(7) });
    // One worker's claims (the destination is leased to it): what it has on its way, its outcome not recorded, it leaves out.
    const holder = randomUUID();
    const onTheirWay = new Set<string>();
    const claim = async (now = new Date()) => {
      const claimed = await claimDueCallbacks(s.db, { now, limit: 100, leaseMs: 60_000, skipDestinations: [], holder, inFlight: [...onTheirWay] });
      for (const c of claimed) onTheirWay.add(c.id);
      return claimed;
    };
    s.chain.grow([{ id: txid(6), tokenTransfers: [tokenTo(SAMPLE.evmAddress)] }]); // 1: its callback queued, claimed below (in flight)
    s.chain.grow(); // 2
    s.chain.grow(); // 3
    await s.follow(d);
    const [inFlight] = await claim();
    expect(inFlight?.eventType).toBe('ADDRESS_TOKENS_TRANSACTION_CONFIRMED');

    // A 2-block reorganisation: not deeper than the breaker.
    s.chain.fork(2);
    s.chain.grow();
    s.chain.grow();
    expect(await s.step(d)).toMatchObject({ kind: 'reorganised', depth: 2, held: false });
    await s.follow(d);
    expect(await getHold(s.db, CHAIN)).toBeUndefined();

    // A 3-block one (4 is dropped too): held. The new transfer and the ones after queue held; TRANSACTION_MINED does not.
    s.chain.grow();
    await s.follow(d);
    s.chain.fork(2);
    s.chain.grow([{ id: txid(8), tokenTransfers: [tokenTo(SAMPLE.evmAddress, 9n)] }, { id: txid(7) }]);
    s.chain.grow();
    s.chain.grow();
    s.chain.grow();
    expect(await s.step(d)).toMatchObject({ kind: 'reorganised', depth: 3, held: true });
    await s.follow(d);
    const hold = await getHold(s.db, CHAIN);
    expect(hold).toMatchObject({ reason: 'reorganisation', depth: 3, breakerDepth: 2, trips: [{ ancestorHeight: 1, depth: 3 }] });
    expect(hold?.trips[0]?.blocks.map((b) => b.height)).toEqual([2, 3, 4]);
    expect(hold?.trips[0]?.blocks.map((b) => b.newHash)).toEqual([2, 3, 4].map((h) => s.chain.blocks[h]?.hash));
    const due = await claim(new Date(Date.now() + 86_400_000));
    expect(due.map((c) => c.subscriptionId)).toEqual([mined]);
    expect(await s.callbacks(tokens)).toHaveLength(2);

    // The in-flight attempt fails with a retry: the retry stays held.
    const attempt = { startedAt: new Date(), durationMs: 5, httpStatus: 500, errorClass: 'bad_status' as const, errorMessage: 'HTTP 500', responseBody: null };
    await recordOutcomes(
      s.db,
      [
        {
          ...attempt,
          callbackId: inFlight?.id as string,
          destination: inFlight?.destination as string,
          probe: false,
          result: 'retry',
          nextAttemptAt: new Date(),
        },
      ],
      new Date(),
    );
    onTheirWay.delete(inFlight?.id as string);
    expect(await claim(new Date(Date.now() + 86_400_000))).toEqual([]);

    // The release makes both due, once (the litecoind test restarts herald while held: test/reorg-breaker-litecoin.test.ts).
    const released = await releaseChain(s.db, CHAIN);
    expect(released).toMatchObject({ callbacksReleased: 2, hold: { depth: 3 } });
    expect((await claim()).map((c) => c.subscriptionId).sort()).toEqual([tokens, tokens]);
    expect(await releaseChain(s.db, CHAIN)).toEqual({ callbacksReleased: 0 });
  });

  it('the breaker trips when nodes disagree deeper than it: the chain is not rewound but held', async () => {
    const s = await setup();
    const other = new FakeChain();
    for (let i = 0; i < 8; i++) s.chain.grow();
    other.blocks = [...s.chain.blocks];
    const pool = createNodePool({
      blockchain: CHAIN.blockchain,
      network: CHAIN.network,
      nodes: [
        { label: 'a', adapter: s.chain },
        { label: 'b', adapter: other },
      ],
      logger: s.logger,
    });
    const d = { ...s.deps, adapter: pool, reorgBreakerDepth: 3 };
    expect((await s.follow(d)).at(-1)).toEqual({ kind: 'caught-up', head: 8 });
    s.chain.fork(4);
    for (let i = 0; i < 6; i++) s.chain.grow();
    expect((await s.follow(d))[0]).toMatchObject({ kind: 'reorganisation-refused', depth: 5 });
    expect(await getHold(s.db, CHAIN)).toMatchObject({
      reason: 'disagreement',
      depth: 5,
      trips: [{ ancestorHeight: 3, detail: expect.stringContaining('claimed by a alone') }],
    });
    expect(await getCursor(s.db, CHAIN)).toMatchObject({ height: 8, state: 'following' });
    await pool.close();
  });

  it('a node whose block does not link to its own block below is no reorganisation: the step fails and backs off, the node is set aside, another is read', async () => {
    const s = await setup();
    for (let i = 0; i < 3; i++) s.chain.grow();
    expect((await s.follow()).at(-1)).toEqual({ kind: 'caught-up', head: 3 });
    s.chain.grow();
    s.chain.lieAboutParentAt = 4;
    const reorganisations = async () => (await s.db.query<{ n: number }>('test:reorganisations', 'SELECT count(*)::int AS n FROM chain_reorganisations'))[0]?.n;
    await expect(s.step()).rejects.toThrow(/inconsistent parent hashes/);
    expect(await getCursor(s.db, CHAIN)).toMatchObject({ height: 3, hash: s.chain.blocks[3]?.hash });

    // Followed by the loop: retried with the doubling backoff, not at full speed (2,730 "reorganisations" in 41 s before).
    const stop = new AbortController();
    const results: StepResult[] = [];
    const before = s.chain.calls.getBlock;
    const following = followChain({ ...s.deps }, CHAIN, { signal: stop.signal, backoffMinMs: 100, pollMs: 50, onStep: (r) => results.push(r) });
    await new Promise((r) => setTimeout(r, 1_200));
    stop.abort();
    await following;
    expect(s.chain.calls.getBlock - before).toBeLessThanOrEqual(6); // 0, 100, 300, 700 ms (+ 1,500 after the test)
    expect(results).toEqual([]);
    expect(await reorganisations()).toBe(0);
    expect(s.logger.warn).not.toHaveBeenCalledWith(expect.anything(), 'chain reorganisation: rewound to the common ancestor');

    // Two nodes: the one contradicting itself is counted against and set aside; the block is read from the other.
    const other = new FakeChain();
    other.blocks = [...s.chain.blocks];
    const pool = createNodePool({
      blockchain: CHAIN.blockchain,
      network: CHAIN.network,
      nodes: [
        { label: 'a', adapter: s.chain },
        { label: 'b', adapter: other },
      ],
      logger: s.logger,
    });
    const d = { ...s.deps, adapter: pool };
    await expect(s.step(d)).rejects.toThrow(/inconsistent parent hashes/);
    const a = pool.views().find((v) => v.node === 'a');
    expect(a).toMatchObject({ eligible: false, reason: expect.stringMatching(/^serving inconsistent blocks .*left alone for 5 s$/) });
    expect(a?.errorRate).toBeGreaterThan(0);
    expect(await s.step(d)).toMatchObject({ kind: 'applied', height: 4, hash: s.chain.blocks[4]?.hash });
    expect(await reorganisations()).toBe(0);
    await pool.close();
  });

  it('the same-height check works with an adapter that has no getBlockHash (the whole block is read)', async () => {
    const s = await setup();
    const bare: ChainAdapter = { getHead: () => s.chain.getHead(), getBlock: (h) => s.chain.getBlock(h) };
    const d = { ...s.deps, adapter: bare };
    for (let i = 0; i < 3; i++) s.chain.grow();
    expect((await s.follow(d)).at(-1)).toEqual({ kind: 'caught-up', head: 3 });
    s.chain.fork(3);
    s.chain.grow();
    expect(await s.step(d)).toMatchObject({ kind: 'reorganised', ancestorHeight: 2, depth: 1 });
    expect(s.chain.calls.getBlockHash).toBe(0);
  });

  it('a reorganisation deeper than the window stops the chain with a reason, loudly, and skips nothing', async () => {
    const s = await setup({ window: 4 });
    await s.subscribe('mined', { transactionId: txid(5) });
    for (let i = 0; i < 8; i++) s.chain.grow();
    await s.follow();
    s.chain.fork(2);
    for (let i = 0; i < 9; i++) s.chain.grow([{ id: txid(5) }]);

    const steps = await s.follow();
    expect(steps.at(-1)).toMatchObject({ kind: 'stopped' });
    const cursor = await getCursor(s.db, CHAIN);
    expect(cursor).toMatchObject({ height: 8, state: 'stopped' });
    expect(cursor?.stopReason).toMatch(/deeper than the window of 4 blocks/);
    expect(s.logger.error).toHaveBeenCalledTimes(1);
    expect(await s.step()).toMatchObject({ kind: 'stopped', reason: cursor?.stopReason });
    expect(await s.callbacks()).toHaveLength(0);

    // The operator's way out: `herald chains reset` forgets the state; following starts again at the
    // configured start height (here 1) on the node's current chain.
    const env = { ...process.env, DATABASE_URL: t?.config.databaseUrl, HERALD_LOG_LEVEL: 'silent' };
    const { stdout } = await run('node', ['bin/herald.js', 'chains', 'reset', '--blockchain', 'ethereum', '--network', 'goerli', '--yes'], { env });
    expect(stdout).toMatch(/forgot the cursor at 8 \(stopped\)/);
    expect(await getCursor(s.db, CHAIN)).toBeUndefined();
    const resumed = await s.follow();
    expect(resumed.at(-1)).toMatchObject({ kind: 'caught-up' });
    expect(await getCursor(s.db, CHAIN)).toMatchObject({ height: s.chain.head, state: 'following', hash: s.chain.blocks.at(-1)?.hash });
  });

  it('a crash inside a block transaction loses nothing and doubles nothing; node errors are retried, not skipped', async () => {
    const s = await setup();
    const mined = await s.subscribe('mined', { transactionId: txid(77) });
    const tokens = await s.subscribe('tokens', { address: SAMPLE.evmAddress, receiveCallbackOn: 2 });
    s.chain.grow(); // 1
    s.chain.grow([{ id: txid(77), tokenTransfers: [tokenTo(SAMPLE.evmAddress)] }]); // 2
    s.chain.grow(); // 3: token due
    s.chain.grow(); // 4

    // A Db whose transactions die just before the cursor moves (the block's write, store/block-apply.ts), at chosen heights.
    let crashes = 0;
    const crashAt = new Set([2, 3]);
    const crashing: Db = {
      ...s.db,
      query: s.db.query.bind(s.db),
      transaction: (label, work) =>
        s.db.transaction(label, (tx) =>
          work({
            query: (async (l: string, sql: string, params?: readonly unknown[]) => {
              if (l === 'block:write' && crashAt.has(Number(params?.[2]))) {
                crashAt.delete(Number(params?.[2]));
                crashes++;
                throw new Error('simulated crash');
              }
              return await tx.query(l, sql, params);
            }) as Queryable['query'],
          }),
        ),
    };
    const d = { ...s.deps, db: crashing };
    expect((await s.step(d)).kind).toBe('applied'); // 1
    await expect(s.step(d)).rejects.toThrow('simulated crash'); // 2 dies
    expect(await s.callbacks()).toHaveLength(0);
    expect(await s.pendingCount()).toBe(0);
    expect(await getCursor(s.db, CHAIN)).toMatchObject({ height: 1 });
    expect((await s.step(d)).kind).toBe('applied'); // 2 again
    s.chain.failNext = 2;
    await expect(s.step(d)).rejects.toThrow('node unavailable'); // 3: node down
    await expect(s.step(d)).rejects.toThrow('node unavailable');
    await expect(s.step(d)).rejects.toThrow('simulated crash'); // 3 dies after promoting
    expect(await getCursor(s.db, CHAIN)).toMatchObject({ height: 2 });
    expect(await s.pendingCount()).toBe(1);
    await s.follow(d);
    expect(crashes).toBe(2);

    expect(await s.callbacks(mined)).toHaveLength(1);
    const tokenRows = await s.callbacks(tokens);
    expect(tokenRows).toHaveLength(1);
    expect(JSON.parse((tokenRows[0] as CallbackRow).body).data.item.minedInBlock.height).toBe(2);
    expect(await getCursor(s.db, CHAIN)).toMatchObject({ height: 4, state: 'following' });
  });
});

describe('the ingest service', () => {
  it('a reload that fails while the database is unreachable is tried again: the followers start and the changes announced meanwhile count', async () => {
    const s = await setup();
    const app = t as TestApp;
    // The pool refuses the index loads a few times, as while PostgreSQL restarts behind a pooler; the
    // change listener (which asks for the reload) is already back on its direct connection.
    let refusals = 3;
    const flaky: Db = {
      ...s.db,
      query: (async (label: string, sql: string, params?: readonly unknown[]) => {
        if (label === 'chain:indexable-subscriptions' && refusals > 0) {
          refusals--;
          throw new DbError(label, '57P03', true, undefined, new Error('the database system is starting up'));
        }
        return await s.db.query(label, sql, params);
      }) as Queryable['query'],
    };
    const ingest = startIngest({
      db: flaky,
      config: {
        ...app.config,
        chains: [{ ...CHAIN, rpcUrl: 'http://127.0.0.1:1', pollIntervalMs: 10, concurrency: 1, requestTimeoutMs: 1000, startHeight: 1 }],
      },
      logger: pino({ level: 'silent' }),
      createAdapter: () => s.chain,
    });
    try {
      const loading = ingest.reload();
      const sub = await s.subscribe('mined', { transactionId: txid(9) });
      ingest.onSubscriptionChange({ id: sub, ...CHAIN, op: 'INSERT' });
      await loading;
      expect(refusals).toBe(0);
      s.chain.grow();
      s.chain.grow([{ id: txid(9) }]);
      await until('the mined callback', async () => (await s.callbacks(sub)).length === 1);
      expect(await getCursor(s.db, CHAIN)).toMatchObject({ height: 2 });
    } finally {
      await ingest.close();
    }
  });
});
