-- (c) SELECT … FOR UPDATE, then UPDATE, then insert on Citus: as
-- forupdate.sql, every statement naming the seller (one worker, one phase).
\set s random(1, :nseries)
\set seller 1 + (:s - 1) % :nsellers
BEGIN;
SELECT last_serial FROM bench.bench_counter WHERE seller = :seller AND series = :s FOR UPDATE \gset
UPDATE bench.bench_counter SET last_serial = last_serial + 1 WHERE seller = :seller AND series = :s;
INSERT INTO bench.bench_invoice (seller, series, serial, items) VALUES (:seller, :s, :last_serial::bigint + 1, '[{"description":"Masala chai","hsn":"0902","quantity":"2","unit_price":"10.00","gst_rate":"5"}]');
COMMIT;
