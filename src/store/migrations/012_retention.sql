-- Retention (docs/operations/retention.md): the pruner finds finished callbacks older than their status's window
-- by (status, finished_at), oldest first, without reading the pending ones.
CREATE INDEX callbacks_finished ON callbacks (status, finished_at) WHERE status <> 'pending';
-- The pruner keeps a callback still recorded under a block of a chain's window (a reorganisation may
-- need it); this finds that record by the callback's key instead of reading the whole table.
CREATE INDEX chain_block_callbacks_key ON chain_block_callbacks (subscription_id, idempotency_key);
