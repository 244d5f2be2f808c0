-- Extended public keys and output descriptors held by a wallet beside its addresses (issue 32,
-- docs/concepts/wallets.md#extended-keys-in-a-wallet). The key row keeps what the customer gave (wallet_key:
-- which field, the text as given, derivation, gapLimit, regtest, as subscriptions.wallet_key does); a
-- private key is refused before anything is written, so none can be here.
CREATE TABLE wallet_xpubs (
  id uuid PRIMARY KEY,
  wallet_id uuid NOT NULL REFERENCES wallets (id) ON DELETE CASCADE,
  blockchain text NOT NULL,
  network text NOT NULL,
  wallet_key jsonb NOT NULL,
  -- field:text:derivation: one key derives the same addresses whatever its gapLimit, so it is held once.
  key_identity text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  UNIQUE (wallet_id, blockchain, network, key_identity)
);

-- The derived addresses of such a key are ordinary watched addresses of the wallet (wallet_addresses rows:
-- the ledger, the opening balances, reorganisations and the asset record treat them as any other, so the
-- wallet's coin balance is the sum over every derived address watched), marked with their key, chain
-- (false: receive /0/i, true: change /1/i), index and path. xpub_used_height: the block where the
-- ledger first saw the address move (or where past use at add found its coins); the follower extends the
-- key's window in that block's transaction so that gapLimit unused addresses follow the highest used, and
-- a reorganisation clears the heights of its dropped blocks (the window stays). Deleted with their key.
ALTER TABLE wallet_addresses
  ADD COLUMN wallet_xpub_id uuid REFERENCES wallet_xpubs (id) ON DELETE CASCADE,
  ADD COLUMN xpub_change boolean,
  ADD COLUMN xpub_index integer,
  ADD COLUMN derivation_path text,
  ADD COLUMN xpub_used_height bigint;
CREATE INDEX wallet_addresses_by_xpub ON wallet_addresses (wallet_xpub_id, xpub_change, xpub_index) WHERE wallet_xpub_id IS NOT NULL;
CREATE INDEX wallet_addresses_xpub_used ON wallet_addresses (blockchain, network, xpub_used_height) WHERE xpub_used_height IS NOT NULL;
