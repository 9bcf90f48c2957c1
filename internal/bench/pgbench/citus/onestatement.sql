-- (b) one statement on Citus: as onestatement.sql, naming the seller.
-- Citus runs the CTE's UPDATE on the seller's worker, pulls its row to the
-- coordinator and copies the invoice back, a two-phase commit on that one
-- worker: the form Citus gives this statement, measured as it is.
\set s random(1, :nseries)
\set seller 1 + (:s - 1) % :nsellers
WITH c AS (UPDATE bench.bench_counter SET last_serial = last_serial + 1 WHERE seller = :seller AND series = :s RETURNING seller, series, last_serial) INSERT INTO bench.bench_invoice (seller, series, serial, items) SELECT seller, series, last_serial, '[{"description":"Masala chai","hsn":"0902","quantity":"2","unit_price":"10.00","gst_rate":"5"}]' FROM c;
