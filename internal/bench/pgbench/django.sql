-- (c) django-sequences: upsert the sequence row in the caller's
-- transaction, then insert the invoice.
\set s random(1, :nseries)
BEGIN;
INSERT INTO bench.bench_django_seq AS q (name, last) VALUES ('invoice-' || :s::integer, 1) ON CONFLICT (name) DO UPDATE SET last = q.last + 1 RETURNING last \gset
INSERT INTO bench.bench_invoice (series, serial, items) VALUES (:s, :last, '[{"description":"Masala chai","hsn":"0902","quantity":"2","unit_price":"10.00","gst_rate":"5"}]');
COMMIT;
