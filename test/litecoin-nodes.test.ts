/**
 * Two real nodes of one chain (docs/reference/chains.md "Several nodes per chain"): two litecoind regtest nodes peered over
 * loopback (test/support/litecoin-node.ts startLitecoinPair: a connects to b) as the rpcUrls of herald's
 * litecoin/testnet, which delivers to a real HTTPS receiver. Each scenario acts on the nodes themselves:
 *
 * - one node stopped, then the other: herald goes on from the one left, no block skipped or doubled;
 * - a cut off and left behind (b mines more than maxLagBlocks): a is ineligible, with its reason, in the
 *   status and in chain_nodes; connected again it catches up and is eligible again;
 * - a shallow fork (1 block on a, 3 on b while cut off): herald follows a's block, then b's heavier branch
 *   (a reorganisation within reorgQuorumDepth needs no second node): the dropped block reverted, its
 *   undelivered callback cancelled;
 * - a deep fork (3 blocks on a, 4 on b): b alone claims a reorganisation deeper than reorgQuorumDepth, so
 *   herald stays on a's branch and b is made ineligible; once the nodes are connected again a switches to
 *   b's branch, the quorum agrees, and herald follows: the three dropped blocks reverted, the undelivered
 *   callbacks of their events (confirmed ones included) cancelled, and the transaction mined again fires
 *   with its new block.
 *
 * Throughout, one BLOCK_MINED per block of the final chain and one BLOCK_REVERTED per block dropped.
 * Without litecoind a local run skips loudly; under CI it fails.
 */
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { redactUrl } from '../src/domain/node-urls.ts';
import { startTestApp, type TestApp, type TestCustomer } from './harness.ts';
import { type Callback, followHelpers } from './support/follow-helpers.ts';
import { receiverDelivery } from './support/followed-app.ts';
import { type ChainTip, type LitecoinNode, type LitecoinPair, litecoind, startLitecoinPair } from './support/litecoin-node.ts';
import { describeWithRealNode } from './support/real-node.ts';
import { type Receiver, startReceiver } from './support/receiver.ts';
import { createTestCa, writeCaFile } from './support/tls.ts';
import { until } from './support/wait.ts';

const SECRET = 'whsec-litecoin-nodes';
const TIMEOUT = 30_000;
const MAX_LAG_BLOCKS = 3;
const REORG_QUORUM_DEPTH = 2;

interface NodeItem {
  url: string;
  eligible: boolean;
  reason: string | null;
  headHeight: number | null;
  lagBlocks: number | null;
}

interface NodeRow {
  node: string;
  eligible: boolean;
  reason: string | null;
  head_height: string | null;
  head_hash: string | null;
  lag_blocks: number | null;
  changed_at: Date;
}

describeWithRealNode('litecoin/testnet followed on two real litecoind nodes (regtest) of one chain', litecoind, () => {
  let pair: LitecoinPair;
  let receiver: Receiver;
  let t: TestApp;
  let c: TestCustomer;
  let blocks: string;
  let reverted: string;

  const { processed, subscribe, subscribeMined, callbacksOf } = followHelpers(
    () => ({ t, customer: c, receiver, blockchain: 'litecoin', network: 'testnet' }),
    SECRET,
  );

  beforeAll(async () => {
    const ca = await createTestCa();
    [pair, receiver] = await Promise.all([startLitecoinPair(), startReceiver({ ca })]);
    const auth = pair.a.rpcAuth as { user: string; password: string };
    t = await startTestApp({
      chains: [
        {
          blockchain: 'litecoin',
          network: 'testnet',
          rpcUrls: [pair.a.url, pair.b.url],
          chainId: 'regtest',
          rpcUser: auth.user,
          rpcPassword: auth.password,
          maxLagBlocks: MAX_LAG_BLOCKS,
          reorgQuorumDepth: REORG_QUORUM_DEPTH,
          confirmations: 2,
          pollIntervalMs: 50,
          concurrency: 8,
          // A stopped node refuses connections at once; a short timeout bounds anything slower.
          requestTimeoutMs: 2000,
        },
      ],
      delivery: receiverDelivery(writeCaFile(ca.caPem)),
    });
    c = await t.customer({ domains: ['localhost'] });
    await processed((await pair.synced()).height);
    blocks = (await subscribe('block-mined', {}, 'blocks')).referenceId;
    reverted = (await subscribe('reverted-block', { allowDuplicates: 'false' }, 'reverted')).referenceId;
    await t.app.ingest?.settled();
  }, 60_000);

  // A scenario that failed half-way leaves the next one both nodes running, connected and on one tip.
  afterEach(async () => {
    if (!pair) return;
    for (const node of [pair.a, pair.b]) if (!node.running) await node.start();
    await pair.reconnect();
    await pair.synced();
  }, 30_000);

  afterAll(async () => {
    await t?.close();
    await receiver?.close();
    await pair?.close();
  });

  /** The chain's item of GET /blockchain-events/status. */
  async function status() {
    const res = await t.request('GET', '/blockchain-events/status', { key: c.key });
    expect(res.status, res.text).toBe(200);
    return res.body.data.items.find((i: { blockchain: string; network: string }) => i.blockchain === 'litecoin' && i.network === 'testnet');
  }

  /** What the status says of `node` (its URL redacted, as every process shows it). */
  async function nodeItem(node: LitecoinNode): Promise<NodeItem | undefined> {
    return ((await status())?.nodes as NodeItem[] | undefined)?.find((n) => n.url === redactUrl(node.url));
  }

  async function nodeRow(node: LitecoinNode): Promise<NodeRow | undefined> {
    const [row] = await t.app.database.db.query<NodeRow>(
      'test:chain-node',
      "SELECT node, eligible, reason, head_height, head_hash, lag_blocks, changed_at FROM chain_nodes WHERE blockchain = 'litecoin' AND network = 'testnet' AND node = $1",
      [redactUrl(node.url)],
    );
    return row;
  }

  /** Waits until the status shows `node` eligible (or not), and `also` of its item; gives the item. */
  async function eligibility(node: LitecoinNode, eligible: boolean, also: (item: NodeItem) => boolean = () => true): Promise<NodeItem> {
    let last: unknown;
    try {
      return await until(
        `${node === pair.a ? 'a' : 'b'} to be ${eligible ? 'eligible' : 'ineligible'}`,
        async () => {
          const item = await nodeItem(node);
          last = (await status())?.nodes;
          return item?.eligible === eligible && also(item) && item;
        },
        15_000,
      );
    } catch (error) {
      throw new Error(`${(error as Error).message}; nodes: ${JSON.stringify(last)}`);
    }
  }

  /** Waits until herald has processed exactly `tip` (height and hash). */
  async function at(tip: ChainTip): Promise<void> {
    await processed(tip.height);
    await until(`herald at ${tip.height} ${tip.hash}`, async () => {
      const item = await status();
      return item?.processedHeight === tip.height && item?.processedHash === tip.hash;
    });
  }

  const itemOf = (cb: Callback) => cb.json.data.item as { height: number; hash: string };
  /** The hash of the block a transaction callback says it was mined in. */
  const minedIn = (cb: Callback | undefined) => (cb?.json.data.item.minedInBlock as { hash: string } | undefined)?.hash;

  async function callbackRow(idempotencyKey: string) {
    const [row] = await t.app.database.db.query<{ status: string; outcome: string | null }>(
      'test:callback-row',
      'SELECT status, outcome FROM callbacks WHERE idempotency_key = $1',
      [idempotencyKey],
    );
    return row;
  }

  it(
    'both nodes are listed, eligible, at the same head, in the status and in chain_nodes',
    async () => {
      const tip = await pair.synced();
      for (const node of [pair.a, pair.b]) {
        const item = await until('both heads seen', async () => {
          const x = await nodeItem(node);
          return x?.eligible && x.headHeight === tip.height && x;
        });
        expect(item).toMatchObject({ url: redactUrl(node.url), eligible: true, reason: null, headHeight: tip.height, lagBlocks: 0 });
        expect(await nodeRow(node)).toMatchObject({ eligible: true, reason: null, head_height: String(tip.height), head_hash: tip.hash, lag_blocks: 0 });
      }
      // The URLs are shown without the credentials herald holds for them.
      expect(JSON.stringify((await status()).nodes)).not.toContain((pair.a.rpcAuth as { password: string }).password);
    },
    TIMEOUT,
  );

  it(
    'a node stopped: herald goes on from the other (a stopped, then b), no block skipped or doubled',
    async () => {
      const start = await pair.synced();
      await pair.a.stop();
      await pair.b.mine(1);
      await at(await pair.tip(pair.b));
      await pair.b.mine(1);
      await at(await pair.tip(pair.b));
      const down = await eligibility(pair.a, false);
      expect(down.reason).toMatch(/^not answering: /);
      expect((await nodeRow(pair.a))?.eligible).toBe(false);

      await pair.a.start();
      await pair.synced();
      await eligibility(pair.a, true);
      await pair.b.stop();
      await pair.a.mine(1);
      await at(await pair.tip(pair.a));
      await pair.a.mine(1);
      const end = await pair.tip(pair.a);
      await at(end);
      expect((await eligibility(pair.b, false)).reason).toMatch(/^not answering: /);

      await pair.b.start();
      await pair.reconnect();
      await pair.synced();
      await eligibility(pair.b, true);
      await t.app.worker?.settled();
      const mined = await until('a BLOCK_MINED per block', async () => {
        const list = callbacksOf(blocks).filter((cb) => itemOf(cb).height > start.height);
        return list.length >= 4 && list;
      });
      expect(mined.map((cb) => itemOf(cb).height).sort((x, y) => x - y)).toEqual([1, 2, 3, 4].map((i) => start.height + i));
      for (const cb of mined) expect(itemOf(cb).hash).toBe(await pair.a.rpc<string>('getblockhash', itemOf(cb).height));
    },
    TIMEOUT,
  );

  it(
    `a node left more than maxLagBlocks (${MAX_LAG_BLOCKS}) behind is ineligible, with its reason; caught up, it is eligible again`,
    async () => {
      const before = await pair.synced();
      const changedBefore = (await nodeRow(pair.a))?.changed_at;
      await pair.disconnect();
      await pair.b.mine(MAX_LAG_BLOCKS + 2);
      const ahead = await pair.tip(pair.b);
      await at(ahead); // read from b alone
      // b's head may be seen part-way through the five blocks: wait for the last.
      const behind = await eligibility(pair.a, false, (item) => item.lagBlocks === MAX_LAG_BLOCKS + 2);
      expect(behind).toMatchObject({ headHeight: before.height, lagBlocks: MAX_LAG_BLOCKS + 2 });
      expect(behind.reason).toBe(`lagging: ${MAX_LAG_BLOCKS + 2} blocks behind the best eligible head (at most ${MAX_LAG_BLOCKS})`);
      const row = await nodeRow(pair.a);
      expect(row).toMatchObject({
        eligible: false,
        reason: behind.reason,
        head_height: String(before.height),
        head_hash: before.hash,
        lag_blocks: MAX_LAG_BLOCKS + 2,
      });
      expect(row?.changed_at.getTime()).toBeGreaterThan(changedBefore?.getTime() ?? 0);
      expect((await nodeItem(pair.b))?.eligible).toBe(true);

      await pair.reconnect();
      expect(await pair.synced()).toEqual(ahead);
      expect(await eligibility(pair.a, true, (item) => item.headHeight === ahead.height)).toMatchObject({ reason: null, lagBlocks: 0 });
      expect(await nodeRow(pair.a)).toMatchObject({ eligible: true, reason: null, head_hash: ahead.hash, lag_blocks: 0 });
      expect(callbacksOf(reverted)).toHaveLength(0); // the node behind never rewound herald
    },
    TIMEOUT,
  );

  it(
    `a shallow fork (1 block on a, 3 on b while cut off): herald follows a's block, then b's heavier branch without a quorum (depth 1 <= ${REORG_QUORUM_DEPTH}); the dropped block is reverted, its undelivered callback cancelled`,
    async () => {
      const before = await pair.synced();
      await processed(before.height);
      const to = await pair.a.rpc<string>('getnewaddress', '', 'legacy');
      const txid = await pair.b.rpc<string>('sendtoaddress', to, 1);
      await until('the transaction in both mempools', async () => (await pair.a.rpc<string[]>('getrawmempool')).includes(txid));
      const mined = await subscribeMined(txid, 'shallow-mined');
      await t.app.ingest?.settled();
      receiver.byPath('/hooks/shallow-mined', { kind: 'status', status: 500 }); // retried in 30 s: still pending at the reorganisation

      await pair.disconnect();
      await pair.a.mine(1); // the transaction, on a's branch only
      const orphan = await pair.tip(pair.a);
      await at(orphan);
      const [failed] = (await until('the failed first attempt', async () => callbacksOf(mined).length === 1 && callbacksOf(mined))) as [Callback];
      expect(minedIn(failed)).toBe(orphan.hash);

      await pair.mineEmpty(pair.b, 3);
      const heavier = await pair.tip(pair.b);
      await at(heavier);
      await pair.reconnect();
      expect(await pair.synced()).toEqual(heavier);
      await t.app.worker?.settled();
      const [revert] = await until('the BLOCK_REVERTED of the dropped block', async () => {
        const list = callbacksOf(reverted).filter((cb) => itemOf(cb).hash === orphan.hash);
        return list.length > 0 && list;
      });
      expect(itemOf(revert as Callback).height).toBe(orphan.height);
      expect(await callbackRow(failed.json.idempotencyKey)).toEqual({ status: 'cancelled', outcome: 'reorganised' });

      // Mined again on the heavier branch: a new callback with the new block.
      receiver.byPath('/hooks/shallow-mined', { kind: 'status', status: 200 });
      await pair.b.mine(1);
      const again = await pair.synced();
      await at(again);
      const all = await until('the callback of the new branch', async () => callbacksOf(mined).length === 2 && callbacksOf(mined));
      expect(minedIn(all[1])).toBe(again.hash);
      expect(all[1]?.json.idempotencyKey).not.toBe(failed.json.idempotencyKey);
    },
    TIMEOUT,
  );

  it(
    `a deep fork (3 blocks on a, 4 on b): b alone does not rewind herald (depth 3 > ${REORG_QUORUM_DEPTH}) and is ineligible; once a agrees, herald follows the heavier branch, reverts the dropped blocks and cancels their undelivered callbacks, confirmed events included`,
    async () => {
      const before = await pair.synced();
      await at(before);
      const to = await pair.a.rpc<string>('getnewaddress', '', 'legacy');
      const txid = await pair.b.rpc<string>('sendtoaddress', to, 1);
      await until('the transaction in both mempools', async () => (await pair.a.rpc<string[]>('getrawmempool')).includes(txid));
      const mined = await subscribeMined(txid, 'deep-mined');
      const coins = (await subscribe('address-coins-transactions-confirmed', { address: to, receiveCallbackOn: 2 }, 'deep-coins')).referenceId;
      await t.app.ingest?.settled();
      for (const hook of ['deep-mined', 'deep-coins']) receiver.byPath(`/hooks/${hook}`, { kind: 'status', status: 500 });

      await pair.disconnect();
      await pair.a.mine(3); // the transaction in the first, confirmed twice by the second
      const lighter = await pair.tip(pair.a);
      const dropped = await Promise.all([1, 2, 3].map((i) => pair.a.rpc<string>('getblockhash', before.height + i)));
      await at(lighter); // b is 3 behind: still eligible, and agrees below the fork
      const [minedAttempt] = (await until('the failed mined attempt', async () => callbacksOf(mined).length === 1 && callbacksOf(mined))) as [Callback];
      const [coinsAttempt] = (await until('the failed confirmed attempt', async () => callbacksOf(coins).length === 1 && callbacksOf(coins))) as [Callback];
      expect(minedIn(minedAttempt)).toBe(dropped[0]);
      expect(minedIn(coinsAttempt)).toBe(dropped[0]);

      await pair.mineEmpty(pair.b, 4);
      const heavier = await pair.tip(pair.b);
      // b alone claims a reorganisation of depth 3: not acted on, b is ineligible.
      const claim = await eligibility(pair.b, false);
      expect(claim.reason).toMatch(
        new RegExp(`^on a fork of its own: its block ${before.height + 1} \\(${await pair.b.rpc<string>('getblockhash', before.height + 1)}\\) replaces ours`),
      );
      expect((await nodeRow(pair.b))?.eligible).toBe(false);
      await new Promise((resolve) => setTimeout(resolve, 500)); // a few polls
      expect(await status()).toMatchObject({ processedHeight: lighter.height, processedHash: lighter.hash });
      expect(callbacksOf(reverted).filter((cb) => dropped.includes(itemOf(cb).hash))).toHaveLength(0);

      // Connected again, a switches to b's heavier branch: the quorum agrees and herald follows.
      await pair.reconnect();
      expect(await pair.synced()).toEqual(heavier);
      await at(heavier);
      await eligibility(pair.b, true);
      await t.app.worker?.settled();
      const reverts = await until('a BLOCK_REVERTED per dropped block', async () => {
        const list = callbacksOf(reverted).filter((cb) => dropped.includes(itemOf(cb).hash));
        return list.length === 3 && list;
      });
      expect(reverts.map((cb) => itemOf(cb).height).sort((x, y) => x - y)).toEqual([1, 2, 3].map((i) => before.height + i));
      expect(await callbackRow(minedAttempt.json.idempotencyKey)).toEqual({ status: 'cancelled', outcome: 'reorganised' });
      expect(await callbackRow(coinsAttempt.json.idempotencyKey)).toEqual({ status: 'cancelled', outcome: 'reorganised' });

      // The transaction, pending again on both, is mined on the heavier branch: new callbacks, with its new block.
      for (const hook of ['deep-mined', 'deep-coins']) receiver.byPath(`/hooks/${hook}`, { kind: 'status', status: 200 });
      await pair.b.mine(2);
      const tip = await pair.synced();
      await at(tip);
      await t.app.worker?.settled();
      const newBlock = await pair.b.rpc<string>('getblockhash', heavier.height + 1);
      const minedAgain = await until('the mined callback of the new branch', async () => callbacksOf(mined).length === 2 && callbacksOf(mined));
      const coinsAgain = await until('the confirmed callback of the new branch', async () => callbacksOf(coins).length === 2 && callbacksOf(coins));
      for (const list of [minedAgain, coinsAgain]) {
        expect(minedIn(list[1])).toBe(newBlock);
        expect(list[1]?.json.idempotencyKey).not.toBe(list[0]?.json.idempotencyKey);
      }
    },
    TIMEOUT,
  );

  it(
    'across it all: one BLOCK_MINED per block of the final chain, and one BLOCK_REVERTED per block reported and then dropped',
    async () => {
      const tip = await pair.synced();
      await at(tip);
      await t.app.worker?.settled();
      await until('every block callback out', async () => {
        await t.app.worker?.settled();
        const [row] = await t.app.database.db.query<{ n: string }>(
          'test:pending',
          "SELECT count(*) AS n FROM callbacks WHERE status = 'pending' AND attempts = 0",
        );
        return row?.n === '0';
      });
      const mined = callbacksOf(blocks).map(itemOf);
      const dropped = callbacksOf(reverted).map(itemOf);
      const first = Math.min(...mined.map((b) => b.height));
      const canonical = await Promise.all(Array.from({ length: tip.height - first + 1 }, (_, i) => pair.b.rpc<string>('getblockhash', first + i)));
      const onChain = mined.filter((b) => canonical[b.height - first] === b.hash);
      expect(onChain.map((b) => b.height).sort((x, y) => x - y)).toEqual(canonical.map((_, i) => first + i));
      const offChain = mined.filter((b) => canonical[b.height - first] !== b.hash);
      expect(offChain.length).toBe(4); // 1 of the shallow fork, 3 of the deep one
      expect(dropped.map((b) => b.hash).sort()).toEqual(offChain.map((b) => b.hash).sort());
      expect(new Set(callbacksOf(blocks).map((cb) => cb.json.idempotencyKey)).size).toBe(mined.length);
    },
    TIMEOUT,
  );
});
