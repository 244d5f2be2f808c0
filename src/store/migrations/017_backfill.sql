-- Backfill from a height and replay of a block range (docs/guides/recover-and-replay.md "Backfill and replay").

-- One row per backfill (a subscription created with fromBlockHeight) or replay request. The ingest
-- role of the subscription's chain evaluates blocks from_height..to_height for that subscription alone,
-- in batches: each batch charges, queues and moves processed_height in one transaction, so a crash
-- repeats no batch and loses none (the outbox's (subscription_id, idempotency_key) uniqueness makes a
-- batch evaluated twice queue nothing twice anyway).
CREATE TABLE block_jobs (
  id uuid PRIMARY KEY,
  kind text NOT NULL CHECK (kind IN ('backfill', 'replay')),
  customer_id bigint NOT NULL,
  -- The job goes with its subscription.
  subscription_id uuid NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
  blockchain text NOT NULL,
  network text NOT NULL,
  from_height bigint NOT NULL CHECK (from_height >= 0),
  -- backfill: the chain's processed height when the subscription was created (blocks above it are live
  -- following's); replay: the range's end.
  to_height bigint NOT NULL CHECK (to_height >= from_height),
  -- The last block evaluated (from_height - 1 before the first).
  processed_height bigint NOT NULL,
  -- running; done; out_of_credits: stopped, the rest not queued (nor charged).
  state text NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'done', 'out_of_credits')),
  queued integer NOT NULL DEFAULT 0,
  credits_consumed bigint NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz
);
-- The runner's look-up, and the follower's at each block (running backfills of its chain: usually none).
CREATE INDEX block_jobs_running ON block_jobs (blockchain, network, kind, created_at) WHERE state = 'running';
CREATE INDEX block_jobs_subscription ON block_jobs (subscription_id, created_at);
