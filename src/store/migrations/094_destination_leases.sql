-- Claims lease the destination, not each callback (docs/concepts/delivery.md, "What this costs").
--
-- Before, a claim moved each callback's next_attempt_at on by the lease: a new row version with an entry in
-- every index of the outbox that holds a pending row (five), for every callback sent, as much PostgreSQL work
-- as the recording of its outcome. Now a claim takes a destination's lease (one row per destination, written
-- once per claim that takes callbacks of it) and reads that destination's due callbacks without writing them;
-- only the holder claims a destination's callbacks until its lease ends, and it leaves out those it has on
-- their way itself (in its memory, until their outcomes are recorded). A worker that dies leaves its
-- destinations leased for the lease's length; its callbacks in flight are then due as they were, and the next
-- holder sends them again with the same idempotency key (at least once, as before).
CREATE TABLE destination_leases (
  destination text PRIMARY KEY,
  -- The delivery worker holding it: a random id per worker process.
  holder uuid NOT NULL,
  leased_until timestamptz NOT NULL
);
