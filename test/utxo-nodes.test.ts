/**
 * Several nodes of one Bitcoin-family chain (docs/reference/chains.md "Several nodes per chain"), on two fake Bitcoin Core
 * nodes (test/support/fake-utxo-node.ts) as rpcUrls of bitcoin/testnet. The fake chains are deterministic
 * (same clock, same operations: same blocks), so mining the same on both is two nodes in step, and mining
 * on one only is the other falling behind. Herald follows through each trouble one node can be in:
 *
 * - down: the other node serves; back: eligible again;
 * - lagging (more than maxLagBlocks behind): ineligible until it catches up;
 * - syncing (initialblockdownload, headers ahead of blocks): ineligible until in step;
 * - on a fork of its own, deeper than reorgQuorumDepth: herald does not rewind and sets the node aside;
 *   when the other node moves to the same branch, the quorum agrees and herald follows it.
 *
 * BLOCK_MINED and BLOCK_REVERTED callbacks show what herald applied: every block once, in order, and only
 * the confirmed reorganisation reverted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, type TestCustomer } from './harness.ts';
import { type FakeUtxoNode, startFakeUtxoNode } from './support/fake-utxo-node.ts';
import { followHelpers, inSequenceOrder } from './support/follow-helpers.ts';
import { receiverDelivery } from './support/followed-app.ts';
import { type Receiver, startReceiver } from './support/receiver.ts';
import { createTestCa, writeCaFile } from './support/tls.ts';
import { until } from './support/wait.ts';

const SECRET = 'whsec-utxo-nodes';
const START = Math.floor(Date.now() / 1000);

let a: FakeUtxoNode;
let b: FakeUtxoNode;
let receiver: Receiver;
let t: TestApp;
let c: TestCustomer;
let minedSub: string;
let revertedSub: string;

const follow = followHelpers(() => ({ t, customer: c, receiver, blockchain: 'bitcoin', network: 'testnet' }), SECRET);

interface NodeItem {
  url: string;
  eligible: boolean;
  reason: string | null;
  headHeight: number | null;
  lagBlocks: number | null;
}

async function status() {
  const res = await t.request('GET', '/blockchain-events/status', { key: c.key });
  expect(res.status, res.text).toBe(200);
  return res.body.data.items.find((i: { blockchain: string }) => i.blockchain === 'bitcoin');
}

const nodeB = async (): Promise<NodeItem> => (await status()).nodes.find((n: NodeItem) => n.url === b.url);

async function until_b(what: string, wanted: (n: NodeItem) => boolean): Promise<NodeItem> {
  return await until(what, async () => {
    const n = await nodeB();
    return n && wanted(n) && n;
  });
}

/** Both nodes mine the same `count` blocks (deterministic fakes: the same blocks); herald processes them. */
async function mineBoth(count: number): Promise<number> {
  a.mine(count);
  b.mine(count);
  expect(b.blockHash(b.height())).toBe(a.blockHash(a.height()));
  await follow.processed(a.height());
  return a.height();
}

beforeAll(async () => {
  const ca = await createTestCa();
  const options = { clock: () => START, user: 'herald', password: 'pw' };
  [a, b, receiver] = await Promise.all([startFakeUtxoNode('bitcoin', options), startFakeUtxoNode('bitcoin', options), startReceiver({ ca })]);
  t = await startTestApp({
    chains: [
      {
        blockchain: 'bitcoin',
        network: 'testnet',
        // b first: it is the node read from while it is eligible, so its troubles are the ones herald meets.
        rpcUrls: [b.urlWithCredentials, a.urlWithCredentials],
        chainId: a.params.chainName, // the fakes' own chain (docs/reference/chains.md "Chain identity")
        pollIntervalMs: 50,
        concurrency: 4,
        requestTimeoutMs: 2000,
        maxLagBlocks: 3,
        reorgQuorumDepth: 2,
      },
    ],
    delivery: receiverDelivery(writeCaFile(ca.caPem)),
  });
  c = await t.customer({ domains: ['localhost'] });
  minedSub = (await follow.subscribe('block-mined', {}, 'mined')).referenceId;
  revertedSub = (await follow.subscribe('reverted-block', { allowDuplicates: 'false' }, 'reverted')).referenceId;
  await t.app.ingest?.settled();
  await mineBoth(1);
}, 60_000);

afterAll(async () => {
  await t?.close();
  await receiver?.close();
  await Promise.all([a?.close(), b?.close()]);
});

describe('two fake Bitcoin Core nodes of bitcoin/testnet', () => {
  it('the nodes are the same chain, both eligible', async () => {
    expect(a.blockHash(50)).toBe(b.blockHash(50));
    const height = await mineBoth(1);
    const nodes = await until('both nodes at the head', async () => {
      const s = await status();
      return s.nodes.length === 2 && s.nodes.every((n: NodeItem) => n.eligible && n.headHeight === height) && s.nodes;
    });
    expect(nodes.map((n: NodeItem) => n.url).sort()).toEqual([a.url, b.url].sort());
  });

  it('one node down: herald goes on from the other; back up, it is eligible again', async () => {
    await b.down();
    a.mine(2);
    b.mine(2); // mined while "down": its chain goes on, its RPC does not answer
    await follow.processed(a.height());
    expect((await until_b('b ineligible', (n) => !n.eligible)).reason).toMatch(/^not answering: .*getblockchaininfo failed/);
    await b.up();
    await until_b('b eligible again', (n) => n.eligible);
    await mineBoth(1);
  });

  it('one node lagging more than maxLagBlocks: ineligible until it catches up', async () => {
    a.mine(5);
    await follow.processed(a.height());
    const lagging = await until_b('b lagging', (n) => !n.eligible);
    expect(lagging).toMatchObject({ reason: 'lagging: 5 blocks behind the best eligible head (at most 3)', lagBlocks: 5 });
    b.mine(5);
    expect(b.blockHash(b.height())).toBe(a.blockHash(a.height()));
    await until_b('b caught up', (n) => n.eligible && n.lagBlocks === 0);
    await mineBoth(1);
  });

  it('one node syncing (initial block download, headers ahead): ineligible while it says so', async () => {
    b.setSyncing({ initialBlockDownload: true, headersAhead: 500 });
    const syncing = await until_b('b syncing', (n) => !n.eligible);
    expect(syncing.reason).toMatch(/^syncing: initial block download \(block \d+ of \d+ headers\)$/);
    await mineBoth(2);
    b.setSyncing({ headersAhead: 10 });
    expect((await until_b('b downloading blocks', (n) => /behind its own headers/.test(n.reason ?? ''))).eligible).toBe(false);
    b.setSyncing(undefined);
    await until_b('b in step', (n) => n.eligible);
    await mineBoth(1);
  });

  it('a fork of one node deeper than reorgQuorumDepth is not followed and the node is set aside; once the other node agrees, herald follows the new branch', async () => {
    const before = await status();
    const height = a.height();
    expect(before.processedHash).toBe(a.blockHash(height));
    // b alone replaces its last 3 blocks (4 new ones): a reorganisation of depth 3 > 2 that a does not confirm.
    b.reorg(3);
    const aside = await until_b('b set aside on its fork', (n) => !n.eligible && /fork of its own/.test(n.reason ?? ''));
    expect(aside.reason).toContain(`its block ${height - 2} (${b.blockHash(height - 2)})`);
    // Herald stayed on a's chain: nothing reverted, the cursor where it was.
    const still = await status();
    expect(still).toMatchObject({ processedHeight: height, processedHash: a.blockHash(height) });
    expect(follow.callbacksOf(revertedSub)).toHaveLength(0);

    // a makes the same reorganisation (the fakes are deterministic): two nodes agree, herald rewinds and follows.
    a.reorg(3);
    expect(a.blockHash(height + 1)).toBe(b.blockHash(height + 1));
    await until('herald on the new branch', async () => {
      const s = await status();
      return s.processedHeight === height + 1 && s.processedHash === a.blockHash(height + 1) && s;
    });
    await until_b('b eligible again', (n) => n.eligible);
    await t.app.worker?.settled();
    const reverted = await until('three BLOCK_REVERTED', async () => follow.callbacksOf(revertedSub).length === 3 && follow.callbacksOf(revertedSub));
    expect(reverted.map((r) => r.json.data.item.height).sort()).toEqual([height - 2, height - 1, height]);
    await mineBoth(1);
  });

  it('throughout: one BLOCK_MINED per block of the final chain, in order, none skipped; the replaced blocks once each before', async () => {
    const last = a.height();
    await t.app.worker?.settled();
    const mined = await until('every BLOCK_MINED delivered', async () => {
      const got = follow.callbacksOf(minedSub);
      return got.some((cb) => cb.json.data.item.height === last) && got;
    });
    // In the order herald produced them, not the arrival's (CI once saw 111 arrive before 110).
    const items = inSequenceOrder(mined).map((cb) => cb.json.data.item as { height: number; hash: string });
    // Each hash once (no block applied twice) ...
    expect(new Set(items.map((i) => i.hash)).size).toBe(items.length);
    // ... and every height of the final chain from the first callback on, with the final chain's block.
    const finalOnes = items.filter((i) => a.blockHash(i.height) === i.hash);
    const from = finalOnes[0]?.height as number;
    expect(finalOnes.map((i) => i.height)).toEqual(Array.from({ length: last - from + 1 }, (_, k) => from + k));
    // The three blocks replaced by the confirmed reorganisation, and nothing of b's unconfirmed fork before it.
    expect(items.length - finalOnes.length).toBe(3);
  });
});
