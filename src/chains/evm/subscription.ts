/**
 * One `eth_subscribe` over a node's WebSocket (newHeads for the follower, newPendingTransactions for the
 * mempool reader), shared by its listeners, opened with the first and closed with the last. Reconnection is
 * done here rather than by viem: viem gives up after 5 attempts, while a node restart may take minutes, and
 * the caller's polling covers the gap meanwhile (onDown, then onUp when subscribed again).
 */
import type { Logger } from 'pino';
import { BaseError, webSocket } from 'viem';
import { redactUrl } from '../../domain/node-urls.ts';
import { Backoff } from '../../lib/loop.ts';

const MAX_RECONNECT_DELAY_MS = 30_000;

export interface SubscriptionOptions<T> {
  wsUrl: string;
  /** eth_subscribe's params. */
  params: ['newHeads'] | ['newPendingTransactions'];
  /** The notification's `result` as the listeners take it; undefined drops it. */
  parse: (result: unknown) => T | undefined;
  /**
   * viem caches one socket per URL and keep-alive interval: subscriptions given different intervals get
   * their own sockets, so closing one (its last listener gone, a reconnection) leaves the other alone.
   */
  keepAliveMs: number;
  timeoutMs?: number;
  /** First delay before reconnecting; doubles up to 30 s. Default 1 s. */
  reconnectDelayMs?: number;
  logger?: Pick<Logger, 'warn' | 'info'>;
  log?: Record<string, unknown>;
  /** Subscribed (the first time and after each reconnection). */
  onUp?: () => void;
  /** The subscription failed or was lost; a reconnection is scheduled. */
  onDown?: (reason: string) => void;
}

export interface Subscription<T> {
  watch(listener: (item: T) => void): () => void;
  stop(): void;
}

export function createSubscription<T>(options: SubscriptionOptions<T>): Subscription<T> {
  const { wsUrl, logger, log } = options;
  const what = options.params[0];
  const listeners = new Set<(item: T) => void>();
  const initialDelay = options.reconnectDelayMs ?? 1_000;
  const node = redactUrl(wsUrl);
  const reconnect = new Backoff({ firstMs: initialDelay, maxMs: MAX_RECONNECT_DELAY_MS });
  let generation = 0;
  let timer: NodeJS.Timeout | undefined;
  let closeSocket: (() => void) | undefined;

  function teardown(): void {
    generation++;
    clearTimeout(timer);
    timer = undefined;
    closeSocket?.();
    closeSocket = undefined;
  }

  function reconnectLater(error: unknown): void {
    teardown();
    if (listeners.size === 0) return;
    // The short message only: viem's full one carries the URL.
    const reason = error instanceof BaseError ? error.shortMessage : error instanceof Error ? error.message : describeSocketFailure(error);
    const delay = reconnect.next();
    logger?.warn({ ...log, node, reason, retryInMs: delay }, `${what} subscription lost; reconnecting`);
    options.onDown?.(reason);
    timer = setTimeout(connect, delay);
  }

  async function connect(): Promise<void> {
    const current = ++generation;
    // reconnect: false, see above.
    const transport = webSocket(wsUrl, {
      reconnect: false,
      retryCount: 0,
      timeout: options.timeoutMs ?? 10_000,
      keepAlive: { interval: options.keepAliveMs },
    })({});
    try {
      const subscription = await transport.value?.subscribe({
        params: options.params as ['newHeads'],
        onData: (data) => {
          if (current !== generation) return;
          reconnect.reset();
          const item = options.parse((data as { result?: unknown })?.result);
          if (item === undefined) return;
          for (const listener of listeners) listener(item);
        },
        // Called synchronously from viem's socket handlers: reconnect outside them.
        onError: (error) => {
          if (current === generation) setImmediate(() => current === generation && reconnectLater(error));
        },
      });
      const client = await transport.value?.getRpcClient();
      if (!subscription || !client) throw new Error('viem WebSocket transport without subscribe');
      if (current !== generation) {
        client.close();
        return;
      }
      closeSocket = () => client.close();
      options.onUp?.();
    } catch (error) {
      if (current === generation) reconnectLater(error);
    }
  }

  return {
    watch(listener) {
      listeners.add(listener);
      if (listeners.size === 1) {
        reconnect.reset();
        void connect();
      }
      return () => {
        listeners.delete(listener);
        if (listeners.size === 0) teardown();
      };
    },
    stop() {
      listeners.clear();
      teardown();
    },
  };
}

/** A WebSocket failure that is not an Error (an 'error' or 'close' event, e.g. an upgrade refused with 503). */
function describeSocketFailure(event: unknown): string {
  if (event && typeof event === 'object') {
    const e = event as { message?: unknown; code?: unknown; reason?: unknown; type?: unknown };
    const parts = [e.type, e.code, e.reason, e.message].filter((p) => (typeof p === 'string' && p !== '') || typeof p === 'number');
    if (parts.length > 0) return `WebSocket ${parts.join(' ')}`;
  }
  return 'the WebSocket connection failed or closed';
}
