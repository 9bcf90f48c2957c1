-- (a) interactive: BEGIN; UPDATE … RETURNING; INSERT; COMMIT, each its own
-- round trip, the row lock held across them (how ORMs run it).
\set s random(1, :nseries)
BEGIN;
UPDATE bench.bench_counter SET last_serial = last_serial + 1 WHERE series = :s RETURNING last_serial \gset
INSERT INTO bench.bench_invoice (series, serial, items) VALUES (:s, :last_serial, '[{"description":"Masala chai","hsn":"0902","quantity":"2","unit_price":"10.00","gst_rate":"5"}]');
COMMIT;
