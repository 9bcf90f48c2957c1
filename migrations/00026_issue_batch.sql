-- +goose Up
-- invoiced_issue_batch writes one predicted group-commit batch: the same
-- statements as a predicted pipelined transaction (invoice/predict_store.go),
-- in one function call. On Citus it is a distributed function whose
-- distribution argument is p_seller, co-located with series: a call whose
-- seller is a constant is sent whole to the worker that holds the seller's
-- shard group and runs there with local execution, as its own transaction,
-- one coordinator hop instead of one per statement (docs/scale-out.md,
-- "One call per batch"). Every seller of p_sellers must lie in p_seller's
-- shard (the Committer batches per shard); every statement names them.
--
-- Preconditions are checked under the locks, and a failed one raises with
-- the SQLSTATE the Go side classifies, having taken nothing:
--   IV001  a counter row is not in the predicted state (or does not exist)
--   IV002  an idempotency key is held by another transaction
--   IV004  an invoice date is outside the window by the database's clock
--   IV006  a subscribed seller's events need ids the call was not given
--   23505  idempotency_keys_pkey: a key was already used
--   55P03  a counter row's lock was not had within p_lock_timeout
--   IV017  the lease guard: the series is leased to an offline device
-- Event ids are the caller's (taken from events' sequence on the
-- coordinator, so that ids keep one order whichever node inserts): a call
-- for sellers with a live webhook subscribed to invoice.issued uses the
-- first of p_event_ids, one per invoice of those sellers, and raises IV006
-- when they are too few. It returns the invoices' ids in the order of the
-- i_ arrays.
-- +goose StatementBegin
CREATE FUNCTION invoiced_issue_batch(
    p_seller bigint, p_sellers bigint[],
    c_series bigint[], c_fy int[], c_last bigint[], c_len bigint[], c_head bytea[],
    c_new_last bigint[], c_new_date date[], c_new_at timestamptz[], c_new_len bigint[], c_new_head bytea[],
    p_lock_timeout text, p_key_locks text[],
    p_first date, p_last date, p_backdate_days int,
    i_seller bigint[], i_series bigint[], i_fy int[], i_serial bigint[], i_number text[], i_date date[],
    i_at timestamptz[], i_public_id text[], i_bg text[], i_bn text[], i_pos text[], i_onum text[],
    i_odate date[], i_items text[], i_taxable text[], i_cgst text[], i_sgst text[], i_igst text[],
    i_total text[], i_oext text[],
    k_seller bigint[], k_series bigint[], k_fy int[], k_serial bigint[], k_key text[], k_hash bytea[],
    r_series bigint[], r_fy int[], r_position bigint[], r_serial bigint[], r_at timestamptz[],
    r_hash bytea[], r_seller bigint[],
    p_event_ids bigint[]
) RETURNS bigint[]
LANGUAGE plpgsql
-- A generic plan would hide the sellers from Citus' router on the worker.
SET plan_cache_mode = force_custom_plan
AS $$
DECLARE
    ids bigint[];
    ok boolean;
    n int;
    old_timeout text := current_setting('lock_timeout');
BEGIN
    IF cardinality(p_key_locks) > 0 THEN
        SELECT bool_and(pg_try_advisory_xact_lock(hashtextextended(k, 0))) INTO ok FROM unnest(p_key_locks) AS u(k);
        IF ok IS NOT TRUE THEN
            RAISE EXCEPTION USING ERRCODE = 'IV002', MESSAGE = 'an idempotency key is held by another transaction';
        END IF;
    END IF;
    IF p_backdate_days IS NOT NULL THEN
        IF NOT (p_first >= (clock_timestamp() AT TIME ZONE 'Asia/Kolkata')::date - p_backdate_days
                AND p_last <= (clock_timestamp() AT TIME ZONE 'Asia/Kolkata')::date) THEN
            RAISE EXCEPTION USING ERRCODE = 'IV004', MESSAGE = 'an invoice date is outside the window';
        END IF;
    END IF;
    IF p_lock_timeout IS NOT NULL THEN
        PERFORM set_config('lock_timeout', p_lock_timeout, true);
    END IF;
    -- ORDER BY sits below the row locking, so rows are locked in key order.
    SELECT count(*) = cardinality(c_series) AND coalesce(bool_and(r.last_serial = u.last AND r.chain_length = u.len
            AND r.chain_head IS NOT DISTINCT FROM u.head), false)
        INTO ok
        FROM (SELECT c.series_id, c.fy, c.last_serial, c.chain_length, c.chain_head
              FROM series_counters c JOIN unnest(c_series, c_fy) AS k(series_id, fy)
                ON c.series_id = k.series_id AND c.fy = k.fy
              WHERE c.seller_id = ANY (p_sellers)
              ORDER BY c.series_id, c.fy FOR UPDATE OF c) r
        JOIN unnest(c_series, c_fy, c_last, c_len, c_head) AS u(series_id, fy, last, len, head)
          ON r.series_id = u.series_id AND r.fy = u.fy;
    IF ok IS NOT TRUE THEN
        RAISE EXCEPTION USING ERRCODE = 'IV001', MESSAGE = 'counter row moved since it was predicted';
    END IF;
    PERFORM set_config('lock_timeout', old_timeout, true);
    UPDATE series_counters c SET last_serial = u.last, last_invoice_date = u.d, last_issued_at = u.at,
            chain_length = u.len, chain_head = u.head
        FROM unnest(c_series, c_fy, c_new_last, c_new_date, c_new_at, c_new_len, c_new_head)
            AS u(series_id, fy, last, d, at, len, head)
        WHERE c.series_id = u.series_id AND c.fy = u.fy AND c.seller_id = ANY (p_sellers);

    WITH ins AS (
        INSERT INTO invoices (seller_id, series_id, fy, serial, number, invoice_date, issued_at, public_id,
            buyer_gstin, buyer_name, place_of_supply, original_number, original_date, items,
            taxable, cgst, sgst, igst, total, original_external_reason)
        SELECT u.seller_id, u.series_id, u.fy, u.serial, u.number, u.d, u.at, u.public_id,
            u.bg, u.bn, u.pos, u.onum, u.odate, u.items::jsonb,
            u.taxable::numeric, u.cgst::numeric, u.sgst::numeric, u.igst::numeric, u.total::numeric, u.oext
        FROM unnest(i_seller, i_series, i_fy, i_serial, i_number, i_date, i_at, i_public_id, i_bg, i_bn, i_pos,
            i_onum, i_odate, i_items, i_taxable, i_cgst, i_sgst, i_igst, i_total, i_oext)
            AS u(seller_id, series_id, fy, serial, number, d, at, public_id, bg, bn, pos, onum, odate, items,
            taxable, cgst, sgst, igst, total, oext)
        RETURNING id, series_id, fy, serial
    )
    SELECT array_agg(ins.id ORDER BY o.n) INTO ids
        FROM ins JOIN unnest(i_series, i_fy, i_serial) WITH ORDINALITY AS o(series_id, fy, serial, n)
          ON o.series_id = ins.series_id AND o.fy = ins.fy AND o.serial = ins.serial;

    IF cardinality(k_key) > 0 THEN
        INSERT INTO idempotency_keys (seller_id, key, request_hash, invoice_id)
            SELECT k.seller_id, k.key, k.hash, i.id
            FROM unnest(k_seller, k_series, k_fy, k_serial, k_key, k_hash) AS k(seller_id, series_id, fy, serial, key, hash)
            JOIN unnest(ids, i_series, i_fy, i_serial) AS i(id, series_id, fy, serial)
              ON i.series_id = k.series_id AND i.fy = k.fy AND i.serial = k.serial;
    END IF;

    INSERT INTO chain_records (series_id, fy, position, kind, serial, recorded_at, hash, seller_id)
        SELECT u.series_id, u.fy, u.position, 'issue', u.serial, u.at, u.hash, u.seller_id
        FROM unnest(r_series, r_fy, r_position, r_serial, r_at, r_hash, r_seller)
            AS u(series_id, fy, position, serial, at, hash, seller_id);

    -- The outbox (docs/webhooks.md): an event for each invoice of a seller
    -- with a live webhook subscribed, read in this transaction.
    SELECT count(*) INTO n
        FROM unnest(i_seller) AS u(seller_id)
        WHERE EXISTS (SELECT 1 FROM webhooks w WHERE w.seller_id = u.seller_id AND w.seller_id = ANY (p_sellers)
            AND w.deleted_at IS NULL AND 'invoice.issued' = ANY (w.events));
    IF n > 0 THEN
        IF n > coalesce(cardinality(p_event_ids), 0) THEN
            RAISE EXCEPTION USING ERRCODE = 'IV006', MESSAGE = 'a subscribed seller''s events need ids';
        END IF;
        WITH ev AS (
            SELECT i.seller_id, i.id AS invoice_id, i.at, row_number() OVER (ORDER BY i.n) AS n
            FROM unnest(i_seller, ids, i_at) WITH ORDINALITY AS i(seller_id, id, at, n)
            WHERE EXISTS (SELECT 1 FROM webhooks w WHERE w.seller_id = i.seller_id AND w.seller_id = ANY (p_sellers)
                AND w.deleted_at IS NULL AND 'invoice.issued' = ANY (w.events))
        ), inserted AS (
            INSERT INTO events (id, seller_id, type, invoice_id, created_at) OVERRIDING SYSTEM VALUE
            SELECT p_event_ids[ev.n], ev.seller_id, 'invoice.issued', ev.invoice_id, ev.at FROM ev
            RETURNING id, seller_id
        )
        INSERT INTO webhook_deliveries (event_id, webhook_id, seller_id)
            SELECT e.id, w.id, e.seller_id FROM inserted e
            JOIN webhooks w ON w.seller_id = e.seller_id AND w.seller_id = ANY (p_sellers)
                AND w.deleted_at IS NULL AND 'invoice.issued' = ANY (w.events);
    END IF;
    RETURN ids;
END
$$;
-- +goose StatementEnd
-- Binaries of 00023 serve this schema: they never call the function.
INSERT INTO schema_compat (version, serves_from) VALUES (26, 23);

-- +goose Down
DROP FUNCTION invoiced_issue_batch(bigint, bigint[], bigint[], int[], bigint[], bigint[], bytea[], bigint[], date[],
    timestamptz[], bigint[], bytea[], text, text[], date, date, int, bigint[], bigint[], int[], bigint[], text[],
    date[], timestamptz[], text[], text[], text[], text[], text[], date[], text[], text[], text[], text[], text[],
    text[], text[], bigint[], bigint[], int[], bigint[], text[], bytea[], bigint[], int[], bigint[], bigint[],
    timestamptz[], bytea[], bigint[], bigint[]);
DELETE FROM schema_compat WHERE version = 26;
