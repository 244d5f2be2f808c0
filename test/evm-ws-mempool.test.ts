/**
 * Unconfirmed events pushed by the node's WebSocket (`eth_subscribe ["newPendingTransactions"]`) on the
 * EVM test node with automine off: EDR serves that subscription (checked: it sends each pending hash as an
 * `eth_subscription` notification). herald's wsUrl goes through a WebSocket relay of ours that the test can
 * cut, and its rpcUrl through the fault proxy, which counts the pending filter's polls. The filter's poll
 * interval is a minute: while the subscription is up, a callback within seconds came by the WebSocket;
 * while it is cut, by the filter, polled at every round then.
 */
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import type { Address } from 'viem';
import { expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { sendEth } from './support/evm-contracts.ts';
import { followedEvmNode } from './support/evm-driver.ts';
import { startEvmNode } from './support/evm-node.ts';
import { type FaultProxy, startFaultProxy } from './support/fault-proxy.ts';
import { useFollowedApp } from './support/followed-app.ts';
import { until } from './support/wait.ts';

const SECRET = 'whsec-evm-ws-mempool';
const FAST = 8000;

/** Relays WebSocket connections to the node, message for message; cut() drops them and refuses new ones. */
interface Relay {
  url: string;
  /** eth_subscribe newPendingTransactions requests relayed so far. */
  pendingSubscribes: number;
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

async function startRelay(target: string): Promise<Relay> {
  const server = new WebSocketServer({ port: 0, host: '127.0.0.1', verifyClient: () => !relay.isCut });
  await once(server, 'listening');
  const pairs = new Set<[WebSocket, WebSocket]>();
  server.on('connection', (client) => {
    const upstream = new WebSocket(target);
    const pair: [WebSocket, WebSocket] = [client, upstream];
    pairs.add(pair);
    const early: string[] = [];
    upstream.on('open', () => {
      for (const m of early.splice(0)) upstream.send(m);
    });
    client.on('message', (data) => {
      const text = data.toString();
      if (text.includes('newPendingTransactions')) relay.pendingSubscribes++;
      if (upstream.readyState === WebSocket.OPEN) upstream.send(text);
      else early.push(text);
    });
    upstream.on('message', (data) => client.readyState === WebSocket.OPEN && client.send(data.toString()));
    const end = () => {
      pairs.delete(pair);
      client.terminate();
      upstream.terminate();
    };
    client.on('close', end);
    upstream.on('close', end);
    client.on('error', end);
    upstream.on('error', end);
  });
  const relay = {
    url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}`,
    pendingSubscribes: 0,
    isCut: false,
    cut() {
      relay.isCut = true;
      for (const [client, upstream] of pairs) {
        client.terminate();
        upstream.terminate();
      }
    },
    restore() {
      relay.isCut = false;
    },
    close: () => {
      relay.cut();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return relay;
}

let proxy: FaultProxy;
let relay: Relay;

// herald reads the node through the fault proxy (rpcUrl) and its WebSocket through the relay (wsUrl).
const f = useFollowedApp(
  async () => {
    const node = await startEvmNode({ automine: false });
    [proxy, relay] = await Promise.all([startFaultProxy(node.url), startRelay(node.wsUrl)]);
    return followedEvmNode(node, {
      rpcUrl: proxy.url,
      chainConfig: { wsUrl: relay.url },
      close: async () => {
        await relay.close();
        await proxy.close();
      },
    });
  },
  { chain: { mempoolPollIntervalMs: 60_000 }, secret: SECRET },
);
const { subscribe, indexed, callbacksOf, mineAndProcess } = f;
const filterPolls = () => proxy.requests.get('eth_getFilterChanges') ?? 0;
const items = (id: string) => callbacksOf(id).map((cb) => cb.json.data.item);
const mempoolStatus = async () => {
  const res = await f.t.request('GET', '/blockchain-events/status', { key: f.c.key });
  return res.body.data.items.find((i: { blockchain: string }) => i.blockchain === 'ethereum').mempool;
};

it('a pending payment pushed by newPendingTransactions fires once within seconds, without a filter poll; mined, nothing more', async () => {
  const to = f.node.accounts[5]?.address as Address;
  const sub = (await subscribe('address-coins-transactions-unconfirmed', { address: to }, 'ws-pending')).referenceId;
  await indexed();
  await until('the subscription', async () => relay.pendingSubscribes === 1 && (await mempoolStatus())?.lastPolledAt != null);
  // The subscription is up: the filter is not polled again for a minute.
  await new Promise((r) => setTimeout(r, 300));
  const polls = filterPolls();
  const { hash } = await sendEth(f.node, to, 1_000_000_000_000_000n, { wait: false });
  await until('the pushed payment', async () => callbacksOf(sub).length === 1, FAST);
  expect(items(sub)).toEqual([expect.objectContaining({ transactionId: hash, amount: '0.001', direction: 'incoming' })]);
  expect(filterPolls()).toBe(polls);
  expect(await mempoolStatus()).toMatchObject({ method: 'websocket newPendingTransactions + pending transaction filter', state: 'following' });
  await mineAndProcess();
  await new Promise((r) => setTimeout(r, 300));
  await f.t.app.worker?.settled();
  expect(callbacksOf(sub)).toHaveLength(1);
});

it('the WebSocket cut: the filter takes over at once; back, the subscription is made again and pushes', async () => {
  const to = f.node.accounts[6]?.address as Address;
  const sub = (await subscribe('address-coins-transactions-unconfirmed', { address: to }, 'ws-cut')).referenceId;
  await indexed();
  const subscribes = relay.pendingSubscribes;
  relay.cut();
  const polls = filterPolls();
  const { hash: duringCut } = await sendEth(f.node, to, 2_000_000_000_000_000n, { wait: false });
  await until('the payment by the filter', async () => callbacksOf(sub).length === 1, FAST);
  expect(filterPolls()).toBeGreaterThan(polls);
  relay.restore();
  await until('the subscription made again', async () => relay.pendingSubscribes > subscribes, 20_000);
  // Up again: the filter rests (its polls stop growing) and a payment comes by the WebSocket.
  await new Promise((r) => setTimeout(r, 500));
  const after = filterPolls();
  const { hash: afterCut } = await sendEth(f.node, to, 3_000_000_000_000_000n, { wait: false });
  await until('the payment pushed again', async () => callbacksOf(sub).length === 2, FAST);
  expect(filterPolls()).toBe(after);
  expect(items(sub).map((i) => i.transactionId)).toEqual([duringCut, afterCut]);
  await mineAndProcess();
}, 40_000);
