-- (b) one statement: the counter update and the insert in one autocommit
-- CTE, one round trip: the best a one-invoice transaction can do.
\set s random(1, :nseries)
WITH c AS (UPDATE bench.bench_counter SET last_serial = last_serial + 1 WHERE series = :s RETURNING series, last_serial) INSERT INTO bench.bench_invoice (series, serial, items) SELECT series, last_serial, '[{"description":"Masala chai","hsn":"0902","quantity":"2","unit_price":"10.00","gst_rate":"5"}]' FROM c;
