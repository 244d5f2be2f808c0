-- Confirmations that mean what they say (docs/concepts/confirmations-and-reorganisations.md): a subscription may ask for
-- confirmations by amount tiers or for the chain's finality instead of a fixed receiveCallbackOn.
-- NULL: receive_callback_on decides, as before. Otherwise {"tiers": [{"upTo": "1", "confirmations": 1},
-- ..., {"upTo": null, "confirmations": 6}]} or {"finality": "finalized"}, and receive_callback_on is NULL.
ALTER TABLE subscriptions ADD COLUMN confirmation_policy jsonb;

-- A customer's default policy per chain, used by a create of an address subscription that gives none
-- of receiveCallbackOn, confirmationTiers and finality (the same JSON as above). Copied into the
-- subscription at its create: changing the default changes no existing subscription.
CREATE TABLE customer_confirmation_policies (
  customer_id bigint NOT NULL REFERENCES customers (id) ON DELETE CASCADE,
  blockchain text NOT NULL,
  network text NOT NULL,
  policy jsonb NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (customer_id, blockchain, network)
);

-- The chain's finalized height as the follower last read it (docs/concepts/confirmations-and-reorganisations.md#finality),
-- kept while subscriptions wait for finality: a replay sends their events of blocks at or below it.
ALTER TABLE chain_cursors ADD COLUMN finalized_height bigint;
