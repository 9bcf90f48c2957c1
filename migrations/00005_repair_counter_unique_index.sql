-- +goose Up
-- Repairs a database migrated with the first text of 00003, which was
-- edited after some databases had applied it. That text kept the counter
-- rows' primary key (series_id, fy) and added a second unique index,
-- series_counters_owner_key (series_id, fy, seller_id), for the invoice
-- key to reference. The upsert that creates a year's row
-- (series.NextMany, ON CONFLICT on (series_id, fy, seller_id)) handles a
-- concurrent first insert only on its arbiter index, so two requests
-- opening a year at once could fail with a duplicate key error (500) on
-- the other one. Where that index exists, this leaves the schema a fresh
-- database has: the primary key (series_id, fy, seller_id), the only
-- unique index, referenced by the invoice key. A fresh database is not
-- touched.
--
-- The invoice key is re-added NOT VALID, so no invoice is scanned while
-- the ACCESS EXCLUSIVE locks are held (counter rows are one per series and
-- year: rebuilding their key is quick); 00006 validates it outside the
-- transaction. A lock not had within 10 s fails the migration instead of
-- queueing every request behind it: run it again later.
SET LOCAL lock_timeout = '10s';
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_constraint
               WHERE conrelid = 'series_counters'::regclass AND conname = 'series_counters_owner_key') THEN
        ALTER TABLE invoices DROP CONSTRAINT invoices_counter_fkey;
        ALTER TABLE series_counters
            DROP CONSTRAINT series_counters_owner_key,
            DROP CONSTRAINT series_counters_pkey,
            ADD PRIMARY KEY (series_id, fy, seller_id);
        ALTER TABLE invoices
            ADD CONSTRAINT invoices_counter_fkey FOREIGN KEY (series_id, fy, seller_id)
                REFERENCES series_counters (series_id, fy, seller_id) NOT VALID;
    END IF;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- Nothing to undo: the repaired schema is 00003's.
SELECT 1;
