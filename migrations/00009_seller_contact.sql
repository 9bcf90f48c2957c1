-- +goose Up
-- Rule 46(a) wants the supplier's name, address and GSTIN on a tax
-- invoice; the receipt shows the address (and a phone and e-mail when
-- given). A constant default adds the column without rewriting the table.
SET LOCAL lock_timeout = '10s';
ALTER TABLE sellers
    ADD COLUMN address text NOT NULL DEFAULT '',
    ADD COLUMN phone text NOT NULL DEFAULT '',
    ADD COLUMN email text NOT NULL DEFAULT '';

-- +goose Down
SET LOCAL lock_timeout = '10s';
ALTER TABLE sellers DROP COLUMN address, DROP COLUMN phone, DROP COLUMN email;
