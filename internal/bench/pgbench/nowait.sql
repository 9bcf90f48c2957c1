-- (c) Odoo ir.sequence no_gap: SELECT … FOR UPDATE NOWAIT, then UPDATE, then
-- insert. A second writer fails at once with "could not obtain lock on
-- row"; pgbench 15 aborts that client (counted as aborted clients).
\set s random(1, :nseries)
BEGIN;
SELECT last_serial FROM bench.bench_counter WHERE series = :s FOR UPDATE NOWAIT \gset
UPDATE bench.bench_counter SET last_serial = last_serial + 1 WHERE series = :s;
INSERT INTO bench.bench_invoice (series, serial, items) VALUES (:s, :last_serial::bigint + 1, '[{"description":"Masala chai","hsn":"0902","quantity":"2","unit_price":"10.00","gst_rate":"5"}]');
COMMIT;
