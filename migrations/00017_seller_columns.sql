-- +goose Up
-- Scale-out (docs/scale-out.md), step 1 of 4 (expand): the seller-owned
-- tables that did not name their seller now do, so that on Citus every one
-- of them can be distributed by seller_id beside the seller's series,
-- counter rows and invoices, and every key can include it. Binaries from
-- this version on write the column; older ones leave it NULL. Adding a
-- nullable column rewrites nothing, but ALTER TABLE holds its ACCESS
-- EXCLUSIVE lock until COMMIT: this transaction does nothing else, so
-- issuing waits milliseconds, not for a backfill (00018 fills the existing
-- rows in short transactions, 00019 what older binaries wrote meanwhile).
SET LOCAL lock_timeout = '10s';
ALTER TABLE chain_records ADD COLUMN seller_id bigint;
ALTER TABLE series_openings ADD COLUMN seller_id bigint;
ALTER TABLE series_leases ADD COLUMN seller_id bigint;
ALTER TABLE webhook_deliveries ADD COLUMN seller_id bigint;
-- Binaries of 00016 ignore the new columns.
INSERT INTO schema_compat (version, serves_from) VALUES (17, 16);
-- +goose Down
DELETE FROM schema_compat WHERE version = 17;
ALTER TABLE webhook_deliveries DROP COLUMN seller_id;
ALTER TABLE series_leases DROP COLUMN seller_id;
ALTER TABLE series_openings DROP COLUMN seller_id;
ALTER TABLE chain_records DROP COLUMN seller_id;
