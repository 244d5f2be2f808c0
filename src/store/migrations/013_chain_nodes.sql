-- Several nodes per chain (docs/reference/chains.md "Several nodes per chain"): the ingest role's view of each configured
-- node, one row per node, rewritten as its health is checked. The status endpoint, the metrics and the
-- operator alerts read it, so every process (not only the one following) shows the same view.
CREATE TABLE chain_nodes (
  blockchain text NOT NULL,
  network text NOT NULL,
  node text NOT NULL,            -- the redacted URL (src/domain/node-urls.ts redactUrl)
  eligible boolean NOT NULL,
  reason text,                   -- why not eligible; NULL when eligible
  head_height bigint,
  head_hash text,
  lag_blocks integer,            -- behind the best eligible head
  error_rate double precision,   -- failed / all requests over a recent window, 0..1
  latency_ms double precision,   -- recent median/EWMA latency
  checked_at timestamptz NOT NULL,
  changed_at timestamptz NOT NULL, -- when `eligible` last flipped
  PRIMARY KEY (blockchain, network, node)
);
