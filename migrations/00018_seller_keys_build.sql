-- +goose NO TRANSACTION
-- +goose Up
-- Scale-out, step 2 of 4 (expand). First the backfill of the columns 00017
-- added, in short transactions: outside a transaction block a DO block may
-- COMMIT, so each batch of 10,000 rows commits on its own, holds no table
-- lock an insert waits for (issuing goes on), and leaves dead rows that
-- vacuum can reclaim while the rest is filled. chain_records is filled
-- along its primary key, series-year by series-year; webhook_deliveries by
-- ranges of event ids. A rerun fills only rows still NULL.
-- +goose StatementBegin
DO $$
DECLARE
    r record;
    upto bigint;
    p bigint;
BEGIN
    FOR r IN SELECT series_id, fy, seller_id FROM series_counters ORDER BY series_id, fy LOOP
        SELECT max(position) INTO upto FROM chain_records WHERE series_id = r.series_id AND fy = r.fy;
        p := 0;
        WHILE p < coalesce(upto, 0) LOOP
            UPDATE chain_records SET seller_id = r.seller_id
            WHERE series_id = r.series_id AND fy = r.fy AND position > p AND position <= p + 10000
              AND seller_id IS NULL;
            COMMIT;
            p := p + 10000;
        END LOOP;
    END LOOP;
END $$;
-- +goose StatementEnd
-- +goose StatementBegin
DO $$
DECLARE
    lo bigint;
    hi bigint;
BEGIN
    SELECT min(event_id), max(event_id) INTO lo, hi FROM webhook_deliveries WHERE seller_id IS NULL;
    WHILE lo <= hi LOOP
        UPDATE webhook_deliveries d SET seller_id = e.seller_id FROM events e
        WHERE e.id = d.event_id AND d.event_id >= lo AND d.event_id < lo + 10000 AND d.seller_id IS NULL;
        COMMIT;
        lo := lo + 10000;
    END LOOP;
END $$;
-- +goose StatementEnd
-- Whatever the loops did not reach (a chain without a counter row, if one
-- existed), and the two small tables, each in one statement of its own.
UPDATE chain_records c SET seller_id = s.seller_id FROM series s WHERE s.id = c.series_id AND c.seller_id IS NULL;
UPDATE series_openings o SET seller_id = s.seller_id FROM series s WHERE s.id = o.series_id AND o.seller_id IS NULL;
UPDATE series_leases l SET seller_id = s.seller_id FROM series s WHERE s.id = l.series_id AND l.seller_id IS NULL;
-- Then the unique indexes that become the keys
-- of the seller-owned tables in 00020, each the old key plus seller_id
-- (Citus requires every primary and unique key of a table distributed by
-- seller_id to contain it). Each is as unique as the key it replaces, since
-- it only adds a column. Built CONCURRENTLY, outside a transaction, so
-- issuing goes on meanwhile; a build that was interrupted leaves an invalid
-- index, so a rerun drops whatever is there and builds it again.
DROP INDEX CONCURRENTLY IF EXISTS chain_records_seller_key;
CREATE UNIQUE INDEX CONCURRENTLY chain_records_seller_key ON chain_records (series_id, fy, position, seller_id);
DROP INDEX CONCURRENTLY IF EXISTS invoices_id_seller_key;
CREATE UNIQUE INDEX CONCURRENTLY invoices_id_seller_key ON invoices (id, seller_id);
DROP INDEX CONCURRENTLY IF EXISTS invoices_serial_seller_key;
CREATE UNIQUE INDEX CONCURRENTLY invoices_serial_seller_key ON invoices (series_id, fy, serial, seller_id);
DROP INDEX CONCURRENTLY IF EXISTS events_id_seller_key;
CREATE UNIQUE INDEX CONCURRENTLY events_id_seller_key ON events (id, seller_id);
DROP INDEX CONCURRENTLY IF EXISTS events_invoice_type_seller_key;
CREATE UNIQUE INDEX CONCURRENTLY events_invoice_type_seller_key ON events (invoice_id, type, seller_id);
DROP INDEX CONCURRENTLY IF EXISTS period_lock_events_id_seller_key;
CREATE UNIQUE INDEX CONCURRENTLY period_lock_events_id_seller_key ON period_lock_events (id, seller_id);
DROP INDEX CONCURRENTLY IF EXISTS webhooks_id_seller_key;
CREATE UNIQUE INDEX CONCURRENTLY webhooks_id_seller_key ON webhooks (id, seller_id);
DROP INDEX CONCURRENTLY IF EXISTS webhooks_seller_public_id_key;
CREATE UNIQUE INDEX CONCURRENTLY webhooks_seller_public_id_key ON webhooks (seller_id, public_id);
DROP INDEX CONCURRENTLY IF EXISTS webhook_deliveries_seller_key;
CREATE UNIQUE INDEX CONCURRENTLY webhook_deliveries_seller_key ON webhook_deliveries (event_id, webhook_id, seller_id);
DROP INDEX CONCURRENTLY IF EXISTS series_openings_seller_key;
CREATE UNIQUE INDEX CONCURRENTLY series_openings_seller_key ON series_openings (series_id, fy, seller_id);
DROP INDEX CONCURRENTLY IF EXISTS series_leases_id_seller_key;
CREATE UNIQUE INDEX CONCURRENTLY series_leases_id_seller_key ON series_leases (id, seller_id);
DROP INDEX CONCURRENTLY IF EXISTS series_leases_lease_id_seller_key;
CREATE UNIQUE INDEX CONCURRENTLY series_leases_lease_id_seller_key ON series_leases (lease_id, seller_id);
DROP INDEX CONCURRENTLY IF EXISTS series_leases_holder_seller;
CREATE UNIQUE INDEX CONCURRENTLY series_leases_holder_seller ON series_leases (series_id, seller_id) WHERE settled_at IS NULL;
-- Only indexes are added: binaries of 00016 still serve this schema.
INSERT INTO schema_compat (version, serves_from) VALUES (18, 16) ON CONFLICT (version) DO NOTHING;

-- +goose Down
DELETE FROM schema_compat WHERE version = 18;
DROP INDEX CONCURRENTLY IF EXISTS series_leases_holder_seller;
DROP INDEX CONCURRENTLY IF EXISTS series_leases_lease_id_seller_key;
DROP INDEX CONCURRENTLY IF EXISTS series_leases_id_seller_key;
DROP INDEX CONCURRENTLY IF EXISTS series_openings_seller_key;
DROP INDEX CONCURRENTLY IF EXISTS webhook_deliveries_seller_key;
DROP INDEX CONCURRENTLY IF EXISTS webhooks_seller_public_id_key;
DROP INDEX CONCURRENTLY IF EXISTS webhooks_id_seller_key;
DROP INDEX CONCURRENTLY IF EXISTS period_lock_events_id_seller_key;
DROP INDEX CONCURRENTLY IF EXISTS events_invoice_type_seller_key;
DROP INDEX CONCURRENTLY IF EXISTS events_id_seller_key;
DROP INDEX CONCURRENTLY IF EXISTS invoices_serial_seller_key;
DROP INDEX CONCURRENTLY IF EXISTS invoices_id_seller_key;
DROP INDEX CONCURRENTLY IF EXISTS chain_records_seller_key;
