-- Operator alerts (docs/operations/alerts.md). Every process of the delivery role runs the monitor, so
-- what has been alerted lives here, not in a process: a transition is claimed by one UPDATE that only
-- one process can win, and the alert it produces is written to the outbox in the same transaction, so a
-- crash between deciding and sending neither loses the alert nor makes a second one.

-- One row per watched subject ('chain/<blockchain>/<network>', 'node/<blockchain>/<network>/<node>').
CREATE TABLE alert_state (
  subject text PRIMARY KEY,
  -- The state last alerted (or, for a subject first seen healthy, recorded without an alert);
  -- 'unknown' until a subject first seen unhealthy has held that state long enough to be alerted.
  state text NOT NULL,
  -- What the monitors saw last, and since when without a break: a state is alerted only once it has
  -- held for alerts.holdSeconds (a flapping subject gives no alert at all until it settles).
  observed text NOT NULL,
  observed_since timestamptz NOT NULL,
  changed_at timestamptz NOT NULL
);

-- Events that are counted, not states: subscriptions deactivated and callbacks whose retries ran out,
-- per customer, destination (scheme://host:port) and reason. The delivery worker adds to `count` in the
-- transaction that records the outcome; the monitor turns a non-zero count into one alert at most every
-- alerts.groupSeconds and sets it back to zero in the same transaction.
CREATE TABLE alert_tallies (
  subject text PRIMARY KEY,
  kind text NOT NULL,
  customer_id bigint NOT NULL,
  destination text NOT NULL,
  reason text,
  count bigint NOT NULL,
  first_at timestamptz NOT NULL,
  last_at timestamptz NOT NULL,
  alerted_at timestamptz
);
CREATE INDEX alert_tallies_counted ON alert_tallies (alerted_at) WHERE count > 0;

-- Alerts to POST to alerts.webhookUrl; `id` is the webhook-id of every attempt (receivers dedupe on it).
CREATE TABLE alert_outbox (
  id text PRIMARY KEY,
  kind text NOT NULL,
  subject text NOT NULL,
  -- The exact JSON sent, fixed when the alert is made, so every attempt sends the same bytes.
  body text NOT NULL,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sent', 'failed')),
  attempts integer NOT NULL DEFAULT 0,
  -- Due time; a claim moves it forward by a lease, so a sender that dies leaves it due again.
  next_attempt_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL,
  finished_at timestamptz,
  last_error text
);
CREATE INDEX alert_outbox_due ON alert_outbox (next_attempt_at) WHERE status = 'pending';
CREATE INDEX alert_outbox_finished ON alert_outbox (finished_at) WHERE status <> 'pending';
