// handleOnce: each event's effect exactly once, in the receiver's own PostgreSQL database
// (docs/guides/catch-up-from-the-stream.md). The client is any `pg` connection (a Client, or a client
// checked out of a Pool): the kit depends on no driver, it only calls client.query(text, values).

/** The inbox table: one row per idempotencyKey handled, written in the transaction of its effect. */
export function inboxSchema(table = 'herald_inbox') {
  return `CREATE TABLE IF NOT EXISTS ${table} (
  idempotency_key text PRIMARY KEY,
  reference_id text NOT NULL,
  retracted boolean NOT NULL DEFAULT false,
  handled_at timestamptz NOT NULL DEFAULT now()
)`;
}

export async function createInbox(client, { table = 'herald_inbox' } = {}) {
  await client.query(inboxSchema(table));
}

const IDENTIFIER = /^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?$/;

/**
 * Runs `fn(client, event)` and records `event.idempotencyKey` in one transaction on `client`, unless the key
 * is recorded already: a callback delivered twice, or read again from the stream, has one effect. Returns
 * what happened:
 * - 'applied': fn ran and committed with the key;
 * - 'duplicate': the key was there; nothing ran;
 * - 'retracted': a retraction (`retracted: true`, the event's block left the chain) of an applied event:
 *   `onRetract(client, event)` ran in the transaction that marks the key retracted;
 * - 'ignored': a retraction of an event never applied (recorded, so that the event arriving late has no
 *   effect), or an event whose key is retracted (a late copy); a stream entry with `reinstated: true` (the
 *   chain came back to the event's block) is applied again instead;
 * - 'test': a test callback (data.isTest): acknowledged, nothing ran.
 * When fn or onRetract throws, the transaction is rolled back (neither the effect nor the key stays) and the
 * error is thrown: the event is handled again when it comes again.
 */
export async function handleOnce(client, event, fn, { onRetract, table = 'herald_inbox' } = {}) {
  if (!IDENTIFIER.test(table)) throw new TypeError(`table must be a plain SQL name, not '${table}'`);
  if (event?.data?.isTest) return 'test';
  const key = event?.idempotencyKey;
  if (typeof key !== 'string' || key === '') throw new TypeError('the event has no idempotencyKey');
  await client.query('BEGIN');
  try {
    const outcome = await (event.retracted ? retract(client, event, table, onRetract) : apply(client, event, table, fn));
    await client.query('COMMIT');
    return outcome;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}

async function apply(client, event, table, fn) {
  // A new key is inserted; a retracted one is taken back only by a reinstatement. The row is locked either
  // way, so a second copy handled at the same moment waits for this transaction and then finds the key.
  const { rows } = await client.query(
    `INSERT INTO ${table} (idempotency_key, reference_id) VALUES ($1, $2)
     ON CONFLICT (idempotency_key) DO UPDATE SET retracted = false, handled_at = now()
       WHERE ${table}.retracted AND $3::boolean
     RETURNING idempotency_key`,
    [event.idempotencyKey, String(event.referenceId ?? ''), event.reinstated === true],
  );
  if (rows.length === 0) {
    const retracted = await client.query(`SELECT retracted FROM ${table} WHERE idempotency_key = $1`, [event.idempotencyKey]);
    return retracted.rows[0]?.retracted ? 'ignored' : 'duplicate';
  }
  await fn(client, event);
  return 'applied';
}

async function retract(client, event, table, onRetract) {
  const { rows } = await client.query(
    `UPDATE ${table} SET retracted = true, handled_at = now() WHERE idempotency_key = $1 AND NOT retracted RETURNING idempotency_key`,
    [event.idempotencyKey],
  );
  if (rows.length === 0) {
    // Never applied (or retracted already): remember the key as retracted, so that its event has no effect.
    await client.query(`INSERT INTO ${table} (idempotency_key, reference_id, retracted) VALUES ($1, $2, true) ON CONFLICT DO NOTHING`, [
      event.idempotencyKey,
      String(event.referenceId ?? ''),
    ]);
    return 'ignored';
  }
  if (!onRetract) throw new TypeError(`a retraction of ${event.idempotencyKey} needs onRetract (the undoing of its effect)`);
  await onRetract(client, event);
  return 'retracted';
}
