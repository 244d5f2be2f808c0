-- The console's first-run checklist (docs/getting-started/console.md): when a test callback of this
-- customer was last answered with a 2xx (POST .../test-callback). NULL: never.
ALTER TABLE customers ADD COLUMN test_callback_delivered_at timestamptz;
