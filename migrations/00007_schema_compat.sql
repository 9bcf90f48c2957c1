-- +goose Up
-- Which binaries may serve a schema newer than they know (a rolling
-- deploy: a new binary migrated the database while old ones still run or
-- restart). A migration that only expands the schema (adds a table, a
-- nullable column, an index; repairs) declares, in the same transaction,
-- the oldest schema version whose binaries still work with it:
--   INSERT INTO schema_compat (version, serves_from) VALUES (<its version>, <oldest version>);
-- A migration that contracts it (drops or renames what older binaries
-- use, adds a constraint they would violate) declares nothing, and those
-- binaries refuse to start (serve, migrations.CheckServable). See
-- docs/operations.md.
CREATE TABLE schema_compat (
    version     bigint PRIMARY KEY,
    serves_from bigint NOT NULL CHECK (serves_from < version)
);
-- 00005 and 00006 repair a schema, and this adds a table no older binary
-- reads: binaries of 00004 work with all three.
INSERT INTO schema_compat (version, serves_from) VALUES (5, 4), (6, 4), (7, 4);

-- +goose Down
DROP TABLE schema_compat;
