-- Delivery isolation (docs/concepts/delivery.md).
--
-- Claims reach each destination's due callbacks through (destination, next_attempt_at): a destination the
-- worker skips (its connections are full) or that is parked costs a claim one index probe, however many
-- callbacks wait for it. The index on next_attempt_at alone made every claim walk past the due rows of
-- the destinations it skipped: the whole backlog of a receiver that is down.
CREATE INDEX callbacks_due_by_destination ON callbacks (destination, next_attempt_at) WHERE status = 'pending';
DROP INDEX callbacks_due;

-- A destination that cannot be reached (timeouts, refused or reset connections, TLS, DNS failures)
-- three times in a row is parked: one row, with the callback that probes it and when. Until then no callback of it is claimed;
-- then only the probe is, and its outcome parks the destination again (at the probe's next retry) or
-- lets every due callback of it go. The probe follows its own retry schedule exactly, so a destination
-- that stays down exhausts it and deactivates its subscriptions as the contract says; the other
-- callbacks keep their due times and are sent after the destination answers again, never earlier.
CREATE TABLE destination_parking (
  destination text PRIMARY KEY,
  parked_until timestamptz NOT NULL,
  probe_callback_id uuid,
  parked_at timestamptz NOT NULL,
  -- Unreachable outcomes in a row (PARK_AFTER_FAILURES of them park it; src/store/callbacks.ts).
  failures integer NOT NULL DEFAULT 1,
  last_error text
);
