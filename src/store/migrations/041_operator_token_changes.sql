-- Operator tokens found unknown are remembered briefly by the API (src/services/access.ts), as unknown
-- API keys are: every change to operator_tokens is announced, so a token made by
-- `herald operator-tokens create` works at once in every process.
CREATE TRIGGER operator_tokens_changed AFTER INSERT OR UPDATE OR DELETE ON operator_tokens FOR EACH ROW EXECUTE FUNCTION herald_announce_change();
