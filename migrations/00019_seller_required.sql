-- +goose NO TRANSACTION
-- +goose Up
-- Scale-out, step 3 of 4 (contract): every row of the tables 00017 extended
-- names its seller. From here on an insert without seller_id fails, so
-- binaries older than 00017 must be gone (no schema_compat row: they refuse
-- to start). Each statement is a transaction of its own, and none holds a
-- table lock while it scans: the catch-up updates (rows such binaries wrote
-- since 00018) take row locks only; each check is added NOT VALID (scans
-- nothing) in a statement of its own, waiting at most 10 s for its brief
-- lock; the last catch-up fills what was written before the check came.
-- 00020 validates the checks and turns them into NOT NULL. A rerun after a
-- failure starts over harmlessly (IF NOT EXISTS by catalog, IS NULL).
UPDATE chain_records c SET seller_id = s.seller_id FROM series s WHERE s.id = c.series_id AND c.seller_id IS NULL;
UPDATE series_openings o SET seller_id = s.seller_id FROM series s WHERE s.id = o.series_id AND o.seller_id IS NULL;
UPDATE series_leases l SET seller_id = s.seller_id FROM series s WHERE s.id = l.series_id AND l.seller_id IS NULL;
UPDATE webhook_deliveries d SET seller_id = e.seller_id FROM events e WHERE e.id = d.event_id AND d.seller_id IS NULL;
-- +goose StatementBegin
DO $$
DECLARE
    t text;
BEGIN
    PERFORM set_config('lock_timeout', '10s', true);
    FOREACH t IN ARRAY ARRAY['chain_records', 'series_openings', 'series_leases', 'webhook_deliveries'] LOOP
        IF NOT EXISTS (SELECT FROM pg_constraint WHERE conname = t || '_seller_id_not_null' AND conrelid = t::regclass) THEN
            EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (seller_id IS NOT NULL) NOT VALID', t, t || '_seller_id_not_null');
        END IF;
        COMMIT;
        PERFORM set_config('lock_timeout', '10s', true);
    END LOOP;
END $$;
-- +goose StatementEnd
UPDATE chain_records c SET seller_id = s.seller_id FROM series s WHERE s.id = c.series_id AND c.seller_id IS NULL;
UPDATE series_openings o SET seller_id = s.seller_id FROM series s WHERE s.id = o.series_id AND o.seller_id IS NULL;
UPDATE series_leases l SET seller_id = s.seller_id FROM series s WHERE s.id = l.series_id AND l.seller_id IS NULL;
UPDATE webhook_deliveries d SET seller_id = e.seller_id FROM events e WHERE e.id = d.event_id AND d.seller_id IS NULL;

-- +goose Down
ALTER TABLE webhook_deliveries DROP CONSTRAINT IF EXISTS webhook_deliveries_seller_id_not_null;
ALTER TABLE series_leases DROP CONSTRAINT IF EXISTS series_leases_seller_id_not_null;
ALTER TABLE series_openings DROP CONSTRAINT IF EXISTS series_openings_seller_id_not_null;
ALTER TABLE chain_records DROP CONSTRAINT IF EXISTS chain_records_seller_id_not_null;
