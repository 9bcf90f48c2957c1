-- +goose Up
-- A credit or debit note must name an original invoice that invoiced
-- issued, or say why it cannot: the original was issued before the seller
-- moved to invoiced or by other software ("external": true with a reason).
-- The reason is kept with the note. Adding a nullable column without a
-- default rewrites nothing.
SET LOCAL lock_timeout = '10s';
ALTER TABLE invoices ADD COLUMN original_external_reason text;

-- +goose Down
SET LOCAL lock_timeout = '10s';
ALTER TABLE invoices DROP COLUMN original_external_reason;
