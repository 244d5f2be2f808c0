-- The event stream (docs/concepts/event-stream.md): every event herald created for a customer, in
-- commit order, readable with a cursor beside (or instead of) the callbacks.
--
-- A stream position is the writing transaction's id (xid8, never wraps) and, within the transaction, a
-- rank (retractions before events) and a number (the mark's id, or the callback's x-callback-sequence).
-- A reader returns only rows whose transaction id is below its snapshot's xmin: every transaction older
-- than that has ended, so no row can ever appear behind a cursor once a reader has gone past it (an
-- identity column would not do: numbers are taken in one order and committed in another).
--
-- Callbacks enqueued before this migration have no position (NULL) and are not in the stream. The
-- column's default is set after it is added, so that adding it does not rewrite the table.
ALTER TABLE callbacks ADD COLUMN stream_xid xid8;
ALTER TABLE callbacks ALTER COLUMN stream_xid SET DEFAULT pg_current_xact_id();
-- The stream's reads, per customer in position order. sequence is left out of the index: the numbering
-- statement sets it right after the insert, and an indexed column there would make that update write
-- every index again; a transaction's few rows of one customer are sorted on the fly.
CREATE INDEX callbacks_stream ON callbacks (customer_id, stream_xid) WHERE stream_xid IS NOT NULL;

-- What happened to an event after it was created: 'retracted' when its block left the canonical chain
-- (a reorganisation), 'reinstated' when the chain came back to that very block (the callback revived).
-- One row per change, at the position of the transaction that made it; pruned with its callback.
CREATE TABLE stream_marks (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  customer_id bigint NOT NULL,
  callback_id uuid NOT NULL,
  kind text NOT NULL CHECK (kind IN ('retracted', 'reinstated')),
  -- The block that left the chain (a retraction), or came back (a reinstatement).
  block_height bigint,
  block_hash text,
  stream_xid xid8 NOT NULL DEFAULT pg_current_xact_id(),
  created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX stream_marks_stream ON stream_marks (customer_id, stream_xid);
CREATE INDEX stream_marks_callback ON stream_marks (callback_id);

-- Per customer, the position of the newest stream entry retention deleted: a cursor before it would
-- miss entries, so it is answered 410 with this position (the oldest cursor still complete).
CREATE TABLE stream_horizons (
  customer_id bigint PRIMARY KEY,
  stream_xid xid8 NOT NULL,
  rank integer NOT NULL,
  n bigint NOT NULL,
  entry_id uuid NOT NULL
);

-- Kept by a statement trigger on callbacks (whatever deletes them: the pruner, herald prune): the marks
-- of deleted callbacks go with them, and the customer's horizon moves to the newest entry deleted.
-- Like herald_count_deleted_callbacks (migration 027), it waits for held rows without the batch's
-- short lock_timeout.
CREATE FUNCTION herald_stream_deleted_callbacks() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  caller_lock_timeout text := current_setting('lock_timeout');
BEGIN
  PERFORM set_config('lock_timeout', '0', true);
  WITH marks AS (
    DELETE FROM stream_marks m USING deleted d WHERE m.callback_id = d.id
    RETURNING m.customer_id, m.stream_xid, 0 AS rank, m.id AS n, m.callback_id AS entry_id),
  gone AS (
    SELECT customer_id, stream_xid, 1 AS rank, coalesce(sequence, 0) AS n, id AS entry_id FROM deleted WHERE stream_xid IS NOT NULL
    UNION ALL SELECT * FROM marks),
  newest AS (
    SELECT DISTINCT ON (customer_id) * FROM gone ORDER BY customer_id, stream_xid DESC, rank DESC, n DESC, entry_id DESC)
  INSERT INTO stream_horizons AS h (customer_id, stream_xid, rank, n, entry_id)
  SELECT customer_id, stream_xid, rank, n, entry_id FROM newest
  ON CONFLICT (customer_id) DO UPDATE SET stream_xid = excluded.stream_xid, rank = excluded.rank, n = excluded.n, entry_id = excluded.entry_id
  WHERE (h.stream_xid, h.rank, h.n, h.entry_id) < (excluded.stream_xid, excluded.rank, excluded.n, excluded.entry_id);
  PERFORM set_config('lock_timeout', caller_lock_timeout, true);
  RETURN NULL;
END $$;
CREATE TRIGGER callbacks_stream_deleted AFTER DELETE ON callbacks
  REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION herald_stream_deleted_callbacks();
