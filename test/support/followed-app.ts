/**
 * The set-up the end-to-end tests on a chain node share: the node's driver (a real litecoind or EVM node,
 * or a fake one), an HTTPS receiver with a test CA, herald following the node with delivery allowed to
 * loopback, and a customer whose domain is localhost. It returns once the follower has processed the
 * node's height, so a test starts from a chain herald has caught up with.
 *
 * Each test gives only what it changes: the chain entry's options (confirmations, mempool polling,
 * zmqUrl), the delivery's (retry schedule) and the app's (block jobs).
 *
 * useFollowedApp does the same for a test file or a describe block: started in a beforeAll, closed in an
 * afterAll, with the follow helpers (follow-helpers.ts) bound to it. receiverDelivery is the delivery
 * configuration alone, for tests that start herald themselves.
 */

import { afterAll, beforeAll } from 'vitest';
import type { ChainConfig, Config } from '../../src/config/config.ts';
import { loadConfig } from '../../src/config/config.ts';
import { startTestApp, type TestApp, type TestCustomer } from '../harness.ts';
import type { ChainDriver } from './chain-driver.ts';
import { followHelpers } from './follow-helpers.ts';
import { type Receiver, startReceiver } from './receiver.ts';
import { createTestCa, writeCaFile } from './tls.ts';

/**
 * What herald is pointed at and the test mines with: any ChainDriver, or a bare EVM test node
 * (evm-driver.ts, followedEvmNode).
 */
export type FollowedNode = Pick<ChainDriver, 'blockchain' | 'network' | 'rpcUrl' | 'chainConfig' | 'height' | 'mine' | 'close'>;

/** The loopback networks the tests' receivers listen on: delivery refuses them unless allowed (docs/reference/configuration.md). */
export const LOOPBACK_NETWORKS = ['127.0.0.1/32', '::1/128'];

/**
 * The delivery configuration that reaches the local test receiver (receiver.ts: HTTPS on loopback with a
 * certificate of the test CA whose file is `caFile`): loopback allowed, that CA trusted, the queue polled
 * every 20 ms; `overrides` merged over it.
 */
export function receiverDelivery(caFile: string, overrides: Partial<Config['delivery']> = {}): Config['delivery'] {
  return { ...loadConfig({}, {}).delivery, allowNetworks: [...LOOPBACK_NETWORKS], caFile, pollIntervalMs: 20, ...overrides };
}

export interface FollowedAppOptions {
  /**
   * Merged over the chain entry (confirmations 2, polled every 50 ms, 8 requests in flight); a function is
   * called when herald starts (for what an earlier beforeAll makes, a ZMQ publisher's address).
   */
  chain?: Partial<ChainConfig> | (() => Partial<ChainConfig>);
  /** Merged over the delivery configuration (loopback allowed, the test CA trusted, polled every 20 ms). */
  delivery?: Partial<Config['delivery']>;
  /** Merged over the app's configuration. */
  app?: Partial<Config>;
}

export interface FollowedApp<D extends FollowedNode = ChainDriver> {
  node: D;
  receiver: Receiver;
  t: TestApp;
  c: TestCustomer;
  /** Mines `count` blocks, waits until herald has processed them and the worker has delivered what they queued. */
  mineAndProcess(count?: number): Promise<number>;
  close(): Promise<void>;
}

export async function startFollowedApp<D extends FollowedNode>(start: () => Promise<D>, options: FollowedAppOptions = {}): Promise<FollowedApp<D>> {
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

async function startHerald<D extends FollowedNode>(node: D, receiver: Receiver, caFile: string, options: FollowedAppOptions): Promise<FollowedApp<D>> {
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
        ...(typeof options.chain === 'function' ? options.chain() : options.chain),
      } as ChainConfig,
    ],
    delivery: receiverDelivery(caFile, options.delivery),
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

export interface UseFollowedAppOptions extends FollowedAppOptions {
  /** The callbackSecretKey of the subscriptions the handle's follow helpers make ('' where a test makes none). */
  secret?: string;
  /** The beforeAll's timeout; default 60 s. */
  timeoutMs?: number;
}

/** A followed app of a test file or describe block: its parts, read when a test runs, and the follow helpers. */
export type FollowedAppHandle<D extends FollowedNode> = Omit<FollowedApp<D>, 'close'> & ReturnType<typeof followHelpers>;

/**
 * startFollowedApp in a beforeAll of the test file or describe block it is called in, and its close in an
 * afterAll. The handle is returned at once: its node, receiver, t and c are those of the app started, read at
 * each use (a test's body runs after the beforeAll; read before, they throw), and it carries the follow
 * helpers (subscribe, indexed, callbacksOf, ...) bound to that app and `options.secret`.
 */
export function useFollowedApp<D extends FollowedNode>(start: () => Promise<D>, options: UseFollowedAppOptions = {}): FollowedAppHandle<D> {
  const { secret = '', timeoutMs = 60_000, ...appOptions } = options;
  let env: FollowedApp<D> | undefined;
  const started = (): FollowedApp<D> => {
    if (!env) throw new Error('useFollowedApp: the app starts in a beforeAll; read it in a test or a later hook');
    return env;
  };
  beforeAll(async () => {
    env = await startFollowedApp(start, appOptions);
  }, timeoutMs);
  afterAll(() => env?.close());
  const helpers = followHelpers(() => {
    const { t, c, receiver, node } = started();
    return { t, customer: c, receiver, blockchain: node.blockchain, network: node.network };
  }, secret);
  return {
    ...helpers,
    get node() {
      return started().node;
    },
    get receiver() {
      return started().receiver;
    },
    get t() {
      return started().t;
    },
    get c() {
      return started().c;
    },
    mineAndProcess: (count) => started().mineAndProcess(count),
  };
}
