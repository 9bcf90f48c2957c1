-- (c) PostgreSQL SEQUENCE: nextval and the insert in one autocommit
-- statement. Not gap-free (a rolled-back nextval is lost): the ceiling.
\set s random(1, :nseries)
INSERT INTO bench.bench_invoice (series, serial, items) VALUES (:s, nextval(('bench.seq_' || :s::integer)::regclass), '[{"description":"Masala chai","hsn":"0902","quantity":"2","unit_price":"10.00","gst_rate":"5"}]');
