-- Unconfirmed events (issue 15): the mempool transactions each chain's ingest process has read, so that a
-- restart neither reads them again nor resends their callbacks (the callbacks' idempotency keys make a
-- resend impossible while the callback row lives; this set also spares the node the reads). Bounded: the
-- mempool loop deletes rows older than its maximum age and beyond its maximum count.
CREATE TABLE mempool_seen (
  blockchain text NOT NULL,
  network text NOT NULL,
  transaction_id text NOT NULL,
  first_seen_at timestamptz NOT NULL,
  PRIMARY KEY (blockchain, network, transaction_id)
);
CREATE INDEX mempool_seen_age ON mempool_seen (blockchain, network, first_seen_at);

-- What a replacement would share with a seen transaction (UTXO: an outpoint it spends; EVM: sender:nonce),
-- first claimer kept: a later transaction with the same key replaces it (RBF) and fires nothing. Pruned
-- with mempool_seen.
CREATE TABLE mempool_claims (
  blockchain text NOT NULL,
  network text NOT NULL,
  claim text NOT NULL,
  transaction_id text NOT NULL,
  first_seen_at timestamptz NOT NULL,
  PRIMARY KEY (blockchain, network, claim)
);
CREATE INDEX mempool_claims_age ON mempool_claims (blockchain, network, first_seen_at);

-- The mempool reader's state per chain, as the ingest process last saw it (GET /blockchain-events/status
-- reads it in any process).
CREATE TABLE mempool_status (
  blockchain text NOT NULL,
  network text NOT NULL,
  method text NOT NULL,
  state text NOT NULL,             -- 'following' | 'failing' | 'idle' (no unconfirmed subscription: the node is not read)
  last_polled_at timestamptz,      -- last poll that read the node successfully
  backlog integer NOT NULL,        -- transactions listed by the node and not yet read
  transactions_seen bigint NOT NULL,
  callbacks_fired bigint NOT NULL,
  error text,                      -- the last failure, for the operator (never shown to customers)
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (blockchain, network)
);
