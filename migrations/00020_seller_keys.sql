-- +goose Up
-- Scale-out, step 4 of 4 (contract): every primary and unique key of a
-- seller-owned table includes seller_id, and every foreign key between them
-- names it, as Citus needs to distribute them by seller_id, co-located
-- (docs/scale-out.md). The checks of 00019 are validated first (SHARE
-- UPDATE EXCLUSIVE: writes go on during the scan), so SET NOT NULL (a
-- statement of its own, before its check is dropped: ALTER TABLE drops
-- constraints before it sets attributes) and the new primary keys scan
-- nothing. The foreign keys come back NOT VALID, so no scan happens under
-- the ACCESS EXCLUSIVE locks this transaction holds until COMMIT; 00021
-- validates them, with writes going on. Each key is swapped for the index 00018
-- built (USING INDEX: no build under the lock), in dependency order: the
-- foreign keys that point at a key go before it, and come back naming
-- seller_id. A key that adds seller_id is as unique as the one it replaces.
-- Also the contract step of 00016 (docs/public-ids.md): the unique index
-- over every public id goes; routed ids are unique by
-- invoices_routed_public_id_key, legacy ones by their 128 random bits.
SET LOCAL lock_timeout = '10s';
ALTER TABLE chain_records VALIDATE CONSTRAINT chain_records_seller_id_not_null;
ALTER TABLE series_openings VALIDATE CONSTRAINT series_openings_seller_id_not_null;
ALTER TABLE series_leases VALIDATE CONSTRAINT series_leases_seller_id_not_null;
ALTER TABLE webhook_deliveries VALIDATE CONSTRAINT webhook_deliveries_seller_id_not_null;

ALTER TABLE series_openings DROP CONSTRAINT series_openings_series_id_fkey;
ALTER TABLE series_leases DROP CONSTRAINT series_leases_series_id_fkey;
ALTER TABLE webhook_deliveries
    DROP CONSTRAINT webhook_deliveries_event_id_fkey,
    DROP CONSTRAINT webhook_deliveries_webhook_id_fkey;

ALTER TABLE chain_records ALTER COLUMN seller_id SET NOT NULL;
ALTER TABLE chain_records
    DROP CONSTRAINT chain_records_seller_id_not_null,
    DROP CONSTRAINT chain_records_pkey,
    ADD CONSTRAINT chain_records_pkey PRIMARY KEY USING INDEX chain_records_seller_key;
ALTER TABLE series_openings ALTER COLUMN seller_id SET NOT NULL;
ALTER TABLE series_openings
    DROP CONSTRAINT series_openings_seller_id_not_null,
    DROP CONSTRAINT series_openings_pkey,
    ADD CONSTRAINT series_openings_pkey PRIMARY KEY USING INDEX series_openings_seller_key;
ALTER TABLE series_leases ALTER COLUMN seller_id SET NOT NULL;
ALTER TABLE series_leases
    DROP CONSTRAINT series_leases_seller_id_not_null,
    DROP CONSTRAINT series_leases_pkey,
    ADD CONSTRAINT series_leases_pkey PRIMARY KEY USING INDEX series_leases_id_seller_key,
    DROP CONSTRAINT series_leases_lease_id_key,
    ADD CONSTRAINT series_leases_lease_id_key UNIQUE USING INDEX series_leases_lease_id_seller_key;
DROP INDEX series_leases_holder;
ALTER INDEX series_leases_holder_seller RENAME TO series_leases_holder;
ALTER TABLE webhook_deliveries ALTER COLUMN seller_id SET NOT NULL;
ALTER TABLE webhook_deliveries
    DROP CONSTRAINT webhook_deliveries_seller_id_not_null,
    DROP CONSTRAINT webhook_deliveries_pkey,
    ADD CONSTRAINT webhook_deliveries_pkey PRIMARY KEY USING INDEX webhook_deliveries_seller_key;
ALTER TABLE invoices
    DROP CONSTRAINT invoices_pkey,
    ADD CONSTRAINT invoices_pkey PRIMARY KEY USING INDEX invoices_id_seller_key,
    DROP CONSTRAINT invoices_public_id_key,
    DROP CONSTRAINT invoices_series_id_fy_serial_key,
    ADD CONSTRAINT invoices_series_id_fy_serial_key UNIQUE USING INDEX invoices_serial_seller_key;
ALTER TABLE events
    DROP CONSTRAINT events_pkey,
    ADD CONSTRAINT events_pkey PRIMARY KEY USING INDEX events_id_seller_key,
    DROP CONSTRAINT events_invoice_id_type_key,
    ADD CONSTRAINT events_invoice_id_type_key UNIQUE USING INDEX events_invoice_type_seller_key;
ALTER TABLE period_lock_events
    DROP CONSTRAINT period_lock_events_pkey,
    ADD CONSTRAINT period_lock_events_pkey PRIMARY KEY USING INDEX period_lock_events_id_seller_key;
ALTER TABLE webhooks
    DROP CONSTRAINT webhooks_pkey,
    ADD CONSTRAINT webhooks_pkey PRIMARY KEY USING INDEX webhooks_id_seller_key,
    DROP CONSTRAINT webhooks_public_id_key,
    ADD CONSTRAINT webhooks_public_id_key UNIQUE USING INDEX webhooks_seller_public_id_key;
-- series keeps UNIQUE (id, seller_id), which the counter rows already
-- reference; its primary key on id alone goes, once nothing points at it.
ALTER TABLE series_openings ADD CONSTRAINT series_openings_series_id_fkey
    FOREIGN KEY (series_id, seller_id) REFERENCES series (id, seller_id) NOT VALID;
ALTER TABLE series_leases ADD CONSTRAINT series_leases_series_id_fkey
    FOREIGN KEY (series_id, seller_id) REFERENCES series (id, seller_id) NOT VALID;
ALTER TABLE webhook_deliveries
    ADD CONSTRAINT webhook_deliveries_event_id_fkey
        FOREIGN KEY (event_id, seller_id) REFERENCES events (id, seller_id) ON DELETE CASCADE NOT VALID,
    ADD CONSTRAINT webhook_deliveries_webhook_id_fkey
        FOREIGN KEY (webhook_id, seller_id) REFERENCES webhooks (id, seller_id) NOT VALID;
ALTER TABLE series DROP CONSTRAINT series_pkey;

-- The lease guard (00015) reads the series' lease by seller too: on Citus a
-- router query to the shard beside the counter row's, on one worker.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION invoiced_lease_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    held text;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(hashtextextended('lease:' || NEW.series_id, 0));
    SELECT lease_id INTO held FROM series_leases
    WHERE series_id = NEW.series_id AND seller_id = NEW.seller_id AND settled_at IS NULL;
    IF FOUND AND held IS DISTINCT FROM current_setting('invoiced.lease_id', true) THEN
        RAISE EXCEPTION USING ERRCODE = 'IV017', MESSAGE = 'the series is leased to an offline device';
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd

-- +goose Down
SET LOCAL lock_timeout = '10s';
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION invoiced_lease_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    held text;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(hashtextextended('lease:' || NEW.series_id, 0));
    SELECT lease_id INTO held FROM series_leases WHERE series_id = NEW.series_id AND settled_at IS NULL;
    IF FOUND AND held IS DISTINCT FROM current_setting('invoiced.lease_id', true) THEN
        RAISE EXCEPTION USING ERRCODE = 'IV017', MESSAGE = 'the series is leased to an offline device';
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd
ALTER TABLE series ADD CONSTRAINT series_pkey PRIMARY KEY (id);
ALTER TABLE webhook_deliveries
    DROP CONSTRAINT webhook_deliveries_webhook_id_fkey,
    DROP CONSTRAINT webhook_deliveries_event_id_fkey;
ALTER TABLE series_leases DROP CONSTRAINT series_leases_series_id_fkey;
ALTER TABLE series_openings DROP CONSTRAINT series_openings_series_id_fkey;
ALTER TABLE webhooks
    DROP CONSTRAINT webhooks_public_id_key,
    ADD CONSTRAINT webhooks_public_id_key UNIQUE (public_id),
    DROP CONSTRAINT webhooks_pkey,
    ADD CONSTRAINT webhooks_pkey PRIMARY KEY (id);
ALTER TABLE period_lock_events
    DROP CONSTRAINT period_lock_events_pkey,
    ADD CONSTRAINT period_lock_events_pkey PRIMARY KEY (id);
ALTER TABLE events
    DROP CONSTRAINT events_invoice_id_type_key,
    ADD CONSTRAINT events_invoice_id_type_key UNIQUE (invoice_id, type),
    DROP CONSTRAINT events_pkey,
    ADD CONSTRAINT events_pkey PRIMARY KEY (id);
ALTER TABLE invoices
    DROP CONSTRAINT invoices_series_id_fy_serial_key,
    ADD CONSTRAINT invoices_series_id_fy_serial_key UNIQUE (series_id, fy, serial),
    ADD CONSTRAINT invoices_public_id_key UNIQUE (public_id),
    DROP CONSTRAINT invoices_pkey,
    ADD CONSTRAINT invoices_pkey PRIMARY KEY (id);
ALTER TABLE webhook_deliveries
    DROP CONSTRAINT webhook_deliveries_pkey,
    ADD CONSTRAINT webhook_deliveries_pkey PRIMARY KEY (event_id, webhook_id),
    ALTER COLUMN seller_id DROP NOT NULL,
    ADD CONSTRAINT webhook_deliveries_seller_id_not_null CHECK (seller_id IS NOT NULL) NOT VALID;
DROP INDEX series_leases_holder;
CREATE UNIQUE INDEX series_leases_holder ON series_leases (series_id) WHERE settled_at IS NULL;
ALTER TABLE series_leases
    DROP CONSTRAINT series_leases_lease_id_key,
    ADD CONSTRAINT series_leases_lease_id_key UNIQUE (lease_id),
    DROP CONSTRAINT series_leases_pkey,
    ADD CONSTRAINT series_leases_pkey PRIMARY KEY (id),
    ALTER COLUMN seller_id DROP NOT NULL,
    ADD CONSTRAINT series_leases_seller_id_not_null CHECK (seller_id IS NOT NULL) NOT VALID;
ALTER TABLE series_openings
    DROP CONSTRAINT series_openings_pkey,
    ADD CONSTRAINT series_openings_pkey PRIMARY KEY (series_id, fy),
    ALTER COLUMN seller_id DROP NOT NULL,
    ADD CONSTRAINT series_openings_seller_id_not_null CHECK (seller_id IS NOT NULL) NOT VALID;
ALTER TABLE chain_records
    DROP CONSTRAINT chain_records_pkey,
    ADD CONSTRAINT chain_records_pkey PRIMARY KEY (series_id, fy, position),
    ALTER COLUMN seller_id DROP NOT NULL,
    ADD CONSTRAINT chain_records_seller_id_not_null CHECK (seller_id IS NOT NULL) NOT VALID;
ALTER TABLE series_openings ADD CONSTRAINT series_openings_series_id_fkey FOREIGN KEY (series_id) REFERENCES series (id);
ALTER TABLE series_leases ADD CONSTRAINT series_leases_series_id_fkey FOREIGN KEY (series_id) REFERENCES series (id);
ALTER TABLE webhook_deliveries
    ADD CONSTRAINT webhook_deliveries_event_id_fkey FOREIGN KEY (event_id) REFERENCES events (id) ON DELETE CASCADE,
    ADD CONSTRAINT webhook_deliveries_webhook_id_fkey FOREIGN KEY (webhook_id) REFERENCES webhooks (id);
