/**
 * The set-up the end-to-end tests on a chain node share: the node's driver (a real litecoind or EVM node,
 * or a fake one), an HTTPS receiver with a test CA, herald following the node with delivery allowed to
 * loopback, and a customer whose domain is localhost. It returns once the follower has processed the
 * node's height, so a test starts from a chain herald has caught up with.
 *
 * Each test gives only what it changes: the chain entry's options (confirmations, mempool polling,
 * zmqUrl), the delivery's (retry schedule) and the app's (block jobs).
 */

import type { ChainConfig, Config } from '../../src/config/config.ts';
import { loadConfig } from '../../src/config/config.ts';
import { startTestApp, type TestApp, type TestCustomer } from '../harness.ts';
import type { ChainDriver } from './chain-driver.ts';
import { followHelpers } from './follow-helpers.ts';
import { type Receiver, startReceiver } from './receiver.ts';
import { createTestCa, writeCaFile } from './tls.ts';

export interface FollowedAppOptions {
  /** Merged over the chain entry (confirmations 2, polled every 50 ms, 8 requests in flight). */
  chain?: Partial<ChainConfig>;
  /** Merged over the delivery configuration (loopback allowed, the test CA trusted, polled every 20 ms). */
  delivery?: Partial<Config['delivery']>;
  /** Merged over the app's configuration. */
  app?: Partial<Config>;
}

export interface FollowedApp<D extends ChainDriver = ChainDriver> {
  node: D;
  receiver: Receiver;
  t: TestApp;
  c: TestCustomer;
  /** Mines `count` blocks, waits until herald has processed them and the worker has delivered what they queued. */
  mineAndProcess(count?: number): Promise<number>;
  close(): Promise<void>;
}

export async function startFollowedApp<D extends ChainDriver>(start: () => Promise<D>, options: FollowedAppOptions = {}): Promise<FollowedApp<D>> {
  const ca = await createTestCa();
  const [node, receiver] = await Promise.all([start(), startReceiver({ ca })]);
  try {
    return await startHerald(node, receiver, writeCaFile(ca.caPem), options);
  } catch (error) {
    // A failed start leaves no node process behind: the caller has nothing to close.
    await Promise.allSettled([receiver.close(), node.close()]);
    throw error;
  }
}

async function startHerald<D extends ChainDriver>(node: D, receiver: Receiver, caFile: string, options: FollowedAppOptions): Promise<FollowedApp<D>> {
  const t = await startTestApp({
    chains: [
      {
        blockchain: node.blockchain,
        network: node.network,
        rpcUrl: node.rpcUrl,
        confirmations: 2,
        pollIntervalMs: 50,
        concurrency: 8,
        requestTimeoutMs: 5000,
        ...node.chainConfig,
        ...options.chain,
      } as ChainConfig,
    ],
    delivery: { ...loadConfig({}, {}).delivery, allowNetworks: ['127.0.0.1/32', '::1/128'], caFile, pollIntervalMs: 20, ...options.delivery },
    ...options.app,
  });
  let c: TestCustomer;
  // The secret only matters for subscriptions, which the tests make with their own helpers.
  const { processed } = followHelpers(() => ({ t, customer: c, receiver, blockchain: node.blockchain, network: node.network }), '');
  try {
    c = await t.customer({ domains: ['localhost'] });
    await processed(await node.height());
  } catch (error) {
    await t.close();
    throw error;
  }
  return {
    node,
    receiver,
    t,
    c,
    async mineAndProcess(count = 1) {
      const height = await node.mine(count);
      await processed(height);
      await t.app.worker?.settled();
      return height;
    },
    async close() {
      await t.close();
      await receiver.close();
      await node.close();
    },
  };
}
