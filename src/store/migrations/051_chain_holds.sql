-- The deep-reorganisation breaker (docs/concepts/confirmations-and-reorganisations.md#the-deep-reorganisation-breaker):
-- one row per held chain, written in the transaction that found the reorganisation (or the nodes'
-- disagreement) and deleted by the operator's release. While it exists, the chain's confirmed callbacks
-- are inserted held: pending, due at 'infinity' (never claimed: the claim's index walks due rows only),
-- and out of the event stream (stream_xid NULL) until the release makes them due and streams them.
CREATE TABLE chain_holds (
  blockchain text NOT NULL,
  network text NOT NULL,
  held_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  -- 'reorganisation': the chain was rewound deeper than breaker_depth; 'disagreement': a node claimed such
  -- a reorganisation and no second node confirmed it.
  reason text NOT NULL CHECK (reason IN ('reorganisation', 'disagreement')),
  -- The deepest trip while held, and the breaker depth it was measured against.
  depth integer NOT NULL,
  breaker_depth integer NOT NULL,
  -- Every trip while held, oldest first (at most 20): {at, reason, depth, ancestorHeight, ancestorHash, detail,
  -- blocks: [{height, orphanedHash, newHash}]}.
  trips jsonb NOT NULL,
  PRIMARY KEY (blockchain, network)
);

-- The held callbacks, found by the release (and counted by the operator's view) without a scan of the outbox.
CREATE INDEX callbacks_held ON callbacks (subscription_id) WHERE status = 'pending' AND next_attempt_at = 'infinity';
