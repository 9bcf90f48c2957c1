-- +goose NO TRANSACTION
-- +goose Up
-- Checks the invoices that existed before 00003 against its key. VALIDATE
-- takes SHARE UPDATE EXCLUSIVE on invoices, so issuing goes on during the
-- scan; it runs outside a transaction so that no lock of 00003 is held
-- meanwhile. It fails if an existing invoice has no counter row of its
-- series, year and seller (which the old keys allowed): the key still
-- guards new invoices, and the migration succeeds once those rows are
-- corrected. Validating a valid key again does nothing, so a rerun is safe.
ALTER TABLE invoices VALIDATE CONSTRAINT invoices_counter_fkey;

-- +goose Down
-- Nothing to undo: 00003's Down drops the key.
SELECT 1;
