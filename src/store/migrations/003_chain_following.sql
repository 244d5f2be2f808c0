-- Chain following: one cursor per (blockchain, network), the window of recent canonical blocks (to
-- detect reorganisations by parent hash and find the common ancestor), confirmed events waiting for
-- their confirmations, and which enqueued callbacks came from which block (to cancel the unsent ones
-- of a block that leaves the canonical chain).

CREATE TABLE chain_cursors (
  blockchain text NOT NULL,
  network text NOT NULL,
  -- The last block applied (all of its callbacks enqueued or pending in the same transaction).
  height bigint NOT NULL,
  hash text NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  -- 'stopped': a reorganisation deeper than the window; an operator must look before it goes on.
  state text NOT NULL DEFAULT 'following' CHECK (state IN ('following', 'stopped')),
  stop_reason text,
  PRIMARY KEY (blockchain, network)
);

-- Invariant: every block in the window links to its predecessor by parent_hash, and the highest one
-- is the cursor's block.
CREATE TABLE chain_blocks (
  blockchain text NOT NULL,
  network text NOT NULL,
  height bigint NOT NULL,
  hash text NOT NULL,
  parent_hash text NOT NULL,
  -- Seconds since the Unix epoch, as the node reported it.
  timestamp bigint NOT NULL,
  PRIMARY KEY (blockchain, network, height)
);

-- Matched confirmed events whose block has not yet reached the confirmations asked. Invariant: every
-- row's block is on the canonical chain (a reorganisation deletes the rows of orphaned blocks).
CREATE TABLE pending_events (
  blockchain text NOT NULL,
  network text NOT NULL,
  subscription_id uuid NOT NULL,
  customer_id bigint NOT NULL,
  block_height bigint NOT NULL,
  block_hash text NOT NULL,
  -- The height at which the callback is due: block_height + confirmations - 1.
  due_height bigint NOT NULL,
  idempotency_key text NOT NULL,
  -- The exact callback JSON, built when matched (its item names the block it was mined in).
  body text NOT NULL,
  callback_url text NOT NULL,
  event_type text NOT NULL,
  PRIMARY KEY (subscription_id, idempotency_key)
);
CREATE INDEX pending_events_due ON pending_events (blockchain, network, due_height);
CREATE INDEX pending_events_block ON pending_events (blockchain, network, block_height);

-- The callbacks the follower enqueued, by the height of the block their event was mined in; pruned
-- with the window. A reorganisation cancels those of orphaned blocks that are still pending.
CREATE TABLE chain_block_callbacks (
  blockchain text NOT NULL,
  network text NOT NULL,
  block_height bigint NOT NULL,
  subscription_id uuid NOT NULL,
  idempotency_key text NOT NULL,
  PRIMARY KEY (blockchain, network, block_height, subscription_id, idempotency_key)
);
