-- subscriptions_duplicates covered every active subscription, although subscriptions_no_twins already
-- indexes the active ones without allowDuplicates on the same (customer_id, duplicate_key): a row
-- created without allowDuplicates (every bulk row, most single creates) was entered in both. It now
-- covers only the active ones with allowDuplicates, so each such row is written to three indexes
-- instead of four. A twin lookup probes the two partial indexes, one for each value of
-- allow_duplicates (src/store/subscriptions.ts, ACTIVE_TWIN).
DROP INDEX subscriptions_duplicates;
CREATE INDEX subscriptions_duplicates ON subscriptions (customer_id, duplicate_key) WHERE is_active AND allow_duplicates;
