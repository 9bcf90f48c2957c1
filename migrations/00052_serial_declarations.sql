-- +goose Up
-- A settlement of an offline device's lease (docs/offline.md) declares
-- the serials the device may have printed and never uploaded. Each year's
-- declaration is a record of that year's chain (kind 'declared', sealed
-- as docs/chain.md describes) and a row here: which serials (first to
-- last), which lease and device, who declared them, when and why, and
-- the date GSTR-1 Table 13 reports them on (docs/reports.md). Verify and
-- the audit read a year whose missing serials are all declared as intact,
-- listing them as declared.
CREATE TABLE serial_declarations (
    seller_id     bigint NOT NULL,
    series_id     bigint NOT NULL,
    fy            integer NOT NULL CHECK (fy BETWEEN 2017 AND 2099),
    position      bigint NOT NULL CHECK (position > 0),
    first_serial  bigint NOT NULL CHECK (first_serial > 0),
    last_serial   bigint NOT NULL CHECK (last_serial >= first_serial),
    lease_id      text NOT NULL,
    device_id     text NOT NULL,
    declared_at   timestamptz NOT NULL,
    declared_on   date NOT NULL,
    declared_by   text NOT NULL,
    reason        text NOT NULL,
    PRIMARY KEY (seller_id, series_id, fy, position)
);
-- Table 13 reads a seller's declarations of a period by their date.
CREATE INDEX serial_declarations_on ON serial_declarations (seller_id, declared_on);
-- Chain records gain the kind 'declared'. Existing rows satisfy the wider
-- check, so it is added NOT VALID: no scan under the table lock.
SET LOCAL lock_timeout = '10s';
ALTER TABLE chain_records
    DROP CONSTRAINT chain_records_kind_check,
    ADD CONSTRAINT chain_records_kind_check CHECK (kind IN ('issue', 'cancel', 'opening', 'declared')) NOT VALID;
-- Binaries of 00030 and later serve this schema: a settlement by one of
-- them spends the serials without declaring them (the year then reads as
-- a gap, as before), and their verify reads a 'declared' record as one
-- whose invoice is missing: a finding, never a number issued twice.
INSERT INTO schema_compat (version, serves_from) VALUES (52, 30);

-- +goose Down
SET LOCAL lock_timeout = '10s';
DELETE FROM chain_records WHERE kind = 'declared';
ALTER TABLE chain_records
    DROP CONSTRAINT chain_records_kind_check,
    ADD CONSTRAINT chain_records_kind_check CHECK (kind IN ('issue', 'cancel', 'opening')) NOT VALID;
DROP TABLE serial_declarations;
DELETE FROM schema_compat WHERE version = 52;
