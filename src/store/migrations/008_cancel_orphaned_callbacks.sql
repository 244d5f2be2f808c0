-- Before resend refused callbacks of deleted subscriptions, it could put one back to pending; workers
-- only claim callbacks of existing subscriptions, so such a row stayed due for ever (and in the queue
-- gauges). Cancel them as the deletion would have.
UPDATE callbacks c SET status = 'cancelled', outcome = 'subscription_deleted', finished_at = now()
WHERE c.status = 'pending' AND NOT EXISTS (SELECT 1 FROM subscriptions s WHERE s.id = c.subscription_id);
