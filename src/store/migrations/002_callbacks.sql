-- The callback outbox: producers insert in their own transaction (chain following, in the transaction
-- that advances its cursor); delivery workers claim due rows with FOR UPDATE SKIP LOCKED.

CREATE TABLE callbacks (
  id uuid PRIMARY KEY,
  customer_id bigint NOT NULL,
  -- No foreign key: a deleted subscription's callbacks stay, cancelled, in the log.
  subscription_id uuid NOT NULL,
  event_type text NOT NULL,
  idempotency_key text NOT NULL,
  -- The exact JSON text POSTed (and signed): kept as sent, never re-serialised.
  body text NOT NULL,
  callback_url text NOT NULL,
  -- scheme://host:port of callback_url: the unit of per-destination concurrency.
  destination text NOT NULL,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed', 'cancelled')),
  attempts integer NOT NULL DEFAULT 0,
  -- attempts when the current series began: a resend starts a new series of retries, numbering goes on.
  series_start integer NOT NULL DEFAULT 0,
  -- When a pending callback is due. A worker that claims it moves this forward by its lease, so a
  -- claim whose worker died is due again when the lease runs out.
  next_attempt_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  finished_at timestamptz,
  -- Why the callback ended failed or cancelled, e.g. callback_url_gone.
  outcome text,
  -- One callback per subscription and event identity: a producer that runs twice adds nothing.
  UNIQUE (subscription_id, idempotency_key)
) WITH (fillfactor = 80);
CREATE INDEX callbacks_due ON callbacks (next_attempt_at) WHERE status = 'pending';
CREATE INDEX callbacks_log ON callbacks (subscription_id, created_at, id);

-- Every try: when, how long, what the receiver answered or why it could not be reached.
CREATE TABLE callback_attempts (
  callback_id uuid NOT NULL,
  attempt integer NOT NULL,
  started_at timestamptz NOT NULL,
  duration_ms integer NOT NULL,
  http_status integer,
  -- timeout, connection_refused, connection_reset, tls, dns, refused_destination, bad_status; NULL on success.
  error_class text,
  error_message text,
  -- The first 4 KiB of the response body.
  response_body text,
  PRIMARY KEY (callback_id, attempt)
);
