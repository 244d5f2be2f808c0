-- Pull-only subscriptions (docs/concepts/event-stream.md#pull-only-subscriptions): created with
-- pullOnly: true, they have no callback URL (NULL, with its host) and their events are read from the
-- event stream only. Dropping NOT NULL changes the catalogue only, no table is rewritten.
ALTER TABLE subscriptions ALTER COLUMN callback_url DROP NOT NULL, ALTER COLUMN callback_host DROP NOT NULL;
ALTER TABLE pending_events ALTER COLUMN callback_url DROP NOT NULL;

-- Their callbacks are the stream's rows (migration 050) and nothing else: written already finished,
-- cancelled with outcome 'pull_only' (a reorganisation makes that 'reorganised', the chain coming back
-- makes it 'pull_only' again), so that delivery, recovery, replay and the queue figures, which read
-- pending, failed and delivered callbacks, never see them. No URL, no destination.
ALTER TABLE callbacks ALTER COLUMN callback_url DROP NOT NULL, ALTER COLUMN destination DROP NOT NULL;
-- A guard for a path that would queue one anyway: it fails instead of leaving a row no worker can send.
-- NOT VALID: checked on every insert and update from now on, without a scan of the rows already there
-- (all of which have a URL).
ALTER TABLE callbacks ADD CONSTRAINT callbacks_pull_only_never_pending CHECK (callback_url IS NOT NULL OR status <> 'pending') NOT VALID;
