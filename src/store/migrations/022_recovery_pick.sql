-- Recovery jobs (store/recoveries.ts) pick a customer's failed (and, asked for, cancelled) callbacks of a
-- time window in creation order, a chunk at a time from a cursor. Without an index for it each chunk
-- scanned the whole outbox. Failed and cancelled callbacks are a small part of it, so the index is small.
CREATE INDEX callbacks_recoverable ON callbacks (customer_id, created_at, id) WHERE status IN ('failed', 'cancelled');
