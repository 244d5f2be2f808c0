-- The Callback Data address read's transaction counts (docs/reference/api.md#address-details): counted by the wallet ledger
-- like the totals, from the confirmed blocks after an address is watched. A ledger entry carries the
-- block's count of transactions that paid the address (incoming) and that spent from it (outgoing; a
-- transaction to itself counts here), netted per transaction as the totals are.
ALTER TABLE ledger_entries
  ADD COLUMN incoming_count integer NOT NULL DEFAULT 0,
  ADD COLUMN outgoing_count integer NOT NULL DEFAULT 0;
ALTER TABLE wallet_addresses
  ADD COLUMN incoming_transactions bigint NOT NULL DEFAULT 0,
  ADD COLUMN outgoing_transactions bigint NOT NULL DEFAULT 0;
