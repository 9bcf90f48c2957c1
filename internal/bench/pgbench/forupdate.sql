-- (c) Frappe/ERPNext naming series: SELECT … FOR UPDATE, then UPDATE, then
-- insert, in one transaction.
\set s random(1, :nseries)
BEGIN;
SELECT last_serial FROM bench.bench_counter WHERE series = :s FOR UPDATE \gset
UPDATE bench.bench_counter SET last_serial = last_serial + 1 WHERE series = :s;
INSERT INTO bench.bench_invoice (series, serial, items) VALUES (:s, :last_serial::bigint + 1, '[{"description":"Masala chai","hsn":"0902","quantity":"2","unit_price":"10.00","gst_rate":"5"}]');
COMMIT;
