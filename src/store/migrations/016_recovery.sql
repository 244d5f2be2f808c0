-- Recovery and ordering (docs/concepts/callbacks-and-retries.md, docs/guides/recover-and-replay.md).

-- x-callback-sequence: each callback's number in its subscription's stream, given when it is enqueued
-- (1, 2, 3, ... per subscription, in the order chain following produces the events). NULL for callbacks
-- enqueued before this migration (they are sent without the header).
ALTER TABLE callbacks ADD COLUMN sequence bigint;

-- The last number given per subscription. A table of its own, not a column of subscriptions: it is
-- written by every block with a match of the subscription, and subscriptions is read by every delivery
-- claim and locked by the API; a counter there would bloat and contend with both. Only the follower of
-- the subscription's chain writes a given row (under the chain's lock), so the row is never hot across
-- transactions. No foreign key, like callbacks: it goes with the subscription (deleted below).
CREATE TABLE callback_sequences (
  subscription_id uuid PRIMARY KEY,
  last bigint NOT NULL CHECK (last >= 0)
);

-- Secret rotation: the secret replaced by the last rotation keeps signing (beside the new one) until
-- previous_secret_until. Stored as the current one is.
ALTER TABLE subscriptions ADD COLUMN previous_callback_secret_key text;
ALTER TABLE subscriptions ADD COLUMN previous_secret_until timestamptz;

-- Bulk recovery jobs: one row per request, run by the delivery role in chunks. Each chunk charges,
-- queues and moves the cursor (after_created_at, after_id) in one transaction, so a crash repeats no
-- chunk and loses none.
CREATE TABLE recoveries (
  id uuid PRIMARY KEY,
  customer_id bigint NOT NULL,
  -- One subscription's callbacks, or every subscription's of the customer with this callbackUrl (and event type).
  subscription_id uuid,
  callback_url text,
  event_type text,
  since timestamptz NOT NULL,
  until timestamptz NOT NULL,
  include_cancelled boolean NOT NULL DEFAULT false,
  -- queued: not started; running; done; out_of_credits: stopped, the rest not queued.
  state text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'running', 'done', 'out_of_credits')),
  -- Callbacks of the window that matched when the job was created.
  found integer NOT NULL DEFAULT 0,
  queued integer NOT NULL DEFAULT 0,
  credits_consumed bigint NOT NULL DEFAULT 0,
  after_created_at timestamptz,
  after_id uuid,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz,
  CHECK ((subscription_id IS NULL) <> (callback_url IS NULL))
);
CREATE INDEX recoveries_unfinished ON recoveries (created_at) WHERE state IN ('queued', 'running');
CREATE INDEX recoveries_customer ON recoveries (customer_id, created_at);

-- The job that last queued a callback again: its progress counts delivered and failed from here.
ALTER TABLE callbacks ADD COLUMN recovery_id uuid;
CREATE INDEX callbacks_recovery ON callbacks (recovery_id) WHERE recovery_id IS NOT NULL;
-- No index by (customer, created_at) for recovery by callbackUrl: it finds the customer's subscriptions
-- of that URL first, then their callbacks by callbacks_log (subscription_id, created_at, id); another
-- index on callbacks would cost every insert of chain following for a rare request.

-- The order a block's confirmed events were matched in, so that when they fall due their callbacks
-- are numbered in block order (a block's rows are otherwise returned in no particular order).
ALTER TABLE pending_events ADD COLUMN position bigint NOT NULL DEFAULT 0;
