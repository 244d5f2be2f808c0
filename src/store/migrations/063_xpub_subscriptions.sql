-- Extended public keys and output descriptors subscribed as one wallet (issue 32,
-- docs/concepts/wallet-keys.md). The subscription row keeps what the customer gave (wallet_key: which
-- field, the text as given, derivation, gapLimit, and whether the chain's node is a regtest one, which
-- fixes the addresses' bech32 prefix); NULL on every other event type. A private key is refused before
-- anything is written, so none can be here.
ALTER TABLE subscriptions ADD COLUMN wallet_key jsonb;

-- The derived addresses of each such subscription: receive (change = false, /0/i) and change (/1/i).
-- The window only grows: the follower adds addresses in the block transaction that first sees one used,
-- so that gap_limit unused ones stay watched beyond the highest used; a reorganisation clears the used
-- flags its dropped blocks set (first_seen_height above the common ancestor) but keeps the addresses.
-- Deleted with their subscription.
CREATE TABLE xpub_addresses (
  subscription_id uuid NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
  change boolean NOT NULL,
  index integer NOT NULL CHECK (index >= 0),
  -- Normalised, as matching compares it (domain/addresses.ts).
  address text NOT NULL,
  derivation_path text NOT NULL,
  used boolean NOT NULL DEFAULT false,
  first_seen_height bigint,
  PRIMARY KEY (subscription_id, change, index)
);
