-- The baselines' tables on a Citus coordinator: as setup.sql, with the
-- seller as the distribution column of both, co-located, as invoiced
-- distributes its own tables (docs/scale-out.md). Every key leads with the
-- seller, since Citus enforces a key only when it holds the distribution
-- column; the invoice has no identity column, whose sequence would make
-- Citus run an INSERT … SELECT through the coordinator. The harness seeds
-- one counter row per series, series s belonging to seller 1 + (s-1) %
-- nsellers, as the scripts compute it.
DROP SCHEMA IF EXISTS bench CASCADE;
CREATE SCHEMA bench;
CREATE TABLE bench.bench_counter (
    seller       integer NOT NULL,
    series       integer NOT NULL,
    last_serial  bigint NOT NULL,
    PRIMARY KEY (seller, series)
);
CREATE TABLE bench.bench_invoice (
    seller      integer NOT NULL,
    series      integer NOT NULL,
    serial      bigint NOT NULL,
    issued_at   timestamptz NOT NULL DEFAULT now(),
    items       jsonb NOT NULL,
    PRIMARY KEY (seller, series, serial)
);
SELECT create_distributed_table('bench.bench_counter', 'seller');
SELECT create_distributed_table('bench.bench_invoice', 'seller', colocate_with => 'bench.bench_counter');
