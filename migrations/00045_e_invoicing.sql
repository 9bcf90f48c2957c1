-- +goose Up
-- E-invoicing (docs/e-invoice.md): every B2B invoice, credit and debit
-- note of a seller that e-invoices is registered at the IRP exactly once.
--
-- sellers: the switch (e_invoicing) and the seller's postal address in the
-- parts an e-invoice's SellerDtls needs (Addr1, Addr2, Loc, Pin; the state
-- is the GSTIN's). The one-line address (00009) stays: binaries before
-- this one print it, and this one keeps it written (expand; it can go once
-- no binary reads it).
--
-- webhooks.kind: an e-invoicing seller is subscribed to its own events. Its
-- row of kind 'irp' makes every path that issues or cancels (the invoice
-- insert's CTEs, the routed form, the delegated invoiced_issue_rows_v2,
-- offline uploads, cancels) record the event and a delivery to it in the
-- issuing transaction, with no change to any of them; the IRP workers take
-- those deliveries, the HTTP deliverer only kind 'http'.
--
-- e_invoices: one row per invoice that needs or needed the IRP — its
-- status, what the IRP answered, and the work left (next_at: when a worker
-- looks at it next; NULL: nothing left). sent records, before a
-- registration request leaves, that the IRP may hold an IRN for it: a
-- cancel concludes "no IRN" only while sent is false. A worker claims a
-- row by moving next_at past its lease and counting attempts up, and
-- records only the attempt it claimed; wakes counts the events that made
-- the row due again meanwhile (a cancel), so that a finishing attempt
-- leaves it due instead of done.
--
-- Events of e-invoice changes (invoice.e_invoice_registered, _failed,
-- _cancelled) for webhooks: the type checks widen, NOT VALID (every
-- existing row passes the narrower check), so nothing is scanned under the
-- lock.
SET LOCAL lock_timeout = '10s';
ALTER TABLE sellers
    ADD COLUMN address_line1 text NOT NULL DEFAULT '',
    ADD COLUMN address_line2 text NOT NULL DEFAULT '',
    ADD COLUMN address_city text NOT NULL DEFAULT '',
    ADD COLUMN address_pin text NOT NULL DEFAULT '',
    ADD COLUMN e_invoicing boolean NOT NULL DEFAULT false;

ALTER TABLE webhooks ADD COLUMN kind text NOT NULL DEFAULT 'http';
ALTER TABLE webhooks ADD CONSTRAINT webhooks_kind_check CHECK (kind IN ('http', 'irp')) NOT VALID;
ALTER TABLE webhooks DROP CONSTRAINT webhooks_events_check,
    ADD CONSTRAINT webhooks_events_check CHECK (cardinality(events) > 0 AND events <@ ARRAY['invoice.issued',
        'invoice.cancelled', 'invoice.e_invoice_registered', 'invoice.e_invoice_failed',
        'invoice.e_invoice_cancelled']) NOT VALID;
ALTER TABLE events DROP CONSTRAINT events_type_check,
    ADD CONSTRAINT events_type_check CHECK (type IN ('invoice.issued', 'invoice.cancelled',
        'invoice.e_invoice_registered', 'invoice.e_invoice_failed', 'invoice.e_invoice_cancelled')) NOT VALID;

CREATE TABLE e_invoices (
    invoice_id       bigint NOT NULL,
    seller_id        bigint NOT NULL,
    status           text NOT NULL CHECK (status IN ('pending', 'registered', 'failed', 'cancelled')),
    irn              text,
    ack_no           text,
    ack_date         timestamptz,
    signed_invoice   text,
    signed_qr_code   text,
    error            text,
    sent             boolean NOT NULL DEFAULT false,
    attempts         integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_at          timestamptz,
    wakes            integer NOT NULL DEFAULT 0,
    -- A cancel asked through the API whose answer from the IRP was lost:
    -- the worker asks again and then cancels the invoice (reason 1-4, the
    -- remark sent, the invoice's own reason).
    cancel_code      smallint CHECK (cancel_code BETWEEN 1 AND 4),
    cancel_remark    text,
    cancel_reason    text,
    irn_cancelled_at timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (invoice_id, seller_id),
    FOREIGN KEY (invoice_id, seller_id) REFERENCES invoices (id, seller_id)
);
CREATE INDEX e_invoices_due ON e_invoices (next_at) WHERE next_at IS NOT NULL;
CREATE UNIQUE INDEX e_invoices_irn ON e_invoices (irn, seller_id) WHERE irn IS NOT NULL;
CREATE INDEX e_invoices_problems ON e_invoices (seller_id, updated_at) WHERE error IS NOT NULL;

-- Binaries of 00023 serve this schema: they neither read nor write the new
-- columns and table. While one runs its webhook deliverer, it also takes
-- the deliveries of kind 'irp' and fails to post them ("irp:" is not a URL
-- it can dial); this binary's IRP workers take them whatever their
-- attempts, so nothing is lost (docs/e-invoice.md, "Rolling deploy").
INSERT INTO schema_compat (version, serves_from) VALUES (45, 23);

-- +goose Down
SET LOCAL lock_timeout = '10s';
DELETE FROM schema_compat WHERE version = 45;
DROP TABLE e_invoices;
DELETE FROM webhook_deliveries d USING webhooks w WHERE w.id = d.webhook_id AND w.kind = 'irp';
DELETE FROM webhooks WHERE kind = 'irp';
DELETE FROM events WHERE type NOT IN ('invoice.issued', 'invoice.cancelled');
ALTER TABLE events DROP CONSTRAINT events_type_check,
    ADD CONSTRAINT events_type_check CHECK (type IN ('invoice.issued', 'invoice.cancelled'));
UPDATE webhooks SET events = ARRAY(SELECT unnest(events) INTERSECT SELECT unnest(ARRAY['invoice.issued', 'invoice.cancelled']));
DELETE FROM webhook_deliveries d USING webhooks w WHERE w.id = d.webhook_id AND cardinality(w.events) = 0;
DELETE FROM webhooks WHERE cardinality(events) = 0;
ALTER TABLE webhooks DROP CONSTRAINT webhooks_events_check,
    ADD CONSTRAINT webhooks_events_check CHECK (cardinality(events) > 0
        AND events <@ ARRAY['invoice.issued', 'invoice.cancelled']);
ALTER TABLE webhooks DROP CONSTRAINT webhooks_kind_check, DROP COLUMN kind;
ALTER TABLE sellers DROP COLUMN address_line1, DROP COLUMN address_line2, DROP COLUMN address_city,
    DROP COLUMN address_pin, DROP COLUMN e_invoicing;
