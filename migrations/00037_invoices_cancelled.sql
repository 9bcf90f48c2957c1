-- +goose NO TRANSACTION
-- +goose Up
-- The cancelled invoices of a seller's year, by series: the console's
-- overview counts them for every series on every view. Without this index
-- the count read every invoice of the year (the cancelled ones are a few
-- in a thousand); a partial index holds the cancelled rows alone, so the
-- count reads what it counts (docs/threat-model.md, "Plans that do not
-- depend on statistics").
--
-- Built CONCURRENTLY, outside a transaction, so issuing goes on meanwhile;
-- a rerun after an interrupted build drops the invalid index and builds it
-- again.
DROP INDEX CONCURRENTLY IF EXISTS invoices_cancelled;
CREATE INDEX CONCURRENTLY invoices_cancelled ON invoices (seller_id, fy, series_id) WHERE status = 'cancelled';
-- Only an index is added: every binary that served 00030 serves this
-- schema.
INSERT INTO schema_compat (version, serves_from) VALUES (37, 23) ON CONFLICT (version) DO NOTHING;

-- +goose Down
DELETE FROM schema_compat WHERE version = 37;
DROP INDEX CONCURRENTLY IF EXISTS invoices_cancelled;
