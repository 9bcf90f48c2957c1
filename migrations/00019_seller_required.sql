-- +goose Up
-- Scale-out, step 3 of 4 (contract): every row of the tables 00017 extended
-- names its seller. The checks come first, so their brief locks (NOT VALID
-- scans nothing) keep out an older binary's insert until the backfill below
-- has filled what such binaries wrote since 00017; from then on an insert
-- without seller_id fails, so binaries older than this version must be gone
-- (no schema_compat row: they refuse to start). 00020 validates the checks
-- and turns them into NOT NULL.
SET LOCAL lock_timeout = '10s';
ALTER TABLE chain_records ADD CONSTRAINT chain_records_seller_id_not_null CHECK (seller_id IS NOT NULL) NOT VALID;
ALTER TABLE series_openings ADD CONSTRAINT series_openings_seller_id_not_null CHECK (seller_id IS NOT NULL) NOT VALID;
ALTER TABLE series_leases ADD CONSTRAINT series_leases_seller_id_not_null CHECK (seller_id IS NOT NULL) NOT VALID;
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_seller_id_not_null CHECK (seller_id IS NOT NULL) NOT VALID;
UPDATE chain_records c SET seller_id = s.seller_id FROM series s WHERE s.id = c.series_id AND c.seller_id IS NULL;
UPDATE series_openings o SET seller_id = s.seller_id FROM series s WHERE s.id = o.series_id AND o.seller_id IS NULL;
UPDATE series_leases l SET seller_id = s.seller_id FROM series s WHERE s.id = l.series_id AND l.seller_id IS NULL;
UPDATE webhook_deliveries d SET seller_id = e.seller_id FROM events e WHERE e.id = d.event_id AND d.seller_id IS NULL;

-- +goose Down
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_seller_id_not_null;
ALTER TABLE series_leases DROP CONSTRAINT series_leases_seller_id_not_null;
ALTER TABLE series_openings DROP CONSTRAINT series_openings_seller_id_not_null;
ALTER TABLE chain_records DROP CONSTRAINT chain_records_seller_id_not_null;
