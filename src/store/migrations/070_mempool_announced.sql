-- Dropped unconfirmed transactions (issue 33, docs/reference/events/address-coins-transaction-unconfirmed-dropped.md):
-- the transactions herald announced to an unconfirmed subscription (its UNCONFIRMED callback queued) that
-- are still open, one row per (transaction, subscription), with the callback item it was announced with.
-- Written in the mempool loop's batch transaction, with the UNCONFIRMED callback; closed (deleted) when the
-- transaction is mined (the follower's block transaction), or when it is dropped, in the same transaction
-- as its DROPPED callback. Pruned with mempool_seen (the mempool loop's maximum age).
CREATE TABLE mempool_announced (
  blockchain text NOT NULL,
  network text NOT NULL,
  transaction_id text NOT NULL,
  subscription_id uuid NOT NULL,
  event_type text NOT NULL,
  item jsonb NOT NULL,
  announced_at timestamptz NOT NULL,
  PRIMARY KEY (blockchain, network, transaction_id, subscription_id)
);
CREATE INDEX mempool_announced_age ON mempool_announced (blockchain, network, announced_at);

-- What the open announced transactions spent (UTXO: each outpoint, txid:vout; EVM: sender:nonce): another
-- transaction with one of these keys, in the mempool or in a block, replaces or conflicts with it.
CREATE TABLE mempool_announced_spends (
  blockchain text NOT NULL,
  network text NOT NULL,
  claim text NOT NULL,
  transaction_id text NOT NULL,
  PRIMARY KEY (blockchain, network, claim, transaction_id)
);
CREATE INDEX mempool_announced_spends_transaction ON mempool_announced_spends (blockchain, network, transaction_id);
