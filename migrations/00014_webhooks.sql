-- +goose Up
-- Webhooks and their transactional outbox. An event row is written by the
-- transaction that issues or cancels its invoice (an event exists if and
-- only if its change committed), for a seller with a live webhook that
-- subscribes to its type, together with one delivery row per such
-- webhook. Delivery workers claim delivery rows with FOR UPDATE SKIP
-- LOCKED. See docs/webhooks.md.
CREATE TABLE webhooks (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    public_id   text NOT NULL UNIQUE,
    seller_id   bigint NOT NULL REFERENCES sellers (id),
    url         text NOT NULL CHECK (length(url) BETWEEN 8 AND 2048),
    events      text[] NOT NULL CHECK (cardinality(events) > 0
                    AND events <@ ARRAY['invoice.issued', 'invoice.cancelled']),
    secret      text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    deleted_at  timestamptz
);
CREATE INDEX webhooks_live ON webhooks (seller_id) WHERE deleted_at IS NULL;

CREATE TABLE events (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    seller_id   bigint NOT NULL,
    type        text NOT NULL CHECK (type IN ('invoice.issued', 'invoice.cancelled')),
    invoice_id  bigint NOT NULL,
    created_at  timestamptz NOT NULL,
    UNIQUE (invoice_id, type)
);
CREATE INDEX events_seller ON events (seller_id, id);
CREATE INDEX events_created ON events (created_at);

CREATE TABLE webhook_deliveries (
    event_id      bigint NOT NULL REFERENCES events (id) ON DELETE CASCADE,
    webhook_id    bigint NOT NULL REFERENCES webhooks (id),
    state         text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts      integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_at       timestamptz NOT NULL DEFAULT now(),
    last_status   integer,
    last_error    text,
    delivered_at  timestamptz,
    PRIMARY KEY (event_id, webhook_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_at) WHERE state = 'pending';

-- Binaries of 00013 still serve this schema; the invoices they issue
-- during a rolling deploy have no events (docs/webhooks.md).
INSERT INTO schema_compat (version, serves_from) VALUES (14, 13);

-- +goose Down
DELETE FROM schema_compat WHERE version = 14;
DROP TABLE webhook_deliveries;
DROP TABLE events;
DROP TABLE webhooks;
