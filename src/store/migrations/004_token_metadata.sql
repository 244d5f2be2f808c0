-- Token metadata (name, symbol, decimals) read from token contracts by the chain adapters, kept so a
-- restart or a second process does not call every contract again. Facts of a deployed contract do not
-- change; fetched_at says when they were read, should a refresh ever be wanted.

CREATE TABLE token_metadata (
  blockchain text NOT NULL,
  network text NOT NULL,
  -- EVM: lower-case 0x address.
  contract text NOT NULL,
  -- '' when the contract has no (readable) name or symbol.
  name text NOT NULL,
  symbol text NOT NULL,
  -- As the contract reports it; 0 when it has no (readable) decimals().
  decimals smallint NOT NULL CHECK (decimals BETWEEN 0 AND 255),
  -- The token type of the transfer that first asked (ERC-20, ERC-721, BEP-20, ...).
  token_type text NOT NULL,
  fetched_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (blockchain, network, contract)
);
