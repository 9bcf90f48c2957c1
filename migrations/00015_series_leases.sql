-- +goose Up
-- Offline terminals (docs/offline.md). A series may be leased to one
-- device, which then numbers it alone while the network is down and
-- uploads what it issued; the server stores an upload only if it is an
-- exact continuation of the series-year. A lease holds the series from
-- lease_at until it is settled: at once when the device ends it (all
-- uploaded), or, after a forced end (a lost device), when the device's
-- late upload and end arrive or the accountant declares what the device
-- may have issued beyond the last uploaded serial (settled_at). While a
-- lease holds a series, only a transaction that names it
-- (set_config('invoiced.lease_id', …)) may take numbers or append records
-- there: the trigger below refuses every other write of the series'
-- counter rows with SQLSTATE IV017, whatever the route or library caller.
CREATE TABLE series_leases (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    lease_id          text NOT NULL UNIQUE CHECK (lease_id ~ '^ls_[a-z0-9]{26}$'),
    series_id         bigint NOT NULL REFERENCES series (id),
    device_id         text NOT NULL CHECK (device_id ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$'),
    leased_at         timestamptz NOT NULL,
    leased_by         text NOT NULL,
    start_fy          integer NOT NULL,
    start_serial      bigint NOT NULL CHECK (start_serial > 0),
    ended_at          timestamptz,
    end_kind          text CHECK (end_kind IN ('device', 'forced')),
    ended_by          text,
    end_reason        text,
    -- The series-year and serial the lease ended at: the device's last
    -- serial, or for a forced end the last one uploaded.
    end_fy            integer,
    end_serial        bigint,
    settled_at        timestamptz,
    settled_by        text,
    settle_reason     text,
    -- The last serial the accountant declared the lost device may have
    -- issued (end_serial when it issued nothing more); the serials after
    -- end_serial up to it are reported cancelled.
    declared_through  bigint,
    CHECK ((ended_at IS NULL) = (end_kind IS NULL)),
    CHECK (settled_at IS NULL OR ended_at IS NOT NULL)
);
-- One holder per series: a second lease is refused (lease_held).
CREATE UNIQUE INDEX series_leases_holder ON series_leases (series_id) WHERE settled_at IS NULL;
CREATE INDEX series_leases_series ON series_leases (series_id, id);

-- The guard takes the series' lease lock in share mode, so taking a lease
-- (exclusive, series.TakeLease) waits for every transaction that got past
-- the check and is not yet committed, and reads the counter after them;
-- a writer that comes later waits for the lease to commit and then sees it.
-- +goose StatementBegin
CREATE FUNCTION invoiced_lease_guard() RETURNS trigger LANGUAGE plpgsql AS $$
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
SET LOCAL lock_timeout = '10s';
CREATE TRIGGER series_counters_lease_guard
    BEFORE INSERT OR UPDATE OF last_serial, chain_length ON series_counters
    FOR EACH ROW EXECUTE FUNCTION invoiced_lease_guard();

-- Binaries of 00014 serve this schema: they never lease, and a write they
-- attempt in a leased series fails (an internal error) without a number.
INSERT INTO schema_compat (version, serves_from) VALUES (15, 14);

-- +goose Down
DELETE FROM schema_compat WHERE version = 15;
DROP TRIGGER series_counters_lease_guard ON series_counters;
DROP FUNCTION invoiced_lease_guard();
DROP TABLE series_leases;
