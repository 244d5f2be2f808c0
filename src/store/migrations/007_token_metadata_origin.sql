-- Omni properties: the transaction that created the property is part of the OMNI token object of every
-- callback, so the metadata cache keeps it too ('' for contract tokens, which have none here).
ALTER TABLE token_metadata ADD COLUMN created_by_transaction_id text NOT NULL DEFAULT '';
