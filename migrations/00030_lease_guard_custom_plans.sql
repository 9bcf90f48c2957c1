-- +goose Up
-- The lease guard (00015, 00020) plans its read of series_leases with the
-- values, every time. On Citus the trigger runs on the worker, in the
-- backend that executes the shard's UPDATE or INSERT, and its SELECT names
-- the seller through NEW, a parameter. After five executions plpgsql's
-- plan cache chose a generic plan, which leaves Citus to find the shard at
-- execution (deferred pruning); Citus 13.2 then builds the local shard
-- plan again on every execution and appends it to the cached plan, which
-- is never freed: a worker backend grew by about 50 kB per counter write
-- (400 MB in ten seconds of one client's writes, measured with
-- pg_log_backend_memory_contexts), until the operating system kills it.
-- The Committer's own transactions escaped, as they say SET LOCAL
-- plan_cache_mode = force_custom_plan and Citus passes that on; cancels,
-- device uploads, leases and library callers did not. A custom plan is
-- made for one execution and freed with it. On plain PostgreSQL the read
-- is planned on each call (tens of microseconds, once per counter row a
-- transaction writes). A later CREATE OR REPLACE of invoiced_lease_guard
-- must say SET plan_cache_mode = force_custom_plan again: it replaces the
-- function's settings.
ALTER FUNCTION invoiced_lease_guard() SET plan_cache_mode = force_custom_plan;
-- Every binary of 00023 serves this schema: the function's body and
-- results are unchanged.
INSERT INTO schema_compat (version, serves_from) VALUES (30, 23);

-- +goose Down
DELETE FROM schema_compat WHERE version = 30;
ALTER FUNCTION invoiced_lease_guard() RESET plan_cache_mode;
