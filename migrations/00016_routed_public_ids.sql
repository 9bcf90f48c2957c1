-- +goose NO TRANSACTION
-- +goose Up
-- Expand for routed public ids (docs/public-ids.md). A new receipt id
-- starts with its issue time and names its seller, so one unique index
-- of the new ids alone takes every insert at its right-hand edge, and it
-- holds the seller's id, as Citus needs of a unique key on a table
-- distributed by seller. Ids issued before are 26 characters and name no
-- seller: a partial index holds them alone, so that it stops growing once
-- every binary issues routed ids. Each row is in exactly one of the two
-- (the lookups state the length condition of theirs).
--
-- Both are built CONCURRENTLY, outside a transaction, so issuing goes on
-- meanwhile. A build that was interrupted leaves an invalid index; a rerun
-- drops whatever is there and builds it again. invoices_public_id_key
-- (unique over every id, random) stays until a later release's contract
-- step drops it, when no binary that looks ids up without the seller runs.
DROP INDEX CONCURRENTLY IF EXISTS invoices_routed_public_id_key;
CREATE UNIQUE INDEX CONCURRENTLY invoices_routed_public_id_key ON invoices (public_id, seller_id) WHERE length(public_id) > 26;
DROP INDEX CONCURRENTLY IF EXISTS invoices_legacy_public_id;
CREATE INDEX CONCURRENTLY invoices_legacy_public_id ON invoices (public_id) WHERE length(public_id) = 26;
-- Only indexes are added: binaries of 00014 (which issue and look up the
-- 26-character ids) still serve this schema.
INSERT INTO schema_compat (version, serves_from) VALUES (16, 14) ON CONFLICT (version) DO NOTHING;

-- +goose Down
DELETE FROM schema_compat WHERE version = 16;
DROP INDEX CONCURRENTLY IF EXISTS invoices_legacy_public_id;
DROP INDEX CONCURRENTLY IF EXISTS invoices_routed_public_id_key;
