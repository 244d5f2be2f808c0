-- Secrets at rest (src/store/secret-box.ts): a stored callback secret starting with 'enc:v1:' is
-- encrypted, one starting with 'raw:' is escaped. A secret a customer chose that happens to start
-- with either is escaped, so that it keeps its meaning.
UPDATE subscriptions SET callback_secret_key = 'raw:' || callback_secret_key
  WHERE callback_secret_key LIKE 'enc:%' OR callback_secret_key LIKE 'raw:%';
UPDATE subscriptions SET previous_callback_secret_key = 'raw:' || previous_callback_secret_key
  WHERE previous_callback_secret_key LIKE 'enc:%' OR previous_callback_secret_key LIKE 'raw:%';
