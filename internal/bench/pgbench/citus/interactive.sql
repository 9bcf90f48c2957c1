-- (a) interactive on Citus: as interactive.sql, every statement naming
-- the seller, so the transaction runs on the seller's worker and commits
-- there in one phase.
\set s random(1, :nseries)
\set seller 1 + (:s - 1) % :nsellers
BEGIN;
UPDATE bench.bench_counter SET last_serial = last_serial + 1 WHERE seller = :seller AND series = :s RETURNING last_serial \gset
INSERT INTO bench.bench_invoice (seller, series, serial, items) VALUES (:seller, :s, :last_serial, '[{"description":"Masala chai","hsn":"0902","quantity":"2","unit_price":"10.00","gst_rate":"5"}]');
COMMIT;
