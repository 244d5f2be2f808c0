-- Costs that do not grow with the customer (docs/design/how-it-works.md, docs/guides/bulk-import.md).

-- Subscriptions per customer and chain, all and active, kept by statement triggers in the transaction
-- of every insert, delete and (de)activation, wherever it comes from (API, bulk import, the delivery
-- worker's deactivations). The plan cap reads the active sum, list pages the total: a few rows,
-- however many subscriptions the customer has.
--
-- Several rows (slots) per customer and chain, chosen by the writing backend: concurrent creates of
-- one customer on different pool connections update different rows, so the counter adds no row lock
-- that they would queue on (one row would serialise every create of a customer until its commit).
-- Readers sum the slots: at most SLOTS rows per chain.
CREATE TABLE subscription_counts (
  customer_id bigint NOT NULL,
  blockchain text NOT NULL,
  network text NOT NULL,
  slot smallint NOT NULL,
  -- A slot's figures may go below zero (a row counted in one slot, deleted through another); the sums cannot.
  total bigint NOT NULL,
  active bigint NOT NULL,
  PRIMARY KEY (customer_id, blockchain, network, slot)
);

-- Each adds the per-(customer, chain) deltas of one statement to the slot of this backend (16 slots):
-- one grouped upsert per statement, whatever its number of rows.
CREATE FUNCTION herald_count_inserted_subscriptions() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO subscription_counts AS c (customer_id, blockchain, network, slot, total, active)
  SELECT customer_id, blockchain, network, pg_backend_pid() % 16, count(*), count(*) FILTER (WHERE is_active)
  FROM inserted GROUP BY customer_id, blockchain, network
  ON CONFLICT (customer_id, blockchain, network, slot) DO UPDATE SET total = c.total + excluded.total, active = c.active + excluded.active;
  RETURN NULL;
END $$;

CREATE FUNCTION herald_count_deleted_subscriptions() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO subscription_counts AS c (customer_id, blockchain, network, slot, total, active)
  SELECT customer_id, blockchain, network, pg_backend_pid() % 16, -count(*), -count(*) FILTER (WHERE is_active)
  FROM deleted GROUP BY customer_id, blockchain, network
  ON CONFLICT (customer_id, blockchain, network, slot) DO UPDATE SET total = c.total + excluded.total, active = c.active + excluded.active;
  RETURN NULL;
END $$;

-- An update changes only is_active among the counted columns (customer and chain never change).
CREATE FUNCTION herald_count_updated_subscriptions() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO subscription_counts AS c (customer_id, blockchain, network, slot, total, active)
  SELECT n.customer_id, n.blockchain, n.network, pg_backend_pid() % 16, 0, sum(CASE WHEN n.is_active THEN 1 ELSE -1 END)
  FROM before_update o JOIN after_update n ON n.id = o.id
  WHERE o.is_active IS DISTINCT FROM n.is_active
  GROUP BY n.customer_id, n.blockchain, n.network
  ON CONFLICT (customer_id, blockchain, network, slot) DO UPDATE SET active = c.active + excluded.active;
  RETURN NULL;
END $$;

CREATE TRIGGER subscriptions_counted_insert AFTER INSERT ON subscriptions
  REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION herald_count_inserted_subscriptions();
CREATE TRIGGER subscriptions_counted_delete AFTER DELETE ON subscriptions
  REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION herald_count_deleted_subscriptions();
CREATE TRIGGER subscriptions_counted_update AFTER UPDATE ON subscriptions
  REFERENCING OLD TABLE AS before_update NEW TABLE AS after_update FOR EACH STATEMENT EXECUTE FUNCTION herald_count_updated_subscriptions();

-- The backfill. The triggers above hold this transaction's lock on subscriptions until it commits:
-- no write can fall between the count and the first trigger run.
INSERT INTO subscription_counts (customer_id, blockchain, network, slot, total, active)
SELECT customer_id, blockchain, network, 0, count(*), count(*) FILTER (WHERE is_active)
FROM subscriptions GROUP BY customer_id, blockchain, network;

-- Announcing inserts: a statement that inserts many subscriptions of one customer and chain (a bulk
-- create) is announced once, as the range of their created_at (clock_timestamp() per row, so the
-- rows of one statement span a short range), and the ingest processes read that range with one query
-- on subscriptions_listing. A few rows are still announced one by one, as before. Rows of other
-- transactions inside the range are read too: harmless, each row read is applied as it now is.
DROP TRIGGER subscriptions_announced ON subscriptions;
CREATE TRIGGER subscriptions_announced AFTER DELETE OR UPDATE OF is_active ON subscriptions
  FOR EACH ROW EXECUTE FUNCTION herald_announce_subscription();

CREATE FUNCTION herald_announce_inserted_subscriptions() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  g record;
BEGIN
  FOR g IN SELECT customer_id, blockchain, network, count(*) AS n, min(created_at) AS first, max(created_at) AS last
           FROM inserted GROUP BY customer_id, blockchain, network LOOP
    IF g.n > 8 THEN
      PERFORM pg_notify('herald_subscriptions', json_build_object(
        'op', 'INSERT_RANGE', 'blockchain', g.blockchain, 'network', g.network, 'customerId', g.customer_id::text,
        'from', g.first::text, 'to', g.last::text, 'count', g.n)::text);
    ELSE
      PERFORM pg_notify('herald_subscriptions', json_build_object(
        'id', s.id, 'blockchain', s.blockchain, 'network', s.network, 'op', 'INSERT')::text)
      FROM inserted s WHERE s.customer_id = g.customer_id AND s.blockchain = g.blockchain AND s.network = g.network;
    END IF;
  END LOOP;
  RETURN NULL;
END $$;

CREATE TRIGGER subscriptions_announced_insert AFTER INSERT ON subscriptions
  REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION herald_announce_inserted_subscriptions();

-- Callbacks per subscription, for the total of the callback log (GET .../subscriptions/{id}/callbacks),
-- kept by statement triggers on the outbox's inserts (chain following, one upsert per subscription
-- matched in the statement) and deletes (retention). Only the follower of the subscription's chain and
-- the retention pass write a given row, so it is not a hot row. Rows that reach zero are removed.
CREATE TABLE callback_counts (
  subscription_id uuid PRIMARY KEY,
  callbacks bigint NOT NULL CHECK (callbacks >= 0)
);

CREATE FUNCTION herald_count_inserted_callbacks() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO callback_counts AS k (subscription_id, callbacks)
  SELECT subscription_id, count(*) FROM inserted GROUP BY subscription_id
  ON CONFLICT (subscription_id) DO UPDATE SET callbacks = k.callbacks + excluded.callbacks;
  RETURN NULL;
END $$;

CREATE FUNCTION herald_count_deleted_callbacks() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE callback_counts k SET callbacks = k.callbacks - d.n
  FROM (SELECT subscription_id, count(*) AS n FROM deleted GROUP BY subscription_id) d
  WHERE k.subscription_id = d.subscription_id;
  DELETE FROM callback_counts k USING (SELECT DISTINCT subscription_id FROM deleted) d
  WHERE k.subscription_id = d.subscription_id AND k.callbacks = 0;
  RETURN NULL;
END $$;

CREATE TRIGGER callbacks_counted_insert AFTER INSERT ON callbacks
  REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION herald_count_inserted_callbacks();
CREATE TRIGGER callbacks_counted_delete AFTER DELETE ON callbacks
  REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION herald_count_deleted_callbacks();

INSERT INTO callback_counts (subscription_id, callbacks)
SELECT subscription_id, count(*) FROM callbacks GROUP BY subscription_id;
