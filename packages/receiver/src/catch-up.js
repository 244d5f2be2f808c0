// catchUp: reads herald's event stream (GET /blockchain-events/events, docs/concepts/event-stream.md) from
// the last cursor stored, hands each entry to `handle` in order (typically handleOnce), and stores the
// cursor after each page. After downtime, or continuously (`follow: true`) instead of callbacks.

/** The stream answered 410: the cursor is older than herald's retention. `oldestCursor` is where to go on from. */
export class CursorExpiredError extends Error {
  constructor(oldestCursor, message) {
    super(message);
    this.name = 'CursorExpiredError';
    this.code = 'cursor_expired';
    this.oldestCursor = oldestCursor;
  }
}

/** Any other refusal of the stream (a bad key, no credits...): the error envelope's code and message. */
export class StreamError extends Error {
  constructor(status, code, message) {
    super(message);
    this.name = 'StreamError';
    this.status = status;
    this.code = code;
  }
}

/**
 * A cursor store in the receiver's PostgreSQL database: one row per stream name. Saving the cursor after the
 * entries (not in their transactions) is safe with handleOnce: a crash between the two reads them again.
 */
export function pgCursorStore(client, { name = 'default', table = 'herald_stream_cursor' } = {}) {
  return {
    async load() {
      await client.query(`CREATE TABLE IF NOT EXISTS ${table} (name text PRIMARY KEY, cursor text NOT NULL, saved_at timestamptz NOT NULL DEFAULT now())`);
      const { rows } = await client.query(`SELECT cursor FROM ${table} WHERE name = $1`, [name]);
      return rows[0]?.cursor;
    },
    async save(cursor) {
      await client.query(`INSERT INTO ${table} (name, cursor) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET cursor = excluded.cursor, saved_at = now()`, [
        name,
        cursor,
      ]);
    },
  };
}

/**
 * Reads from the stored cursor to the end of the stream (with `follow`, on and on, long-polling `waitSeconds`
 * at the end until `signal` aborts). Returns the entries handled and the last cursor. A 410 throws
 * CursorExpiredError (reconcile, then save its oldestCursor to go on); other refusals StreamError.
 */
export async function catchUp({
  baseUrl,
  apiKey,
  cursorStore,
  handle,
  limit = 1000,
  follow = false,
  waitSeconds = 25,
  signal,
  filters = {},
  fetch = globalThis.fetch,
}) {
  let cursor = await cursorStore.load();
  let entries = 0;
  for (;;) {
    if (signal?.aborted) return { entries, cursor };
    const query = new URLSearchParams({ limit: String(limit), ...filters });
    if (cursor) query.set('cursor', cursor);
    if (follow) query.set('waitSeconds', String(waitSeconds));
    let response;
    try {
      response = await fetch(`${baseUrl.replace(/\/$/, '')}/blockchain-events/events?${query}`, { headers: { 'x-api-key': apiKey }, signal });
    } catch (error) {
      if (signal?.aborted) return { entries, cursor };
      throw error;
    }
    const answer = await response.json();
    if (response.status === 410)
      throw new CursorExpiredError(response.headers.get('x-oldest-cursor') ?? answer.error?.details?.[0]?.message, answer.error?.message);
    if (response.status !== 200) throw new StreamError(response.status, answer.error?.code, answer.error?.message ?? `the stream answered ${response.status}`);
    for (const item of answer.data.items) {
      await handle(item);
      entries++;
    }
    cursor = answer.data.nextCursor;
    await cursorStore.save(cursor);
    if (!answer.data.hasMore && !follow) return { entries, cursor };
  }
}
