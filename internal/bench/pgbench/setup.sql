-- Tables of the pgbench baselines, in their own schema so they never touch
-- invoiced's. Reset before every baseline run; the harness then seeds one
-- counter row (and one sequence) per series.
DROP SCHEMA IF EXISTS bench CASCADE;
CREATE SCHEMA bench;
-- The classic counter row: one per series, locked by every issue.
CREATE TABLE bench.bench_counter (
    series       integer PRIMARY KEY,
    last_serial  bigint NOT NULL
);
-- django-sequences' table: rows are created by the first upsert.
CREATE TABLE bench.bench_django_seq (
    name  text PRIMARY KEY,
    last  bigint NOT NULL
);
-- The invoice: unique per (series, serial) like invoiced's, with a small
-- JSON payload.
CREATE TABLE bench.bench_invoice (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    series      integer NOT NULL,
    serial      bigint NOT NULL,
    issued_at   timestamptz NOT NULL DEFAULT now(),
    items       jsonb NOT NULL,
    UNIQUE (series, serial)
);
