-- The `evicted` reason of the DROPPED events (issue 33, docs/concepts/deposit-safety.md#evicted): the eviction
-- checks' state of each open announcement. missing_checks counts the consecutive checks at which the node said
-- the transaction is in no mempool (reset to 0 when a check finds it there again); missing_since is the time of
-- the first of them (NULL while it is in the mempool). Only an announcement missing at three consecutive checks
-- spanning at least the chain's mempoolEvictionSpanMs can be closed as evicted, and then only with the proof
-- that it is not mined (src/ingest/evicted.ts).
ALTER TABLE mempool_announced
  ADD COLUMN missing_checks integer NOT NULL DEFAULT 0,
  ADD COLUMN missing_since timestamptz;
