-- Block events (docs/reference/api.md#block-height-reached, #block-mined and #reverted-block): BLOCK_HEIGHT_REACHED subscriptions name the height
-- they wait for (the request's blockHeightReached); BLOCK_MINED and BLOCK_REVERTED have no target.
ALTER TABLE subscriptions ADD COLUMN block_height bigint CHECK (block_height >= 0);
