/**
 * The set-up the end-to-end tests on a real litecoind share: a regtest node (with its driver), an HTTPS
 * receiver with a test CA, herald following the node as litecoin/testnet with delivery allowed to
 * loopback, and a customer whose domain is localhost. It returns once the follower has processed the
 * node's height, so a test starts from a chain herald has caught up with.
 *
 * Each test file gives only what it changes: the driver's options (address type, funding coins, node
 * arguments), the chain entry's (confirmations, mempool polling, zmqUrl) and the app's (block jobs).
 */

import type { ChainConfig, Config } from '../../src/config/config.ts';
import { loadConfig } from '../../src/config/config.ts';
import { startTestApp, type TestApp, type TestCustomer } from '../harness.ts';
import { followHelpers } from './follow-helpers.ts';
import { type LitecoinDriver, type LitecoinDriverOptions, startLitecoinDriver } from './litecoin-node.ts';
import { type Receiver, startReceiver } from './receiver.ts';
import { createTestCa, writeCaFile } from './tls.ts';

export interface LitecoinAppOptions {
  driver?: LitecoinDriverOptions;
  /** Merged over the chain entry (confirmations 2, polled every 50 ms, 8 requests in flight). */
  chain?: Partial<ChainConfig>;
  /** Merged over the app's configuration. */
  app?: Partial<Config>;
}

export interface LitecoinApp {
  node: LitecoinDriver;
  receiver: Receiver;
  t: TestApp;
  c: TestCustomer;
  /** Mines `count` blocks, waits until herald has processed them and the worker has delivered what they queued. */
  mineAndProcess(count?: number): Promise<number>;
  close(): Promise<void>;
}

export async function startLitecoinApp(options: LitecoinAppOptions = {}): Promise<LitecoinApp> {
  const ca = await createTestCa();
  const [node, receiver] = await Promise.all([startLitecoinDriver(options.driver), startReceiver({ ca })]);
  try {
    return await startHerald(node, receiver, writeCaFile(ca.caPem), options);
  } catch (error) {
    // A failed start leaves no litecoind behind: the caller has nothing to close.
    await Promise.allSettled([receiver.close(), node.close()]);
    throw error;
  }
}

async function startHerald(node: LitecoinDriver, receiver: Receiver, caFile: string, options: LitecoinAppOptions): Promise<LitecoinApp> {
  const t = await startTestApp({
    chains: [
      {
        blockchain: 'litecoin',
        network: 'testnet',
        rpcUrl: node.rpcUrl,
        confirmations: 2,
        pollIntervalMs: 50,
        concurrency: 8,
        requestTimeoutMs: 5000,
        ...node.chainConfig,
        ...options.chain,
      } as ChainConfig,
    ],
    delivery: { ...loadConfig({}, {}).delivery, allowNetworks: ['127.0.0.1/32', '::1/128'], caFile, pollIntervalMs: 20 },
    ...options.app,
  });
  let c: TestCustomer;
  // The secret only matters for subscriptions, which the tests make with their own helpers.
  const { processed } = followHelpers(() => ({ t, customer: c, receiver, blockchain: 'litecoin', network: 'testnet' }), '');
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
