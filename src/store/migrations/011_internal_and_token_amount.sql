-- docs/reference/api.md#tokens-transfers-for-specific-amount: CONFIRMED_TOKENS_TRANSACTION_FOR_CERTAIN_AMOUNT_OR_HIGHER subscriptions name
-- the token contract as the customer spelled it (the response echoes it); its normalised form is the
-- row's target, what matching and the duplicate check compare. ADDRESS_INTERNAL_TRANSACTION_CONFIRMED
-- (docs/reference/api.md#address-internal-transactions-confirmed) needs no new column: address, target and receive_callback_on as the token address event.
ALTER TABLE subscriptions ADD COLUMN contract_address text;
