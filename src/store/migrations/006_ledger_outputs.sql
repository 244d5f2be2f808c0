-- The wallet ledger's own record of outputs paid to watched addresses on the UTXO chains. An input that
-- spends a recorded output is a spending of that address, whatever the node tells about inputs (getblock
-- verbosity 2 has no input addresses or amounts). Filled by applied blocks (outputs to addresses watched
-- at the time) and by opening balances (the address's unspent outputs when its opening is read).
CREATE TABLE ledger_outputs (
  blockchain text NOT NULL,
  network text NOT NULL,
  outpoint text NOT NULL,
  address text NOT NULL,
  value numeric(78, 0) NOT NULL,
  block_height bigint NOT NULL,
  -- Recorded from an opening balance: kept when a reorganisation rewinds blocks (it was read from the
  -- node's UTXO set, not from an applied block).
  from_opening boolean NOT NULL DEFAULT false,
  PRIMARY KEY (blockchain, network, outpoint)
);
CREATE INDEX ledger_outputs_by_block ON ledger_outputs (blockchain, network, block_height) WHERE NOT from_opening;

-- The coins of an asset record say whether their balance includes the opening balance read from the node
-- ('read'), not yet ('pending': watchedFromBlock not yet confirmed), or cannot ('unavailable': the node
-- cannot tell, e.g. no scantxoutset or a pruned state; the balance then counts from watchedFromBlock only).
CREATE OR REPLACE FUNCTION herald_wallet_assets_json(wallet uuid) RETURNS text LANGUAGE sql STABLE AS $$
  SELECT json_build_object(
    'walletId', w.id,
    'walletName', w.name,
    'coins', coalesce((
      SELECT json_agg(json_build_object(
          'blockchain', c.blockchain, 'network', c.network, 'unit', u.unit,
          'confirmedBalance', herald_format_units(c.balance, u.decimals),
          'totalReceived', herald_format_units(c.received, u.decimals),
          'totalSpent', herald_format_units(c.spent, u.decimals),
          'openingBalance', c.opening) ORDER BY c.blockchain, c.network)
      FROM (SELECT blockchain, network, sum(confirmed_balance) AS balance, sum(total_received) AS received, sum(total_spent) AS spent,
                   CASE WHEN bool_or(opening_state = 'unavailable') THEN 'unavailable'
                        WHEN bool_or(opening_state = 'pending') THEN 'pending' ELSE 'read' END AS opening
            FROM wallet_addresses WHERE wallet_id = w.id GROUP BY blockchain, network) c
      JOIN chain_units u USING (blockchain)), '[]'),
    'fungibleTokens', coalesce((
      SELECT json_agg(json_build_object(
          'amount', herald_format_units(t.amount, t.decimals), 'blockchain', t.blockchain, 'network', t.network,
          'identifier', t.identifier, 'symbol', t.symbol, 'type', t.token_type) ORDER BY t.blockchain, t.network, t.identifier)
      FROM (SELECT a.blockchain, a.network, b.identifier, min(b.symbol) AS symbol, min(b.token_type) AS token_type,
                   min(b.decimals) AS decimals, sum(b.amount) AS amount
            FROM wallet_addresses a JOIN wallet_token_balances b ON b.wallet_address_id = a.id
            WHERE a.wallet_id = w.id GROUP BY a.blockchain, a.network, b.identifier) t), '[]'),
    'nonFungibleTokens', coalesce((
      SELECT json_agg(json_build_object(
          'blockchain', n.blockchain, 'network', n.network, 'identifier', n.identifier, 'symbol', n.symbol,
          'tokenId', n.token_id, 'type', n.token_type) ORDER BY n.blockchain, n.network, n.identifier, n.token_id)
      FROM (SELECT DISTINCT a.blockchain, a.network, n.identifier, n.symbol, n.token_id, n.token_type
            FROM wallet_addresses a JOIN wallet_nfts n ON n.wallet_address_id = a.id WHERE a.wallet_id = w.id) n), '[]')
  )::text
  FROM wallets w WHERE w.id = wallet
$$;

-- The records built before this migration have no openingBalance: rebuild them once.
UPDATE wallets SET assets_json = herald_wallet_assets_json(id);
