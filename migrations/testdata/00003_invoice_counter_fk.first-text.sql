-- +goose Up
-- Every invoice now references the counter row that numbered it: its
-- series, financial year and seller. Until now two foreign keys checked
-- the seller and the series each on its own, so an invoice could name a
-- series of another seller, or a series-year without a counter, and each
-- inserted invoice ran two referential checks, each locking a parent row
-- (FOR KEY SHARE): one series row per series in a group-commit batch,
-- written to the WAL every batch. The counter row is already locked and
-- rewritten by the issuing transaction, so checking it costs no lock of
-- its own: a batch over 28 series spends about 0.1 ms less (pgbench); over
-- HTTP the difference stays inside the benchmark's noise (docs/bench.md).
-- What counts more: a counter row that numbered invoices can no longer be
-- deleted (which would restart its numbering), and an invoice cannot exist
-- outside the series-year that numbered it.
-- The counter row gains seller_id (from its series, checked by a key to
-- series (id, seller_id)) so that the key can cover the seller too.
--
-- The invoice key is added NOT VALID, so this transaction scans no
-- invoices and holds its locks (ACCESS EXCLUSIVE on invoices, series,
-- sellers and series_counters, for swapping keys) only briefly; new rows
-- are checked from now on. 00004 validates the existing ones without
-- blocking writes. A lock not had within 10 s (a long transaction on these
-- tables) fails the migration instead of queueing every request behind
-- it: run it again later.
SET LOCAL lock_timeout = '10s';
ALTER TABLE series ADD CONSTRAINT series_id_seller_id_key UNIQUE (id, seller_id);
ALTER TABLE series_counters ADD COLUMN seller_id bigint;
UPDATE series_counters c SET seller_id = s.seller_id FROM series s WHERE s.id = c.series_id;
ALTER TABLE series_counters
    ALTER COLUMN seller_id SET NOT NULL,
    DROP CONSTRAINT series_counters_series_id_fkey,
    ADD CONSTRAINT series_counters_series_owner_fkey FOREIGN KEY (series_id, seller_id) REFERENCES series (id, seller_id),
    ADD CONSTRAINT series_counters_owner_key UNIQUE (series_id, fy, seller_id);
ALTER TABLE invoices
    DROP CONSTRAINT invoices_seller_id_fkey,
    DROP CONSTRAINT invoices_series_id_fkey,
    ADD CONSTRAINT invoices_counter_fkey FOREIGN KEY (series_id, fy, seller_id)
        REFERENCES series_counters (series_id, fy, seller_id) NOT VALID;

-- +goose Down
SET LOCAL lock_timeout = '10s';
ALTER TABLE invoices
    DROP CONSTRAINT invoices_counter_fkey,
    ADD CONSTRAINT invoices_seller_id_fkey FOREIGN KEY (seller_id) REFERENCES sellers (id),
    ADD CONSTRAINT invoices_series_id_fkey FOREIGN KEY (series_id) REFERENCES series (id);
ALTER TABLE series_counters
    DROP CONSTRAINT series_counters_owner_key,
    DROP CONSTRAINT series_counters_series_owner_fkey,
    ADD CONSTRAINT series_counters_series_id_fkey FOREIGN KEY (series_id) REFERENCES series (id),
    DROP COLUMN seller_id;
ALTER TABLE series DROP CONSTRAINT series_id_seller_id_key;
