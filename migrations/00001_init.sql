-- +goose Up
-- A seller is one GST registration.
CREATE TABLE sellers (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    gstin       text NOT NULL UNIQUE CHECK (gstin ~ '^[0-9]{2}[A-Z0-9]{13}$'),
    name        text NOT NULL,
    state_code  text NOT NULL CHECK (state_code ~ '^[0-9]{2}$'),
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- A series numbers one kind of document for one seller.
CREATE TABLE series (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    seller_id   bigint NOT NULL REFERENCES sellers (id),
    code        text NOT NULL CHECK (code ~ '^[A-Z0-9][A-Z0-9-]{0,15}$'),
    doc_type    text NOT NULL,
    format      text NOT NULL,
    capacity    bigint NOT NULL CHECK (capacity > 0),
    shop        text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (seller_id, code)
);

-- The counter row: one per series and financial year (fy = starting year).
-- It is locked and advanced inside the transaction that inserts the
-- invoices it numbers, so a rollback returns the numbers.
CREATE TABLE series_counters (
    series_id          bigint NOT NULL REFERENCES series (id),
    fy                 integer NOT NULL CHECK (fy BETWEEN 2017 AND 2099),
    last_serial        bigint NOT NULL CHECK (last_serial >= 0),
    -- The series' largest serial (from its format), copied here so the
    -- upsert can check it without a join and the database refuses to pass it.
    capacity           bigint NOT NULL,
    last_invoice_date  date NOT NULL,
    last_issued_at     timestamptz NOT NULL,
    chain_length       bigint NOT NULL DEFAULT 0,
    chain_head         bytea,
    PRIMARY KEY (series_id, fy),
    CHECK (last_serial <= capacity)
);

CREATE TABLE invoices (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    seller_id         bigint NOT NULL REFERENCES sellers (id),
    series_id         bigint NOT NULL REFERENCES series (id),
    fy                integer NOT NULL,
    serial            bigint NOT NULL CHECK (serial > 0),
    number            text NOT NULL CHECK (number ~ '^[A-Z1-9][A-Z0-9/-]{0,15}$'),
    invoice_date      date NOT NULL,
    issued_at         timestamptz NOT NULL,
    public_id         text NOT NULL UNIQUE,
    status            text NOT NULL DEFAULT 'issued' CHECK (status IN ('issued', 'cancelled')),
    buyer_gstin       text,
    buyer_name        text,
    place_of_supply   text NOT NULL,
    original_number   text,
    original_date     date,
    items             jsonb NOT NULL,
    taxable           numeric(18, 2) NOT NULL,
    cgst              numeric(18, 2) NOT NULL,
    sgst              numeric(18, 2) NOT NULL,
    igst              numeric(18, 2) NOT NULL,
    total             numeric(18, 2) NOT NULL,
    cancelled_at      timestamptz,
    cancel_reason     text,
    UNIQUE (series_id, fy, serial),
    -- Rule 46(b): unique within a financial year across all of a seller's series.
    UNIQUE (seller_id, fy, number)
);
CREATE INDEX invoices_seller_date ON invoices (seller_id, invoice_date);

-- The tamper-evident chain: one record per issue and per cancellation, per
-- series-year, each hash covering the record's canonical form and the
-- previous hash. The head is kept on the counter row.
CREATE TABLE chain_records (
    series_id    bigint NOT NULL,
    fy           integer NOT NULL,
    position     bigint NOT NULL CHECK (position > 0),
    kind         text NOT NULL CHECK (kind IN ('issue', 'cancel')),
    serial       bigint NOT NULL,
    recorded_at  timestamptz NOT NULL,
    hash         bytea NOT NULL CHECK (length(hash) = 32),
    PRIMARY KEY (series_id, fy, position)
    -- No foreign keys: records are written under the counter lock, where
    -- every per-row check lengthens the hold; `invoiced verify` reports a
    -- record without its invoice or counter (invoice_missing,
    -- counter_missing).
);
CREATE INDEX chain_records_serial ON chain_records (series_id, fy, serial);

CREATE TABLE api_keys (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    seller_id   bigint NOT NULL REFERENCES sellers (id),
    prefix      text NOT NULL UNIQUE,
    secret_hash bytea NOT NULL,
    scopes      text[] NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz
);

-- Idempotency-Key records (IETF draft). A record is written in the same
-- transaction as the invoice it answers for, so it exists exactly when the
-- invoice does; a replay renders that invoice as it was issued.
CREATE TABLE idempotency_keys (
    seller_id     bigint NOT NULL,
    key           text NOT NULL,
    request_hash  bytea NOT NULL,
    invoice_id    bigint NOT NULL, -- no foreign key: written under the counter lock
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (seller_id, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);

-- +goose Down
DROP TABLE idempotency_keys;
DROP TABLE api_keys;
DROP TABLE chain_records;
DROP TABLE invoices;
DROP TABLE series_counters;
DROP TABLE series;
DROP TABLE sellers;
