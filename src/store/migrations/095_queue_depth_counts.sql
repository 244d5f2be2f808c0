-- The queue gauges' counts of the destinations with many callbacks due (docs/reference/metrics.md, "How
-- exact the queue gauges are"; src/store/queue-stats.ts).
--
-- Before, each scrape of /metrics (and each view of the console's delivery page) counted every due
-- callback: 340-627 ms of PostgreSQL a scrape beside 1,000,000 callbacks due for one receiver that is down,
-- in each process scraped. Now a scrape counts each destination's due callbacks up to a cap, and a
-- destination at the cap is counted whole by a pass that runs in one process at a time, at most once a
-- minute and at most once per 200 times its own duration; its figures are kept here, one row per
-- destination of the last pass, and read by every process's scrapes until the next pass.
CREATE TABLE queue_depth_counts (
  destination text PRIMARY KEY,
  -- Its callbacks due (pending, not dormant, next_attempt_at at or before counted_at).
  due bigint NOT NULL,
  -- The pass's time (the same on every row of a pass), and how long the whole pass took.
  counted_at timestamptz NOT NULL,
  pass_ms integer NOT NULL
);
