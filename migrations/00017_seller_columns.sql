-- +goose Up
-- Scale-out (issue 19, docs/scale-out.md), step 1 of 4 (expand): the
-- seller-owned tables that did not name their seller now do, so that on
-- Citus every one of them can be distributed by seller_id beside the
-- seller's series, counter rows and invoices, and every key can include
-- it. Binaries from this version on write the column; older ones leave it
-- NULL, and 00019 fills in what they wrote. Adding a nullable column
-- rewrites nothing; the backfill updates each existing row once (on a large
-- database, run it when issuing is quiet).
ALTER TABLE chain_records ADD COLUMN seller_id bigint;
ALTER TABLE series_openings ADD COLUMN seller_id bigint;
ALTER TABLE series_leases ADD COLUMN seller_id bigint;
ALTER TABLE webhook_deliveries ADD COLUMN seller_id bigint;
UPDATE chain_records c SET seller_id = s.seller_id FROM series s WHERE s.id = c.series_id AND c.seller_id IS NULL;
UPDATE series_openings o SET seller_id = s.seller_id FROM series s WHERE s.id = o.series_id AND o.seller_id IS NULL;
UPDATE series_leases l SET seller_id = s.seller_id FROM series s WHERE s.id = l.series_id AND l.seller_id IS NULL;
UPDATE webhook_deliveries d SET seller_id = e.seller_id FROM events e WHERE e.id = d.event_id AND d.seller_id IS NULL;
-- Binaries of 00016 ignore the new columns.
INSERT INTO schema_compat (version, serves_from) VALUES (17, 16);

-- +goose Down
DELETE FROM schema_compat WHERE version = 17;
ALTER TABLE webhook_deliveries DROP COLUMN seller_id;
ALTER TABLE series_leases DROP COLUMN seller_id;
ALTER TABLE series_openings DROP COLUMN seller_id;
ALTER TABLE chain_records DROP COLUMN seller_id;
