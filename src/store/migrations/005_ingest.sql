-- Chain following, wired: subscription changes announced to the ingest processes (their in-memory
-- matching indexes), what the status endpoint reports, and the wallet ledger's per-block entries.

-- Every subscription created, deleted, activated or deactivated is announced with its chain, so each
-- ingest process updates its matching index at once (it reads the row itself: the payload stays small).
CREATE FUNCTION herald_announce_subscription() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  row_ subscriptions := CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
BEGIN
  PERFORM pg_notify('herald_subscriptions', json_build_object(
    'id', row_.id, 'blockchain', row_.blockchain, 'network', row_.network, 'op', TG_OP)::text);
  RETURN NULL;
END $$;

CREATE TRIGGER subscriptions_announced AFTER INSERT OR DELETE OR UPDATE OF is_active ON subscriptions
  FOR EACH ROW EXECUTE FUNCTION herald_announce_subscription();

-- What the follower last saw of its node, for GET /blockchain-events/status (any process can answer).
ALTER TABLE chain_cursors
  ADD COLUMN node_head bigint,
  ADD COLUMN node_head_seen_at timestamptz,
  ADD COLUMN block_timestamp bigint;

-- Opening balance of a watched address: read from the node at watched_from_block once that block is
-- confirmed ('pending' until then; 'unavailable' when the node cannot tell, e.g. a pruned state).
ALTER TABLE wallet_addresses ADD COLUMN opening_state text NOT NULL DEFAULT 'pending'
  CHECK (opening_state IN ('pending', 'read', 'unavailable'));
CREATE INDEX wallet_addresses_opening_pending ON wallet_addresses (blockchain, network) WHERE opening_state = 'pending';
CREATE INDEX wallet_addresses_unanchored ON wallet_addresses (blockchain, network) WHERE watched_from_block IS NULL;

-- The ledger effect of each block on watched addresses, recorded when the block is applied and added to
-- the balances once the block has the chain's confirmations (only confirmed blocks count). A
-- reorganisation deletes the entries of orphaned blocks (reversing those already applied).
CREATE TABLE ledger_entries (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  blockchain text NOT NULL,
  network text NOT NULL,
  block_height bigint NOT NULL,
  wallet_address_id bigint NOT NULL REFERENCES wallet_addresses (id) ON DELETE CASCADE,
  -- 'coin': received/spent in the native unit; 'token': fungible delta per contract; 'nft': the token is
  -- held after the block (delta 1) or not (delta -1).
  kind text NOT NULL CHECK (kind IN ('coin', 'token', 'nft')),
  identifier text NOT NULL DEFAULT '',
  token_id text NOT NULL DEFAULT '',
  received numeric(78, 0) NOT NULL DEFAULT 0,
  spent numeric(78, 0) NOT NULL DEFAULT 0,
  delta numeric(78, 0) NOT NULL DEFAULT 0,
  symbol text NOT NULL DEFAULT '',
  token_type text NOT NULL DEFAULT '',
  decimals integer NOT NULL DEFAULT 0,
  applied boolean NOT NULL DEFAULT false
);
CREATE INDEX ledger_entries_by_block ON ledger_entries (blockchain, network, block_height);
CREATE INDEX ledger_entries_unapplied ON ledger_entries (blockchain, network, block_height) WHERE NOT applied;
CREATE INDEX ledger_entries_by_address ON ledger_entries (wallet_address_id);
