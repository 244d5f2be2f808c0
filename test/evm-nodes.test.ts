/**
 * Several nodes of one EVM chain (docs/reference/chains.md "Several nodes per chain"): herald follows ethereum/goerli with
 * rpcUrls [fault proxy, EVM test node], the proxy (test/support/fault-proxy.ts) standing in for a second
 * node in front of the same chain. Each fault a node shows in production (lagging, failing with 500 or a
 * reset connection, rate limiting with 429 + Retry-After, claiming to sync) makes the proxy's node
 * ineligible (status and metrics say why) while following goes on from the other node, and eligible again
 * once it heals. A BLOCK_MINED subscription proves that no block was skipped or applied twice throughout.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, type TestCustomer } from './harness.ts';
import { publicClient } from './support/evm-contracts.ts';
import { type EvmNode, startEvmNode } from './support/evm-node.ts';
import { type FaultProxy, startFaultProxy } from './support/fault-proxy.ts';
import { followHelpers, inSequenceOrder } from './support/follow-helpers.ts';
import { receiverDelivery } from './support/followed-app.ts';
import { type Receiver, startReceiver } from './support/receiver.ts';
import { createTestCa, writeCaFile } from './support/tls.ts';
import { until } from './support/wait.ts';

const SECRET = 'whsec-evm-nodes';

let node: EvmNode;
let proxy: FaultProxy;
let receiver: Receiver;
let t: TestApp;
let c: TestCustomer;
let minedSub: string;
let firstHeight: number;

const follow = followHelpers(() => ({ t, customer: c, receiver, blockchain: 'ethereum', network: 'goerli' }), SECRET);

interface NodeItem {
  url: string;
  eligible: boolean;
  reason: string | null;
  headHeight: number | null;
  lagBlocks: number | null;
  errorRate: number | null;
  latencyMs: number | null;
  checkedAt: string;
}

async function nodes(): Promise<NodeItem[]> {
  const res = await t.request('GET', '/blockchain-events/status', { key: c.key });
  expect(res.status, res.text).toBe(200);
  return res.body.data.items.find((i: { blockchain: string }) => i.blockchain === 'ethereum').nodes;
}

const proxyNode = async () => (await nodes()).find((n) => n.url === proxy.url) as NodeItem;

/** Mines a block now and then (the chain goes on meanwhile) until the proxy's node is as `wanted` says. */
async function mineUntil(what: string, wanted: (n: NodeItem) => boolean, timeoutMs = 10_000): Promise<NodeItem> {
  let mined = Date.now();
  return await until(
    what,
    async () => {
      if (Date.now() - mined > 150) {
        await node.mine(1);
        mined = Date.now();
      }
      const n = await proxyNode();
      return n && wanted(n) && n;
    },
    timeoutMs,
  );
}

/** Mines `count` blocks one by one and waits until herald processed the last. */
async function mineAndProcess(count: number): Promise<number> {
  let height = 0;
  for (let i = 0; i < count; i++) height = await node.mine(1);
  await follow.processed(height);
  return height;
}

beforeAll(async () => {
  const ca = await createTestCa();
  [node, receiver] = await Promise.all([startEvmNode({ automine: false }), startReceiver({ ca })]);
  proxy = await startFaultProxy(node.url);
  await node.mine(3);
  t = await startTestApp({
    chains: [
      {
        blockchain: 'ethereum',
        network: 'goerli',
        // The proxy first: it is the node read from until it fails.
        rpcUrls: [proxy.url, node.url],
        pollIntervalMs: 50,
        concurrency: 4,
        requestTimeoutMs: 2000,
      },
    ],
    delivery: receiverDelivery(writeCaFile(ca.caPem)),
  });
  c = await t.customer({ domains: ['localhost'] });
  firstHeight = await node.mine(1);
  await follow.processed(firstHeight);
  minedSub = (await follow.subscribe('block-mined', {})).referenceId;
  await t.app.ingest?.settled();
}, 60_000);

afterAll(async () => {
  await t?.close();
  await proxy?.close();
  await receiver?.close();
  await node?.close();
});

describe('two nodes of ethereum/goerli: a fault-injecting proxy and the EVM test node', () => {
  it('both nodes are shown eligible, with head, lag, error rate and latency; blocks are read through the first', async () => {
    const start = await mineAndProcess(2);
    const all = await until('both nodes checked at the head', async () => {
      const n = await nodes();
      return n.length === 2 && n.every((x) => x.eligible && x.headHeight === start) && n;
    });
    expect(all.map((n) => n.url).sort()).toEqual([proxy.url, node.url.endsWith('/') ? node.url : `${node.url}/`].sort());
    for (const n of all) {
      expect(n).toMatchObject({ eligible: true, reason: null, lagBlocks: 0 });
      // Failed / all over the last minute: none expected, but a request timing out on a loaded machine is not a fault of the pool.
      expect(n.errorRate).toBeGreaterThanOrEqual(0);
      expect(n.errorRate).toBeLessThan(0.5);
      expect(n.latencyMs).toBeGreaterThanOrEqual(0);
      expect(Date.parse(n.checkedAt)).toBeGreaterThan(Date.now() - 10_000);
    }
    expect(proxy.requests.get('eth_getBlockByNumber') ?? 0).toBeGreaterThan(0);
    expect(proxy.requests.get('eth_syncing') ?? 0).toBeGreaterThan(0);
  });

  const faults: { name: string; apply: () => void; reason: RegExp }[] = [
    { name: 'lagging 5 blocks behind', apply: () => proxy.lag(5), reason: /^lagging: 5 blocks behind the best eligible head \(at most 3\)$/ },
    { name: 'failing with HTTP 500', apply: () => proxy.fail('500'), reason: /^not answering: .*HTTP 500/ },
    { name: 'resetting the connection', apply: () => proxy.fail('reset'), reason: /^not answering: .*network/ },
    { name: 'rate limiting (429, Retry-After: 1)', apply: () => proxy.rateLimit(1), reason: /^rate limited \(HTTP 429\): left alone for 1 s$/ },
    { name: 'claiming to sync', apply: () => proxy.syncing(), reason: /^syncing: eth_syncing says the node is syncing: block \d+ of \d+$/ },
  ];

  for (const fault of faults) {
    it(`${fault.name}: the proxy's node is ineligible while following goes on from the other, eligible again once healed`, async () => {
      fault.apply();
      try {
        const down = await mineUntil(`the proxy's node ineligible (${fault.name})`, (n) => !n.eligible);
        expect(down.reason).toMatch(fault.reason);
        if (fault.name.startsWith('lagging')) expect(down.lagBlocks).toBe(5);
        // Following goes on meanwhile, from the other node.
        await mineAndProcess(3);
        // Polled: a 429's Retry-After (1 s) can run out while blocks are processed, and the node is then
        // eligible until its next answer, another 429, sets it aside again (written to chain_nodes at once).
        const ineligibleGauge = `herald_chain_node_eligible{blockchain="ethereum",network="goerli",node="${proxy.url}"} 0`;
        await until('the gauge to say the proxy node is ineligible', async () => (await t.request('GET', '/metrics')).text.includes(ineligibleGauge), 10_000);
      } finally {
        proxy.heal(); // also when an assertion failed: the next fault starts from a healthy node
      }
      const up = await mineUntil(`the proxy's node eligible again (${fault.name})`, (n) => n.eligible);
      expect(up).toMatchObject({ reason: null, lagBlocks: 0 });
      await mineAndProcess(2);
      expect((await t.request('GET', '/metrics')).text).toContain(`herald_chain_node_eligible{blockchain="ethereum",network="goerli",node="${proxy.url}"} 1`);
    });
  }

  it('throughout: one BLOCK_MINED per block, in order, none skipped or doubled, each the node’s block', async () => {
    const last = await mineAndProcess(1);
    await t.app.worker?.settled();
    const received = await until('every BLOCK_MINED delivered', async () => {
      const got = follow.callbacksOf(minedSub);
      return got.some((cb) => cb.json.data.item.height === last) && got;
    });
    const callbacks = inSequenceOrder(received);
    const heights = callbacks.map((cb) => cb.json.data.item.height as number);
    const from = heights[0] as number;
    expect(from).toBeLessThanOrEqual(firstHeight + 1);
    expect(heights).toEqual(Array.from({ length: last - from + 1 }, (_, i) => from + i));
    const client = publicClient(node);
    for (const cb of callbacks) {
      const item = cb.json.data.item as { height: number; hash: string };
      expect(item.hash).toBe((await client.getBlock({ blockNumber: BigInt(item.height) })).hash);
    }
    expect(last - from).toBeGreaterThan(20);
  });
});
