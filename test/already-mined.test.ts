/**
 * The start-up already-mined check (src/ingest/already-mined.ts) on its own, against a real database and
 * a node that batches lookups (findTransactions): how its checks are grouped into node requests, how
 * many such requests wait on the node at once, and that a failed request is retried for every check in
 * it, so each subscribed transaction that was mined gets exactly one callback. (The end-to-end paths,
 * through a real node, are in test/evm-follow.test.ts and test/find-transactions.test.ts.)
 */
import { createHash } from 'node:crypto';
import { afterEach, expect, it, vi } from 'vitest';
import type { ChainAdapter, NormalizedBlock, TransactionLocation } from '../src/chains/types.ts';
import { startAlreadyMinedChecks } from '../src/ingest/already-mined.ts';
import { applyNextBlock } from '../src/ingest/follower.ts';
import { SubscriptionIndex } from '../src/matching/index.ts';
import { SAMPLE, startTestApp, type TestApp } from './harness.ts';
import { until } from './support/wait.ts';

const CHAIN = { blockchain: 'ethereum', network: 'goerli' } as const;
const txid = (n: number) => `0x${n.toString(16).padStart(64, '0')}`;

/** A node whose blocks each hold 100 transactions, and which answers batched lookups slowly, failing when told to. */
class BatchingNode implements ChainAdapter {
  readonly blocks: NormalizedBlock[] = [];
  /** The size of each findTransactions request, in the order they came. */
  readonly batches: number[] = [];
  inFlight = 0;
  maxInFlight = 0;
  /** Requests (counted from 1) that fail once. */
  failing = new Set<number>();

  constructor(transactions: number) {
    for (let height = 0; height <= Math.ceil(transactions / 100); height++) {
      const ids = height === 0 ? [] : Array.from({ length: 100 }, (_, i) => txid((height - 1) * 100 + i)).slice(0, transactions - (height - 1) * 100);
      this.blocks.push({
        height,
        hash: `0x${createHash('sha256').update(`block ${height}`).digest('hex')}`,
        parentHash: height === 0 ? `0x${'0'.repeat(64)}` : (this.blocks[height - 1] as NormalizedBlock).hash,
        timestamp: 1_700_000_000 + height * 12,
        transactionIds: ids,
        tokenTransfers: [],
        internalTransfers: [],
        coinMovements: [],
      });
    }
  }

  async getHead() {
    return this.blocks.length - 1;
  }

  async getBlockHash(height: number) {
    return (this.blocks[height] as NormalizedBlock).hash;
  }

  async getBlock(height: number) {
    return structuredClone(this.blocks[height] as NormalizedBlock);
  }

  async findTransactions(ids: readonly string[]): Promise<(TransactionLocation | undefined)[]> {
    const request = this.batches.push(ids.length);
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      await new Promise((done) => setTimeout(done, 30));
      if (this.failing.delete(request)) throw new Error('node unavailable');
      return ids.map((id) => {
        const block = this.blocks.find((b) => b.transactionIds.includes(id));
        return block && { height: block.height, hash: block.hash };
      });
    } finally {
      this.inFlight--;
    }
  }
}

let t: TestApp | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

it('start-up checks ask the node 100 transactions at a time, 4 requests at most at once, and retry every check of a failed request', async () => {
  // 650 subscriptions: 600 of mined transactions (blocks 1-6), 50 of transactions the node does not know.
  const MINED = 600;
  t = await startTestApp({ roles: ['api'] });
  const app = t;
  const db = app.app.database.db;
  const customer = await app.customer();
  const node = new BatchingNode(MINED);
  // The chain is applied with an index that knows none of the subscriptions: they were created while no
  // ingest process listened, which is what the start-up check is for.
  const empty = new SubscriptionIndex(CHAIN.blockchain, CHAIN.network);
  const logger = { error: vi.fn(), warn: vi.fn(), info: vi.fn() };
  const deps = { db, adapter: node, index: () => empty, logger, defaultConfirmations: 3, startHeight: 1 };
  const items = Array.from({ length: MINED + 50 }, (_, i) => ({ transactionId: txid(i), callbackUrl: SAMPLE.callbackUrl }));
  const created = await app.request('POST', `/blockchain-events/${CHAIN.blockchain}/${CHAIN.network}/subscriptions/transaction-mined/bulk`, {
    key: customer.key,
    body: { data: { items } },
  });
  expect(created.status, created.text).toBe(200);
  expect(created.body.data.created).toBe(items.length);
  for (let i = 0; i < 20; i++) if ((await applyNextBlock(deps, CHAIN)).kind === 'caught-up') break;

  node.failing.add(2); // the second request fails once: its 100 checks come back later
  const checks = startAlreadyMinedChecks({ db, logger });
  try {
    expect(await checks.checkAllUncalled({ key: CHAIN, adapter: node, confirmations: 3 })).toBe(items.length);
    const called = async () => {
      const [row] = await db.query<{ n: number; keys: number }>(
        'test:already-mined-count',
        `SELECT count(*)::int AS n, count(DISTINCT subscription_id)::int AS keys FROM callbacks WHERE customer_id = $1`,
        [customer.id],
      );
      return row as { n: number; keys: number };
    };
    await until('every mined transaction called back', async () => (await called()).n === MINED, 20_000);
    await checks.settled();
    // One callback per mined transaction (none for the 50 unknown ones), none twice.
    expect(await called()).toEqual({ n: MINED, keys: MINED });
    // 650 checks: 7 requests of at most 100, and the failed one's 100 asked again (when it comes back,
    // the last 50 may or may not have been asked yet), never more than 4 at once.
    expect([...node.batches].sort((a, b) => a - b)).toEqual([50, 100, 100, 100, 100, 100, 100, 100]);
    expect(node.maxInFlight).toBe(4);
    expect(logger.warn).toHaveBeenCalledWith(expect.objectContaining({ subscriptions: 100 }), expect.stringContaining('retrying'));
  } finally {
    await checks.close();
  }
});
