-- The address read of the Callback Data (docs/concepts/callback-data.md) answers for any address an active
-- address subscription of the customer names, from herald's wallet ledger: such an address is watched
-- for the ledger from the moment the subscription is created, as a wallet's address is. Its ledger row is
-- a wallet_addresses row that belongs to the customer instead of a wallet (subscribed_by), one per
-- customer, chain and address whatever the number of subscriptions naming it. Chain following treats it
-- as any watched address (entries, opening balance, reorganisations); the wallet asset records never see
-- it (they are built per wallet_id).
--
-- Rows are added by src/services/subscribed-addresses.ts (after a create or an activation commits, under
-- the chain's lock as a wallet's address is) and by the follower's start (wallets/watched-set.ts, for the
-- ones a crash left out); they are removed by the triggers below in the transaction that deletes or
-- deactivates the last active subscription naming the address.
ALTER TABLE wallet_addresses
  ALTER COLUMN wallet_id DROP NOT NULL,
  ADD COLUMN subscribed_by bigint REFERENCES customers (id) ON DELETE CASCADE,
  ADD CONSTRAINT wallet_addresses_one_owner CHECK ((wallet_id IS NULL) <> (subscribed_by IS NULL));
CREATE UNIQUE INDEX wallet_addresses_subscribed ON wallet_addresses (subscribed_by, blockchain, network, normalized_address)
  WHERE subscribed_by IS NOT NULL;

-- The active address subscriptions of a customer by address: the address read's access check and the
-- triggers' "is another one still active" look one up. Partial (address events only, active only), so
-- the other subscriptions are not written to it.
CREATE INDEX subscriptions_by_address ON subscriptions (customer_id, blockchain, network, target) WHERE is_active AND address IS NOT NULL;

-- The subscribed addresses of `gone` (customer, chain, address) that no active address subscription
-- names any more stop being watched. Run after the statement, so its own changes are seen. Two
-- concurrent transactions each ending one of two subscriptions of the same address each see the other
-- still active and leave the row: the follower's next start removes it (it is never read meanwhile: the
-- address read asks for an active subscription first).
CREATE FUNCTION herald_unwatch_unsubscribed(gone jsonb) RETURNS void LANGUAGE sql AS $$
  DELETE FROM wallet_addresses a
  USING (SELECT DISTINCT (g->>0)::bigint AS customer_id, g->>1 AS blockchain, g->>2 AS network, g->>3 AS target
         FROM jsonb_array_elements(gone) g) g
  WHERE a.subscribed_by = g.customer_id AND a.blockchain = g.blockchain AND a.network = g.network AND a.normalized_address = g.target
    AND NOT EXISTS (SELECT 1 FROM subscriptions s
                    WHERE s.customer_id = g.customer_id AND s.blockchain = g.blockchain AND s.network = g.network AND s.target = g.target
                      AND s.is_active AND s.address IS NOT NULL)
$$;

CREATE FUNCTION herald_unwatch_deleted_subscriptions() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  gone jsonb := (SELECT jsonb_agg(jsonb_build_array(customer_id, blockchain, network, target))
                 FROM deleted WHERE is_active AND address IS NOT NULL);
BEGIN
  IF gone IS NOT NULL THEN PERFORM herald_unwatch_unsubscribed(gone); END IF;
  RETURN NULL;
END $$;

CREATE FUNCTION herald_unwatch_deactivated_subscriptions() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  gone jsonb := (SELECT jsonb_agg(jsonb_build_array(n.customer_id, n.blockchain, n.network, n.target))
                 FROM before_update o JOIN after_update n ON n.id = o.id
                 WHERE o.is_active AND NOT n.is_active AND n.address IS NOT NULL);
BEGIN
  IF gone IS NOT NULL THEN PERFORM herald_unwatch_unsubscribed(gone); END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER subscriptions_unwatch_deleted AFTER DELETE ON subscriptions
  REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION herald_unwatch_deleted_subscriptions();
CREATE TRIGGER subscriptions_unwatch_deactivated AFTER UPDATE ON subscriptions
  REFERENCING OLD TABLE AS before_update NEW TABLE AS after_update FOR EACH STATEMENT EXECUTE FUNCTION herald_unwatch_deactivated_subscriptions();
