-- +goose Up
-- A lease may span financial years (docs/offline.md, "Every year a lease
-- could have touched"): a device leased in March numbers the new year's
-- first serials in April. A forced end records the last serial uploaded in
-- each year from the lease's start to the year of the end (end_years), and
-- a settlement declares, per year from the start to the year of the
-- settlement, the last serial the device may have issued
-- (declared_years); end_fy/end_serial and declared_through keep the latest
-- end year's, as before. Both are {"<fy start year>": serial} objects. Adding
-- nullable columns without a default only changes the catalogue (no
-- rewrite, no scan), under an ACCESS EXCLUSIVE lock held for
-- milliseconds; a lease write waits for it at most the lock timeout.
SET LOCAL lock_timeout = '10s';
ALTER TABLE series_leases ADD COLUMN end_years jsonb, ADD COLUMN declared_years jsonb;
-- Binaries of 00022 serve this schema: they never read the columns, and
-- the leases they end or settle have them NULL, read as their single
-- year (end_fy, declared_through).
INSERT INTO schema_compat (version, serves_from) VALUES (23, 22);

-- +goose Down
SET LOCAL lock_timeout = '10s';
ALTER TABLE series_leases DROP COLUMN end_years, DROP COLUMN declared_years;
DELETE FROM schema_compat WHERE version = 23;
