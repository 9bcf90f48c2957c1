-- +goose Up
-- A device's end of its lease can be stuck in flight (a proxy or the
-- network gave up on it, the server has not run it yet) while the device,
-- told the lease holds, resumes selling (docs/offline.md, "Ending a
-- lease"). end_epoch counts the device's resumes: a resume (POST
-- …/lease/resume) bumps it under the lease's row lock, and a device's
-- DELETE carries the epoch it was journaled with and is refused (409
-- lease_end_superseded) when the lease's has moved on, so no end sent
-- before a resume can commit after it. A NOT NULL column with a constant
-- default only changes the catalogue (PostgreSQL 11 and later: no rewrite,
-- no scan); on Citus the ALTER is propagated to every shard. It is taken
-- under an ACCESS EXCLUSIVE lock held for milliseconds; a lease write waits
-- for it at most the lock timeout.
SET LOCAL lock_timeout = '10s';
ALTER TABLE series_leases ADD COLUMN end_epoch bigint NOT NULL DEFAULT 0;
-- Binaries of 00023 serve this schema: they never read the column, their
-- leases keep epoch 0 and their device ends carry none (the check is
-- skipped for an end without an epoch).
INSERT INTO schema_compat (version, serves_from) VALUES (25, 23);

-- +goose Down
SET LOCAL lock_timeout = '10s';
ALTER TABLE series_leases DROP COLUMN end_epoch;
DELETE FROM schema_compat WHERE version = 25;
