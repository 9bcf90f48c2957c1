-- +goose Up
-- Scale-out, after step 4: the foreign keys 00020 re-added NOT VALID are
-- validated here, in a transaction that takes no lock an insert waits for
-- (SHARE UPDATE EXCLUSIVE on the referencing table, ROW SHARE on the
-- referenced one), so issuing goes on while the rows are checked.
ALTER TABLE series_openings VALIDATE CONSTRAINT series_openings_series_id_fkey;
ALTER TABLE series_leases VALIDATE CONSTRAINT series_leases_series_id_fkey;
ALTER TABLE webhook_deliveries VALIDATE CONSTRAINT webhook_deliveries_event_id_fkey;
ALTER TABLE webhook_deliveries VALIDATE CONSTRAINT webhook_deliveries_webhook_id_fkey;
-- Binaries of 00020 serve this schema: only the constraints' flags change.
INSERT INTO schema_compat (version, serves_from) VALUES (21, 20);

-- +goose Down
-- A validated foreign key stays valid: nothing to undo but the row.
DELETE FROM schema_compat WHERE version = 21;
