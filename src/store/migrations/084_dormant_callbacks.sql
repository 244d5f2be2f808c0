-- An inactive subscription's pending callbacks are held out of the claim's index (docs/concepts/delivery.md,
-- "An inactive subscription's callbacks"): a paused subscription's, or one deactivated by a 410 or by
-- exhausted retries. Before this, a claim walked a destination's due callbacks in due order and skipped
-- those of inactive subscriptions one row at a time, so a large backlog of a paused subscription was
-- walked whole by every claim that reached its destination.
--
-- dormant: held for an inactive subscription. Set for a subscription's pending callbacks by its pause, and
-- by a claim for each callback it reaches whose subscription is inactive (a 410 or exhausted retries
-- deactivate in the worker's recording: the claims move the backlog out once, a share at a time); cleared
-- for every callback of the subscription by its activation, in the activation's transaction. A dormant
-- callback keeps its due time and attempts: activated, it is due as it was. Distinct from a chain hold
-- (next_attempt_at 'infinity', migration 051, store/chain-holds.ts): the two are independent, a callback can
-- be both, and each release undoes only its own.
ALTER TABLE callbacks ADD COLUMN dormant boolean NOT NULL DEFAULT false;

CREATE INDEX callbacks_due ON callbacks (destination, next_attempt_at) WHERE status = 'pending' AND NOT dormant;
DROP INDEX callbacks_due_by_destination;

-- An activation finds its subscription's dormant callbacks without reading its history.
CREATE INDEX callbacks_dormant ON callbacks (subscription_id) WHERE dormant;
