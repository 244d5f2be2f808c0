/**
 * Listens for the database's announcements on a connection of its own, and reconnects with backoff
 * when it drops: changes to keys, plans and callback domains (NOTIFY herald_changes, from triggers) and
 * newly enqueued callbacks (NOTIFY herald_callbacks, which wakes the delivery worker).
 */
import pg from 'pg';
import { Backoff } from '../lib/loop.ts';
import { CALLBACKS_CHANNEL } from './callbacks.ts';

export interface Change {
  table: string;
  customerId: string;
}

/** A subscription created, deleted, activated or deactivated (NOTIFY herald_subscriptions). */
export interface SubscriptionChange {
  id: string;
  blockchain: string;
  network: string;
  op: 'INSERT' | 'UPDATE' | 'DELETE';
}

/**
 * Many subscriptions of one customer and chain inserted by one statement (a bulk create's chunk),
 * announced as the range of their created_at (migration 018): read them with loadIndexableInRange.
 */
export interface SubscriptionRangeChange {
  op: 'INSERT_RANGE';
  blockchain: string;
  network: string;
  customerId: string;
  /** created_at of the first and last row, as PostgreSQL prints a timestamptz (exact to the microsecond). */
  from: string;
  to: string;
  count: number;
}

export const SUBSCRIPTIONS_CHANNEL = 'herald_subscriptions';

export interface ChangeListener {
  close(): Promise<void>;
}

export function listenForChanges(
  url: string,
  handlers: {
    onChange(change: Change): void;
    onCallbacks?(): void;
    /** Subscription changes; after a reconnection (onLive true) the receiver must assume it missed some. */
    onSubscription?(change: SubscriptionChange | SubscriptionRangeChange): void;
    onLive(live: boolean): void;
    onError(error: Error): void;
  },
): ChangeListener {
  let client: pg.Client | undefined;
  let closed = false;
  const reconnect = new Backoff({ firstMs: 250, maxMs: 5_000 });
  let timer: NodeJS.Timeout | undefined;

  const connect = async () => {
    const next = new pg.Client({ connectionString: url });
    client = next;
    next.on('notification', (message) => {
      if (message.channel === CALLBACKS_CHANNEL) return handlers.onCallbacks?.();
      if (message.channel === SUBSCRIPTIONS_CHANNEL) {
        try {
          return handlers.onSubscription?.(JSON.parse(message.payload ?? '') as SubscriptionChange | SubscriptionRangeChange);
        } catch {
          return handlers.onLive(true); // unreadable: the receiver reloads everything
        }
      }
      try {
        const change = JSON.parse(message.payload ?? '') as Change;
        handlers.onChange({ table: String(change.table), customerId: String(change.customerId) });
      } catch {
        handlers.onLive(true); // an announcement we cannot read: forget everything to be safe
      }
    });
    next.on('error', (error) => lost(error));
    next.on('end', () => lost(new Error('the change listener connection ended')));
    try {
      await next.connect();
      await next.query('LISTEN herald_changes');
      if (handlers.onCallbacks) await next.query(`LISTEN ${CALLBACKS_CHANNEL}`);
      if (handlers.onSubscription) await next.query(`LISTEN ${SUBSCRIPTIONS_CHANNEL}`);
      reconnect.reset();
      handlers.onLive(true);
      handlers.onCallbacks?.(); // anything enqueued while we were not listening
    } catch (error) {
      lost(error as Error);
    }
  };

  const lost = (error: Error) => {
    if (closed || timer) return;
    handlers.onLive(false);
    handlers.onError(error);
    client?.end().catch(() => undefined);
    timer = setTimeout(() => {
      timer = undefined;
      void connect();
    }, reconnect.next());
  };

  void connect();
  return {
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      handlers.onLive(false);
      await client?.end().catch(() => undefined);
    },
  };
}
