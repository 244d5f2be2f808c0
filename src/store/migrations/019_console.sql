-- The web console's backend (docs/reference/api-overview.md "Console API"): credit usage per day, operator tokens, and the
-- bounded history behind the operator's charts.

-- Credits spent per customer, endpoint and UTC day. Written by the statement that debits the credits
-- (store/customers.ts debitCredits), so a charge and its usage row are committed or lost together.
-- One row per (customer, endpoint, day): at most a few dozen endpoints a day per customer.
CREATE TABLE credit_usage (
  customer_id bigint NOT NULL,
  day date NOT NULL,
  endpoint text NOT NULL,
  requests bigint NOT NULL CHECK (requests >= 0),
  credits bigint NOT NULL CHECK (credits >= 0),
  PRIMARY KEY (customer_id, day, endpoint)
  -- Rewritten by every debit: room on each page for the new row versions (HOT updates, no index entry).
) WITH (fillfactor = 50);

-- Operator tokens: Bearer tokens of the /operator/* routes. Stored like API keys: the SHA-256 of a
-- 32-byte random token (a fast hash is enough for that much entropy), never the token itself.
CREATE TABLE operator_tokens (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name text NOT NULL,
  token_hash bytea NOT NULL UNIQUE,
  token_prefix text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz
);
-- A name is given to one active token at a time (revoke it to reuse the name).
CREATE UNIQUE INDEX operator_tokens_active_name ON operator_tokens (name) WHERE revoked_at IS NULL;

-- Chart history, one row per chain per minute (the API role samples chain_cursors once a minute, any
-- number of processes: the first sample of a minute wins). Kept 7 days, pruned by the sampler.
CREATE TABLE chain_lag_minutes (
  blockchain text NOT NULL,
  network text NOT NULL,
  minute timestamptz NOT NULL,
  lag_blocks bigint,
  lag_seconds bigint,
  PRIMARY KEY (blockchain, network, minute)
);

-- Reorganisations followed, one row each (written in the rewind's own transaction), for the operator's
-- count of the last 24 hours. Kept 7 days.
CREATE TABLE chain_reorganisations (
  blockchain text NOT NULL,
  network text NOT NULL,
  at timestamptz NOT NULL,
  depth integer NOT NULL
);
CREATE INDEX chain_reorganisations_by_chain ON chain_reorganisations (blockchain, network, at);

-- Delivery attempts per minute (of their start) by outcome: delivered, failed (no retry: gone or
-- exhausted), retried (another attempt scheduled). Added to by the statement that records the attempts
-- (store/callbacks.ts recordOutcomes), so it counts each attempt exactly once. Kept 7 days.
CREATE TABLE delivery_minutes (
  minute timestamptz NOT NULL,
  outcome text NOT NULL CHECK (outcome IN ('delivered', 'failed', 'retried')),
  attempts bigint NOT NULL CHECK (attempts >= 0),
  PRIMARY KEY (minute, outcome)
);

-- The slowest destinations of the last hour read the attempts of that hour: a BRIN index on their start
-- time is a few pages, cheap to keep on the hot insert path (attempts arrive nearly in time order).
CREATE INDEX callback_attempts_started ON callback_attempts USING brin (started_at);
