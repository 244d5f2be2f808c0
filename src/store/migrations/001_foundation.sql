-- Tenants, keys, credits, subscriptions, callback domains, wallets and their ledger rows.

CREATE TABLE customers (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name text NOT NULL UNIQUE,
  mainnet_allowed boolean NOT NULL,
  -- NULL: no cap on active subscriptions.
  max_active_subscriptions integer CHECK (max_active_subscriptions >= 0),
  requests_per_second integer NOT NULL CHECK (requests_per_second > 0),
  -- Debited with `credits >= cost` in the same statement, so it can never go below zero.
  credits bigint NOT NULL CHECK (credits >= 0),
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  customer_id bigint NOT NULL REFERENCES customers (id) ON DELETE CASCADE,
  -- SHA-256 of the key: keys are 32 random bytes, so a fast hash is enough and the clear key is never stored.
  key_hash bytea NOT NULL UNIQUE,
  -- The first characters of the key, shown in listings so an operator can tell keys apart.
  key_prefix text NOT NULL,
  label text,
  -- NULL: every endpoint. Otherwise the endpoint names this key may call.
  allowed_endpoints text[],
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz
);

CREATE TABLE subscriptions (
  id uuid PRIMARY KEY,
  -- No foreign key on purpose: every insert would take a KEY SHARE lock on the one customer row that
  -- all of that customer's concurrent creates and debits also touch (multixact traffic on the hottest
  -- row). Customers are never deleted while they have subscriptions; nothing else needs the check.
  customer_id bigint NOT NULL,
  event_type text NOT NULL,
  blockchain text NOT NULL,
  network text NOT NULL,
  -- As the client spelled it (echoed back) and normalised (matched and compared for duplicates).
  transaction_id text,
  address text,
  target text,
  receive_callback_on integer,
  amount_higher_than numeric(78, 0),
  callback_url text NOT NULL,
  callback_host text NOT NULL,
  callback_secret_key text,
  allow_duplicates boolean NOT NULL,
  -- Hash of (event type, blockchain, network, target, threshold, callbackUrl): the duplicate identity.
  duplicate_key bytea NOT NULL,
  is_active boolean NOT NULL DEFAULT true,
  deactivation_reasons jsonb NOT NULL DEFAULT '[]',
  api_version text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX subscriptions_listing ON subscriptions (customer_id, blockchain, network, created_at, id);
-- Also serves counting a customer's active subscriptions (plan cap).
CREATE INDEX subscriptions_duplicates ON subscriptions (customer_id, duplicate_key) WHERE is_active;
-- Two concurrent identical creates (both without allowDuplicates) cannot both succeed.
CREATE UNIQUE INDEX subscriptions_no_twins ON subscriptions (customer_id, duplicate_key) WHERE is_active AND NOT allow_duplicates;

CREATE TABLE callback_domains (
  customer_id bigint NOT NULL REFERENCES customers (id) ON DELETE CASCADE,
  domain text NOT NULL,
  verification_token text NOT NULL,
  verified_at timestamptz,
  verified_by text,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  PRIMARY KEY (customer_id, domain)
);

CREATE TABLE wallets (
  id uuid PRIMARY KEY,
  customer_id bigint NOT NULL REFERENCES customers (id) ON DELETE CASCADE,
  name text NOT NULL,
  -- The wallet's asset record of the contract as JSON text, kept current by the triggers below in the
  -- same transaction as every change to its addresses and ledger rows: listing a page of wallets is
  -- then a read of 50 short texts, not an aggregation.
  assets_json text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp()
  -- Room on each page for the new versions of rewritten asset records (HOT updates: no new index entries).
) WITH (fillfactor = 50);
CREATE INDEX wallets_listing ON wallets (customer_id, created_at, id);

-- Wallets per customer, kept by a trigger: every all-assets page reports the total, and counting a
-- customer's wallets each time would cost in proportion to their number.
CREATE TABLE wallet_counts (
  customer_id bigint PRIMARY KEY,
  wallets integer NOT NULL CHECK (wallets >= 0)
);

CREATE FUNCTION herald_count_wallets() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO wallet_counts AS c (customer_id, wallets)
  VALUES (coalesce(NEW.customer_id, OLD.customer_id), CASE WHEN TG_OP = 'INSERT' THEN 1 ELSE 0 END)
  ON CONFLICT (customer_id) DO UPDATE SET wallets = c.wallets + CASE WHEN TG_OP = 'INSERT' THEN 1 ELSE -1 END;
  RETURN NULL;
END $$;

CREATE TRIGGER wallets_counted AFTER INSERT OR DELETE ON wallets FOR EACH ROW EXECUTE FUNCTION herald_count_wallets();

-- One watched address of a wallet, with the coin ledger that chain following keeps (base units).
CREATE TABLE wallet_addresses (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  wallet_id uuid NOT NULL REFERENCES wallets (id) ON DELETE CASCADE,
  blockchain text NOT NULL,
  network text NOT NULL,
  address text NOT NULL,
  normalized_address text NOT NULL,
  watched_from_block bigint,
  confirmed_balance numeric(78, 0) NOT NULL DEFAULT 0,
  total_received numeric(78, 0) NOT NULL DEFAULT 0,
  total_spent numeric(78, 0) NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  UNIQUE (wallet_id, blockchain, network, normalized_address)
) WITH (fillfactor = 70);
CREATE INDEX wallet_addresses_by_chain ON wallet_addresses (blockchain, network, normalized_address);

-- Fungible token balance of a watched address, per contract (EVM, Tron) or Omni property id.
CREATE TABLE wallet_token_balances (
  wallet_address_id bigint NOT NULL REFERENCES wallet_addresses (id) ON DELETE CASCADE,
  identifier text NOT NULL,
  symbol text NOT NULL,
  token_type text NOT NULL,
  decimals integer NOT NULL,
  amount numeric(78, 0) NOT NULL,
  PRIMARY KEY (wallet_address_id, identifier)
);

-- Non-fungible tokens a watched address holds now.
CREATE TABLE wallet_nfts (
  wallet_address_id bigint NOT NULL REFERENCES wallet_addresses (id) ON DELETE CASCADE,
  identifier text NOT NULL,
  token_id text NOT NULL,
  symbol text NOT NULL,
  token_type text NOT NULL,
  PRIMARY KEY (wallet_address_id, identifier, token_id)
);

-- Base units (an integer) to a decimal string without floating point or rounding:
-- (1500000000000000000, 18) -> '1.5'. The API formats amounts with this so a page of wallets is built
-- as JSON inside one statement; it agrees with formatUnits() in src/domain/amounts.ts (tested). Text
-- operations only, in one expression with no FROM and not STRICT (a STRICT function with CASE is
-- never inlined), so the planner inlines it instead of calling it: cheap per call.
CREATE FUNCTION herald_format_units(value numeric, decimals integer) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN value < 0 THEN '-' ELSE '' END || CASE
    WHEN decimals = 0 THEN abs(value)::text
    WHEN length(abs(value)::text) > decimals THEN
      left(abs(value)::text, length(abs(value)::text) - decimals) || coalesce('.' || nullif(rtrim(right(abs(value)::text, decimals), '0'), ''), '')
    ELSE '0' || coalesce('.' || nullif(rtrim(lpad(abs(value)::text, decimals, '0'), '0'), ''), '')
  END
$$;

-- Native unit and decimals per blockchain, copied at every start from src/domain/chains.ts (the one
-- place that knows them), for the asset records built below.
CREATE TABLE chain_units (
  blockchain text PRIMARY KEY,
  unit text NOT NULL,
  decimals integer NOT NULL
);

-- The asset record of one wallet: coins summed per (blockchain, network) over its addresses, fungible
-- tokens summed per contract or property, NFTs held; amounts formatted exactly.
CREATE FUNCTION herald_wallet_assets_json(wallet uuid) RETURNS text LANGUAGE sql STABLE AS $$
  SELECT json_build_object(
    'walletId', w.id,
    'walletName', w.name,
    'coins', coalesce((
      SELECT json_agg(json_build_object(
          'blockchain', c.blockchain, 'network', c.network, 'unit', u.unit,
          'confirmedBalance', herald_format_units(c.balance, u.decimals),
          'totalReceived', herald_format_units(c.received, u.decimals),
          'totalSpent', herald_format_units(c.spent, u.decimals)) ORDER BY c.blockchain, c.network)
      FROM (SELECT blockchain, network, sum(confirmed_balance) AS balance, sum(total_received) AS received, sum(total_spent) AS spent
            FROM wallet_addresses WHERE wallet_id = w.id GROUP BY blockchain, network) c
      JOIN chain_units u USING (blockchain)), '[]'),
    'fungibleTokens', coalesce((
      SELECT json_agg(json_build_object(
          'amount', herald_format_units(t.amount, t.decimals), 'blockchain', t.blockchain, 'network', t.network,
          'identifier', t.identifier, 'symbol', t.symbol, 'type', t.token_type) ORDER BY t.blockchain, t.network, t.identifier)
      FROM (SELECT a.blockchain, a.network, b.identifier, min(b.symbol) AS symbol, min(b.token_type) AS token_type,
                   min(b.decimals) AS decimals, sum(b.amount) AS amount
            FROM wallet_addresses a JOIN wallet_token_balances b ON b.wallet_address_id = a.id
            WHERE a.wallet_id = w.id GROUP BY a.blockchain, a.network, b.identifier) t), '[]'),
    'nonFungibleTokens', coalesce((
      SELECT json_agg(json_build_object(
          'blockchain', n.blockchain, 'network', n.network, 'identifier', n.identifier, 'symbol', n.symbol,
          'tokenId', n.token_id, 'type', n.token_type) ORDER BY n.blockchain, n.network, n.identifier, n.token_id)
      FROM (SELECT DISTINCT a.blockchain, a.network, n.identifier, n.symbol, n.token_id, n.token_type
            FROM wallet_addresses a JOIN wallet_nfts n ON n.wallet_address_id = a.id WHERE a.wallet_id = w.id) n), '[]')
  )::text
  FROM wallets w WHERE w.id = wallet
$$;

-- Statement-level triggers: the wallets touched by a statement on addresses or ledger rows get their
-- asset record rebuilt once, whatever the number of rows the statement changed.
CREATE FUNCTION herald_rebuild_wallet_assets(wallet_ids uuid[]) RETURNS void LANGUAGE sql AS $$
  UPDATE wallets SET assets_json = herald_wallet_assets_json(id) WHERE id = ANY (wallet_ids)
$$;

CREATE FUNCTION herald_wallet_addresses_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  ids uuid[] := '{}';
BEGIN
  IF TG_OP IN ('INSERT', 'UPDATE') THEN ids := ids || ARRAY(SELECT DISTINCT wallet_id FROM new_rows); END IF;
  IF TG_OP IN ('DELETE', 'UPDATE') THEN ids := ids || ARRAY(SELECT DISTINCT wallet_id FROM old_rows); END IF;
  PERFORM herald_rebuild_wallet_assets(ids);
  RETURN NULL;
END $$;

CREATE FUNCTION herald_wallet_holdings_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  address_ids bigint[] := '{}';
BEGIN
  IF TG_OP IN ('INSERT', 'UPDATE') THEN address_ids := address_ids || ARRAY(SELECT wallet_address_id FROM new_rows); END IF;
  IF TG_OP IN ('DELETE', 'UPDATE') THEN address_ids := address_ids || ARRAY(SELECT wallet_address_id FROM old_rows); END IF;
  PERFORM herald_rebuild_wallet_assets(ARRAY(SELECT DISTINCT wallet_id FROM wallet_addresses WHERE id = ANY (address_ids)));
  RETURN NULL;
END $$;

CREATE TRIGGER wallet_addresses_inserted AFTER INSERT ON wallet_addresses REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION herald_wallet_addresses_changed();
CREATE TRIGGER wallet_addresses_updated AFTER UPDATE ON wallet_addresses REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION herald_wallet_addresses_changed();
CREATE TRIGGER wallet_addresses_deleted AFTER DELETE ON wallet_addresses REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION herald_wallet_addresses_changed();
CREATE TRIGGER wallet_token_balances_inserted AFTER INSERT ON wallet_token_balances REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION herald_wallet_holdings_changed();
CREATE TRIGGER wallet_token_balances_updated AFTER UPDATE ON wallet_token_balances REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION herald_wallet_holdings_changed();
CREATE TRIGGER wallet_token_balances_deleted AFTER DELETE ON wallet_token_balances REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION herald_wallet_holdings_changed();
CREATE TRIGGER wallet_nfts_inserted AFTER INSERT ON wallet_nfts REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION herald_wallet_holdings_changed();
CREATE TRIGGER wallet_nfts_updated AFTER UPDATE ON wallet_nfts REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION herald_wallet_holdings_changed();
CREATE TRIGGER wallet_nfts_deleted AFTER DELETE ON wallet_nfts REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION herald_wallet_holdings_changed();

-- Every change to keys, plans or callback domains is announced, so that processes caching them (the
-- API's key and domain caches) forget the changed customer at once, whoever made the change.
CREATE FUNCTION herald_announce_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  changed jsonb := to_jsonb(CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END);
BEGIN
  PERFORM pg_notify('herald_changes', json_build_object(
    'table', TG_TABLE_NAME,
    'customerId', coalesce(changed->>'customer_id', changed->>'id'))::text);
  RETURN NULL;
END $$;

CREATE TRIGGER api_keys_changed AFTER INSERT OR UPDATE OR DELETE ON api_keys FOR EACH ROW EXECUTE FUNCTION herald_announce_change();
CREATE TRIGGER callback_domains_changed AFTER INSERT OR UPDATE OR DELETE ON callback_domains FOR EACH ROW EXECUTE FUNCTION herald_announce_change();
-- Credits change on nearly every request and are never cached: only plan columns are watched.
CREATE TRIGGER customers_plan_changed AFTER UPDATE OF mainnet_allowed, max_active_subscriptions, requests_per_second OR DELETE ON customers
  FOR EACH ROW EXECUTE FUNCTION herald_announce_change();
