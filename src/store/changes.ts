/**
 * Listens for the database's change announcements (NOTIFY herald_changes, sent by triggers on keys,
 * plans and callback domains) on a connection of its own, and reconnects with backoff when it drops.
 */
import pg from 'pg';

export interface Change {
  table: string;
  customerId: string;
}

export interface ChangeListener {
  close(): Promise<void>;
}

export function listenForChanges(
  url: string,
  handlers: { onChange(change: Change): void; onLive(live: boolean): void; onError(error: Error): void },
): ChangeListener {
  let client: pg.Client | undefined;
  let closed = false;
  let retryMs = 250;
  let timer: NodeJS.Timeout | undefined;

  const connect = async () => {
    const next = new pg.Client({ connectionString: url });
    client = next;
    next.on('notification', (message) => {
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
      retryMs = 250;
      handlers.onLive(true);
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
    }, retryMs);
    retryMs = Math.min(retryMs * 2, 5_000);
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
