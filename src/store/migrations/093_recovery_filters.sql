-- Recovery of the Deliveries page's filtered failures (docs/guides/recover-and-replay.md#recovering-callbacks):
-- a job may be scoped by the subscriptions' chain (blockchain, network) as the delivery log filters, and
-- need not name a subscription or a callbackUrl (every active subscription of the customer). At most
-- one of the two, as before.
ALTER TABLE recoveries ADD COLUMN blockchain text;
ALTER TABLE recoveries ADD COLUMN network text;
ALTER TABLE recoveries DROP CONSTRAINT recoveries_check;
ALTER TABLE recoveries ADD CONSTRAINT recoveries_one_scope CHECK (subscription_id IS NULL OR callback_url IS NULL);
-- Started by POST /blockchain-events/callbacks/recover: a customer has at most a few of these unfinished at
-- once (services/recoveries.ts MAX_UNFINISHED_RECOVERIES_PER_CUSTOMER); a subscription's recover and
-- activate's recoverSince are not counted.
ALTER TABLE recoveries ADD COLUMN filtered boolean NOT NULL DEFAULT false;
