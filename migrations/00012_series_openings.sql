-- +goose Up
-- A seller that moves to invoiced mid-year declares where each series
-- stands: the last serial issued before (by other software), its number
-- and date. The series-year's counter row starts there, and the chain's
-- first record (kind 'opening') seals the declaration (docs/openings.md).
CREATE TABLE series_openings (
    series_id          bigint NOT NULL REFERENCES series (id),
    fy                 integer NOT NULL CHECK (fy BETWEEN 2017 AND 2099),
    last_serial        bigint NOT NULL CHECK (last_serial > 0),
    last_invoice_date  date NOT NULL,
    last_number        text NOT NULL,
    declared_at        timestamptz NOT NULL,
    declared_by        text NOT NULL,
    PRIMARY KEY (series_id, fy)
);
-- Chain records gain the kind 'opening'. Existing rows satisfy the wider
-- check, so it is added NOT VALID: no scan under the table lock.
SET LOCAL lock_timeout = '10s';
ALTER TABLE chain_records
    DROP CONSTRAINT chain_records_kind_check,
    ADD CONSTRAINT chain_records_kind_check CHECK (kind IN ('issue', 'cancel', 'opening')) NOT VALID;

-- +goose Down
SET LOCAL lock_timeout = '10s';
DELETE FROM chain_records WHERE kind = 'opening';
ALTER TABLE chain_records
    DROP CONSTRAINT chain_records_kind_check,
    ADD CONSTRAINT chain_records_kind_check CHECK (kind IN ('issue', 'cancel')) NOT VALID;
DROP TABLE series_openings;
