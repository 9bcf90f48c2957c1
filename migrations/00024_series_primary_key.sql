-- +goose NO TRANSACTION
-- +goose Up
-- series lost its primary key in 00020: the key on id alone cannot hold on
-- Citus, where series is distributed by seller_id and every unique key must
-- carry that column. UNIQUE (id, seller_id) took its place for the foreign
-- keys and the replica identity (00022), but a table without a primary key
-- is one every tool and reader must be told about. This puts it back as the
-- key that holds on both PostgreSQL and Citus: (id, seller_id). id alone is
-- unique by construction (one identity sequence; under Citus the
-- coordinator's), and every statement that reads a series or its counter
-- rows and leases by series id names the seller too, so no lookup depends on
-- more than this key enforces (docs/scale-out.md).
--
-- Expand only, in steps that never hold a lock issuing needs while they
-- wait: the index is built CONCURRENTLY (no lock an insert waits for), then
-- attached as the primary key, a catalogue change under an ACCESS EXCLUSIVE
-- lock held for milliseconds (the runner caps its wait and retries). A rerun
-- after an interrupted build drops the invalid index and builds it again;
-- one after the key was attached drops the spare index it built.
DROP INDEX CONCURRENTLY IF EXISTS series_pkey_build;
CREATE UNIQUE INDEX CONCURRENTLY series_pkey_build ON series (id, seller_id);
-- +goose StatementBegin
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_constraint WHERE conrelid = 'series'::regclass AND contype = 'p') THEN
        ALTER TABLE series ADD CONSTRAINT series_pkey PRIMARY KEY USING INDEX series_pkey_build;
    END IF;
END $$;
-- +goose StatementEnd
DROP INDEX CONCURRENTLY IF EXISTS series_pkey_build;
-- Binaries of 00022 and 00023 serve this schema: they never name the key.
INSERT INTO schema_compat (version, serves_from) VALUES (24, 22) ON CONFLICT (version) DO NOTHING;

-- +goose Down
DELETE FROM schema_compat WHERE version = 24;
ALTER TABLE series DROP CONSTRAINT IF EXISTS series_pkey;
