-- +goose NO TRANSACTION
-- +goose Up
-- Expand for routed public ids (docs/public-ids.md). New receipt ids
-- lead with the seller's id and the issue time, so the unique key
-- (seller_id, public_id) takes each seller's new ids at its right-hand
-- edge, and a lookup names the seller (one shard on Citus, whose unique
-- keys must hold the distribution column). Ids issued before are 26
-- characters and name no seller: the partial index holds them alone, so
-- it stops growing once every binary issues routed ids.
--
-- Both are built CONCURRENTLY, outside a transaction, so issuing goes on
-- meanwhile. A build that was interrupted leaves an invalid index; a rerun
-- drops whatever is there and builds it again. invoices_public_id_key
-- (unique over every id, random) stays until a later release's contract
-- step drops it, when no binary that looks ids up without the seller runs.
DROP INDEX CONCURRENTLY IF EXISTS invoices_seller_public_id_key;
CREATE UNIQUE INDEX CONCURRENTLY invoices_seller_public_id_key ON invoices (seller_id, public_id);
DROP INDEX CONCURRENTLY IF EXISTS invoices_legacy_public_id;
CREATE INDEX CONCURRENTLY invoices_legacy_public_id ON invoices (public_id) WHERE length(public_id) = 26;
-- Only indexes are added: binaries of 00014 (which issue and look up the
-- 26-character ids) still serve this schema.
INSERT INTO schema_compat (version, serves_from) VALUES (20, 14) ON CONFLICT (version) DO NOTHING;

-- +goose Down
DELETE FROM schema_compat WHERE version = 20;
DROP INDEX CONCURRENTLY IF EXISTS invoices_legacy_public_id;
DROP INDEX CONCURRENTLY IF EXISTS invoices_seller_public_id_key;
