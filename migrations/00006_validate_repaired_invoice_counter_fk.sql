-- +goose NO TRANSACTION
-- +goose Up
-- Validates the invoice key that 00005 re-added NOT VALID (see 00004 for
-- why outside a transaction). On a database 00005 did not touch the key is
-- valid already, and validating it again does nothing.
ALTER TABLE invoices VALIDATE CONSTRAINT invoices_counter_fkey;

-- +goose Down
-- Nothing to undo.
SELECT 1;
