-- Retention (docs/operations/retention.md): a prune batch now deletes the callbacks it found without locking them
-- first (one write per row instead of two), waiting at most a moment (lock_timeout, set by the batch)
-- for a row another transaction holds before it runs again the old way, skipping held rows.
--
-- That short limit is for the callbacks alone. The batch's statement trigger then decrements the
-- counters of the callback log (migration 018), rows the chain followers' inserts also update and hold
-- until their transaction commits: waiting for those is normal and short, and giving up there would
-- throw the batch's work away. So the trigger waits for them without a limit (lock_timeout 0 for its
-- own statements), and puts the batch's limit back afterwards.
CREATE OR REPLACE FUNCTION herald_count_deleted_callbacks() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  emptied uuid[];
  caller_lock_timeout text := current_setting('lock_timeout');
BEGIN
  PERFORM set_config('lock_timeout', '0', true);
  WITH counted AS (
    UPDATE callback_counts k SET callbacks = k.callbacks - d.n
    FROM (SELECT subscription_id, count(*) AS n FROM deleted GROUP BY subscription_id) d
    WHERE k.subscription_id = d.subscription_id
    RETURNING k.subscription_id, k.callbacks)
  SELECT array_agg(subscription_id) INTO emptied FROM counted WHERE callbacks = 0;
  IF emptied IS NOT NULL THEN
    DELETE FROM callback_counts k WHERE k.subscription_id = ANY (emptied) AND k.callbacks = 0;
  END IF;
  PERFORM set_config('lock_timeout', caller_lock_timeout, true);
  RETURN NULL;
END $$;
