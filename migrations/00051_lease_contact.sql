-- +goose Up
-- What the server knows of an offline device (docs/offline.md): its last
-- contact (an upload, a resume or an end the server accepted), and the
-- last serial the device itself reported, in its end request, even when
-- that end was refused (reported_fy/reported_serial): the accountant who
-- settles a lost device's lease sees them beside the form, and a
-- declaration below the reported serial is refused. take_key is the
-- Idempotency-Key the lease was taken with: the same request again, while
-- the device has not been in touch, answers the same lease (a lost answer
-- to POST …/lease is not a no). Nullable columns without a default only
-- change the catalogue (no rewrite, no scan), under an ACCESS EXCLUSIVE
-- lock held for milliseconds; a lease write waits for it at most the lock
-- timeout. On Citus the ALTER is propagated to every shard.
SET LOCAL lock_timeout = '10s';
ALTER TABLE series_leases ADD COLUMN take_key text, ADD COLUMN last_contact_at timestamptz,
    ADD COLUMN reported_fy integer, ADD COLUMN reported_serial bigint;
-- Binaries of 00030 and later serve this schema: they never read the columns; while
-- they serve, contacts and reports they handle are not recorded, and a
-- lease they take has no key (asked again, it is refused lease_held, as
-- before).
INSERT INTO schema_compat (version, serves_from) VALUES (51, 30);

-- +goose Down
SET LOCAL lock_timeout = '10s';
ALTER TABLE series_leases DROP COLUMN take_key, DROP COLUMN last_contact_at,
    DROP COLUMN reported_fy, DROP COLUMN reported_serial;
DELETE FROM schema_compat WHERE version = 51;
