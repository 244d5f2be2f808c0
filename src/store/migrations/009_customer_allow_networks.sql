-- Networks a customer's callbacks, test callbacks and domain verification may reach although they are not
-- public, on top of the operator's delivery.allowNetworks (which every customer gets: for single-tenant
-- installs). inet, not text: PostgreSQL refuses what is not a network, and gives it back in one canonical
-- spelling (always with its prefix).
ALTER TABLE customers ADD COLUMN allow_networks inet[] NOT NULL DEFAULT '{}';
