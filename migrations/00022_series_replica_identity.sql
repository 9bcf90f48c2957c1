-- +goose Up
-- series lost its primary key in 00020 (the key on id alone; UNIQUE (id,
-- seller_id) took its place), and with it the replica identity that
-- logical replication needs to carry an UPDATE or DELETE of a row. Citus
-- moves shards with logical replication (citus_rebalance_start, adding a
-- worker: docs/scale-out.md) and refuses to move a shard group whose table
-- has none. The unique key's columns are NOT NULL, so it can be the
-- identity. Only the table's metadata changes (no rewrite, no scan), under
-- an ACCESS EXCLUSIVE lock held for milliseconds; issuing waits for it at
-- most the lock timeout, 10 s, or the migration fails and can be rerun.
SET LOCAL lock_timeout = '10s';
ALTER TABLE series REPLICA IDENTITY USING INDEX series_id_seller_id_key;
-- Binaries of 00020 and 00021 serve this schema: they never read the
-- setting.
INSERT INTO schema_compat (version, serves_from) VALUES (22, 20);

-- +goose Down
SET LOCAL lock_timeout = '10s';
ALTER TABLE series REPLICA IDENTITY DEFAULT;
DELETE FROM schema_compat WHERE version = 22;
