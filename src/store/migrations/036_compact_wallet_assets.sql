-- Asset records as compact JSON, as every other answer is: json_build_object and json_agg print
-- `"walletId" : "..."` and `}, \n {`, and the all-assets answer splices the records in as they are
-- stored. Built by concatenation instead, in the same field order; herald_json is one value's JSON text
-- (null for NULL, which would otherwise make the whole concatenation NULL).
CREATE FUNCTION herald_json(value anyelement) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT coalesce(to_json(value)::text, 'null')
$$;

CREATE OR REPLACE FUNCTION herald_wallet_assets_json(wallet uuid) RETURNS text LANGUAGE sql STABLE AS $$
  SELECT '{"walletId":' || herald_json(w.id) || ',"walletName":' || herald_json(w.name)
    || ',"coins":[' || coalesce((
      SELECT string_agg('{"blockchain":' || herald_json(c.blockchain) || ',"network":' || herald_json(c.network)
          || ',"unit":' || herald_json(u.unit)
          || ',"confirmedBalance":' || herald_json(herald_format_units(c.balance, u.decimals))
          || ',"totalReceived":' || herald_json(herald_format_units(c.received, u.decimals))
          || ',"totalSpent":' || herald_json(herald_format_units(c.spent, u.decimals))
          || ',"openingBalance":' || herald_json(c.opening) || '}', ',' ORDER BY c.blockchain, c.network)
      FROM (SELECT blockchain, network, sum(confirmed_balance) AS balance, sum(total_received) AS received, sum(total_spent) AS spent,
                   CASE WHEN bool_or(opening_state = 'unavailable') THEN 'unavailable'
                        WHEN bool_or(opening_state = 'pending') THEN 'pending' ELSE 'read' END AS opening
            FROM wallet_addresses WHERE wallet_id = w.id GROUP BY blockchain, network) c
      JOIN chain_units u USING (blockchain)), '')
    || '],"fungibleTokens":[' || coalesce((
      SELECT string_agg('{"amount":' || herald_json(herald_format_units(t.amount, t.decimals))
          || ',"blockchain":' || herald_json(t.blockchain) || ',"network":' || herald_json(t.network)
          || ',"identifier":' || herald_json(t.identifier) || ',"symbol":' || herald_json(t.symbol)
          || ',"type":' || herald_json(t.token_type) || '}', ',' ORDER BY t.blockchain, t.network, t.identifier)
      FROM (SELECT a.blockchain, a.network, b.identifier, min(b.symbol) AS symbol, min(b.token_type) AS token_type,
                   min(b.decimals) AS decimals, sum(b.amount) AS amount
            FROM wallet_addresses a JOIN wallet_token_balances b ON b.wallet_address_id = a.id
            WHERE a.wallet_id = w.id GROUP BY a.blockchain, a.network, b.identifier) t), '')
    || '],"nonFungibleTokens":[' || coalesce((
      SELECT string_agg('{"blockchain":' || herald_json(n.blockchain) || ',"network":' || herald_json(n.network)
          || ',"identifier":' || herald_json(n.identifier) || ',"symbol":' || herald_json(n.symbol)
          || ',"tokenId":' || herald_json(n.token_id) || ',"type":' || herald_json(n.token_type) || '}',
          ',' ORDER BY n.blockchain, n.network, n.identifier, n.token_id)
      FROM (SELECT DISTINCT a.blockchain, a.network, n.identifier, n.symbol, n.token_id, n.token_type
            FROM wallet_addresses a JOIN wallet_nfts n ON n.wallet_address_id = a.id WHERE a.wallet_id = w.id) n), '')
    || ']}'
  FROM wallets w WHERE w.id = wallet
$$;

-- The records built before this migration are spaced: rebuild them once.
UPDATE wallets SET assets_json = herald_wallet_assets_json(id);
