-- The plan cap checked inside the one statement that inserts a group of creates (docs/design/how-it-works.md,
-- "Duplicates and caps are race-free"): the statement takes the customer's cap lock and counts its active subscriptions itself, so
-- the lock is held for that statement alone, not for a transaction of several round trips.
--
-- A statement's own snapshot is taken before it waits for the lock, so it would not see rows that a
-- create holding the lock committed meanwhile. A VOLATILE function takes a fresh snapshot for each
-- query it runs (in READ COMMITTED): the count below, run after the lock is granted, sees every
-- create that held the lock before (declared STABLE, it would count in the statement's snapshot: two
-- writers then made 48 subscriptions under a cap of 25 in test/grouped-creates.test.ts). Same lock as
-- lockActiveCap (src/store/subscriptions.ts): key space 2, the customer id; the other paths that add
-- active subscriptions (activate, bulk, backfilled create) take it too. Deletes and deactivations only lower the count: they need no lock.
CREATE FUNCTION herald_active_under_cap_lock(customer bigint) RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(2, customer::int);
  RETURN (SELECT coalesce(sum(active), 0) FROM subscription_counts WHERE customer_id = customer);
END $$;
