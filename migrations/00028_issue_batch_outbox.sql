-- +goose Up
-- invoiced_issue_batch (00027) with the outbox read once: 00027 counted the
-- invoices of subscribed sellers in one statement and then asked again,
-- invoice by invoice, while it inserted their events one statement each.
-- On Citus every statement of the function is planned twice on the worker,
-- so a call for a subscribed seller paid two statements per invoice. Now
-- the subscribed sellers are read once, their events are one multi-row
-- INSERT … VALUES and their deliveries one INSERT … SELECT. Same
-- arguments, SQLSTATEs and result; CREATE OR REPLACE keeps the function
-- distributed on Citus.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION invoiced_issue_batch(
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
    ids bigint[] := '{}';
    ok boolean;
    i int;
    j int;
    r record;
    k_ids bigint[] := '{}';
    subs bigint[];
    ev int[];
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
    -- The counter rows locked, checked against the prediction and written
    -- in one statement: a row that moved is not updated, and the count
    -- tells. (One statement, not a SELECT … FOR UPDATE then an UPDATE:
    -- on Citus every statement here is planned twice, as a distributed
    -- query and as its shard's.)
    UPDATE series_counters c SET last_serial = u.new_last, last_invoice_date = u.d, last_issued_at = u.at,
            chain_length = u.new_len, chain_head = u.new_head
        FROM unnest(c_series, c_fy, c_last, c_len, c_head, c_new_last, c_new_date, c_new_at, c_new_len, c_new_head)
            AS u(series_id, fy, last, len, head, new_last, d, at, new_len, new_head)
        WHERE c.series_id = u.series_id AND c.fy = u.fy AND c.seller_id = ANY (p_sellers)
            AND c.last_serial = u.last AND c.chain_length = u.len AND c.chain_head IS NOT DISTINCT FROM u.head;
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n <> cardinality(c_series) THEN
        RAISE EXCEPTION USING ERRCODE = 'IV001', MESSAGE = 'counter row moved since it was predicted';
    END IF;
    PERFORM set_config('lock_timeout', old_timeout, true);

    -- One multi-row INSERT … VALUES per table: Citus routes it to the
    -- local shard. It cannot push down an INSERT … SELECT from unnest, and
    -- runs one by pulling the rows up and copying them in; a statement per
    -- row costs a distributed plan and a shard plan each.
    FOR r IN EXECUTE 'INSERT INTO invoices (seller_id, series_id, fy, serial, number, invoice_date, issued_at, public_id,
            buyer_gstin, buyer_name, place_of_supply, original_number, original_date, items,
            taxable, cgst, sgst, igst, total, original_external_reason) VALUES '
        || (SELECT string_agg(format('($1[%1$s], $2[%1$s], $3[%1$s], $4[%1$s], $5[%1$s], $6[%1$s], $7[%1$s], $8[%1$s], $9[%1$s], $10[%1$s],
            $11[%1$s], $12[%1$s], $13[%1$s], $14[%1$s]::jsonb, $15[%1$s]::numeric, $16[%1$s]::numeric, $17[%1$s]::numeric,
            $18[%1$s]::numeric, $19[%1$s]::numeric, $20[%1$s])', g), ', ') FROM generate_series(1, cardinality(i_seller)) g)
        || ' RETURNING id, series_id, fy, serial'
        USING i_seller, i_series, i_fy, i_serial, i_number, i_date, i_at, i_public_id, i_bg, i_bn, i_pos,
            i_onum, i_odate, i_items, i_taxable, i_cgst, i_sgst, i_igst, i_total, i_oext
    LOOP
        FOR i IN 1 .. cardinality(i_seller) LOOP
            IF i_series[i] = r.series_id AND i_fy[i] = r.fy AND i_serial[i] = r.serial THEN
                ids[i] := r.id;
            END IF;
        END LOOP;
    END LOOP;
    IF cardinality(k_key) > 0 THEN
        FOR j IN 1 .. cardinality(k_key) LOOP
            FOR i IN 1 .. cardinality(i_seller) LOOP
                IF i_series[i] = k_series[j] AND i_fy[i] = k_fy[j] AND i_serial[i] = k_serial[j] THEN
                    k_ids[j] := ids[i];
                END IF;
            END LOOP;
        END LOOP;
        EXECUTE 'INSERT INTO idempotency_keys (seller_id, key, request_hash, invoice_id) VALUES '
            || (SELECT string_agg(format('($1[%1$s], $2[%1$s], $3[%1$s], $4[%1$s])', g), ', ') FROM generate_series(1, cardinality(k_key)) g)
            USING k_seller, k_key, k_hash, k_ids;
    END IF;
    EXECUTE 'INSERT INTO chain_records (series_id, fy, position, kind, serial, recorded_at, hash, seller_id) VALUES '
        || (SELECT string_agg(format('($1[%1$s], $2[%1$s], $3[%1$s], ''issue'', $4[%1$s], $5[%1$s], $6[%1$s], $7[%1$s])', g), ', ')
            FROM generate_series(1, cardinality(r_series)) g)
        USING r_series, r_fy, r_position, r_serial, r_at, r_hash, r_seller;

    -- The outbox (docs/webhooks.md): an event for each invoice of a seller
    -- with a live webhook subscribed, read once in this transaction; the
    -- events in one multi-row INSERT, their deliveries in one INSERT …
    -- SELECT between co-located tables (pushed down to the shard).
    subs := ARRAY(SELECT DISTINCT w.seller_id FROM webhooks w
        WHERE w.seller_id = ANY (p_sellers) AND w.deleted_at IS NULL AND 'invoice.issued' = ANY (w.events));
    IF cardinality(subs) > 0 THEN
        ev := ARRAY(SELECT g FROM generate_series(1, cardinality(ids)) g WHERE i_seller[g] = ANY (subs) ORDER BY g);
        IF cardinality(ev) > coalesce(cardinality(p_event_ids), 0) THEN
            RAISE EXCEPTION USING ERRCODE = 'IV006', MESSAGE = 'a subscribed seller''s events need ids';
        END IF;
        EXECUTE 'INSERT INTO events (id, seller_id, type, invoice_id, created_at) OVERRIDING SYSTEM VALUE VALUES '
            || (SELECT string_agg(format('($1[%1$s], $2[$5[%1$s]], ''invoice.issued'', $3[$5[%1$s]], $4[$5[%1$s]])', k), ', ')
                FROM generate_series(1, cardinality(ev)) k)
            USING p_event_ids, i_seller, ids, i_at, ev;
        INSERT INTO webhook_deliveries (event_id, webhook_id, seller_id)
            SELECT e.id, w.id, e.seller_id FROM events e
            JOIN webhooks w ON w.seller_id = e.seller_id
            WHERE e.seller_id = ANY (subs) AND w.seller_id = ANY (subs)
                AND e.id = ANY (p_event_ids[1:cardinality(ev)]) AND w.deleted_at IS NULL AND 'invoice.issued' = ANY (w.events);
    END IF;
    RETURN ids;
END
$$;
-- +goose StatementEnd
-- Binaries of 00023 serve this schema: they never call the function.
INSERT INTO schema_compat (version, serves_from) VALUES (28, 23);

-- +goose Down
DELETE FROM schema_compat WHERE version = 28;
-- The function keeps this body: 00027's behaves the same, and 00026's Down
-- drops it.
