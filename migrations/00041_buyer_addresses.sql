-- +goose Up
-- CGST Rule 46(d)-(f): an invoice carries the buyer's address and the
-- address of delivery (docs/receipts.md, "Buyer and delivery address").
-- Each is one JSON object, {"line1", "line2", "city", "pin", "state"} and
-- {"name", "address": {…}}, NULL when the invoice has none: the parts an
-- e-invoice's BuyerDtls and ShipDtls need, read and written whole, never
-- searched. Adding nullable columns without a default rewrites nothing.
--
-- invoiced_issue_rows_v2 is invoiced_issue_rows (00029) with the two
-- columns as two more invoice arguments (i_baddr, i_ship: JSON text or
-- NULL), for the delegated batch (docs/scale-out.md, "One call per
-- batch"). invoiced_issue_rows stays for the binaries of 00029 to 00040
-- (expand; a later migration drops it): they write no addresses, and
-- read none.
SET LOCAL lock_timeout = '10s';
ALTER TABLE invoices ADD COLUMN buyer_address jsonb, ADD COLUMN ship_to jsonb;

-- +goose StatementBegin
CREATE FUNCTION invoiced_issue_rows_v2(
    p_seller bigint,
    c_seller bigint[], c_series bigint[], c_fy int[], c_last bigint[], c_len bigint[], c_head bytea[],
    c_new_last bigint[], c_new_date date[], c_new_at timestamptz[], c_new_len bigint[], c_new_head bytea[],
    p_lock_timeout text, p_key_locks text[],
    p_first date, p_last date, p_backdate_days int,
    i_seller bigint[], i_series bigint[], i_fy int[], i_serial bigint[], i_number text[], i_date date[],
    i_at timestamptz[], i_public_id text[], i_bg text[], i_bn text[], i_pos text[], i_onum text[],
    i_odate date[], i_items text[], i_taxable text[], i_cgst text[], i_sgst text[], i_igst text[],
    i_total text[], i_oext text[], i_baddr text[], i_ship text[],
    k_invoice int[], k_key text[], k_hash bytea[],
    r_series bigint[], r_fy int[], r_position bigint[], r_serial bigint[], r_at timestamptz[],
    r_hash bytea[], r_seller bigint[],
    p_event_ids bigint[]
) RETURNS bigint[]
LANGUAGE plpgsql
-- Custom plans: a statement that names its seller through a variable is
-- pruned to its shard by Citus only at execution (deferred pruning), and
-- under a generic plan Citus 13.2 then builds the shard's plan again on
-- every execution and keeps each one in the cached plan, never freed:
-- about 50 kB a statement (00030 says more). A custom plan is made for one
-- execution and freed with it.
SET plan_cache_mode = force_custom_plan
AS $$
DECLARE
    n int := cardinality(i_seller);
    ids bigint[] := '{}';
    seq regclass := pg_get_serial_sequence('invoices', 'id')::regclass;
    ok boolean;
    i int;
    j int;
    k int;
    s bigint;
    v_id bigint;
    e bigint;
    seen bigint[] := '{}';
    subs bigint[] := '{}';
    hook_seller bigint[] := '{}';
    hook_id bigint[] := '{}';
    hooks bigint[];
    old_timeout text := current_setting('lock_timeout');
    -- One row's values, copied out of the arrays: the statements take
    -- plain variables only (Citus 13.2 crashes deparsing an UPDATE whose
    -- SET takes an array element).
    v_series bigint;
    v_fy int;
    v_last bigint;
    v_len bigint;
    v_head bytea;
    v_new_last bigint;
    v_date date;
    v_at timestamptz;
    v_new_len bigint;
    v_new_head bytea;
    v_serial bigint;
    v_number text;
    v_public_id text;
    v_bg text;
    v_bn text;
    v_pos text;
    v_onum text;
    v_odate date;
    v_items jsonb;
    v_taxable numeric;
    v_cgst numeric;
    v_sgst numeric;
    v_igst numeric;
    v_total numeric;
    v_oext text;
    v_baddr jsonb;
    v_ship jsonb;
    v_key text;
    v_hash bytea;
    v_position bigint;
BEGIN
    IF cardinality(p_key_locks) > 0 THEN
        SELECT bool_and(pg_try_advisory_xact_lock(hashtextextended(u.k, 0))) INTO ok FROM unnest(p_key_locks) AS u(k);
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
    -- Each counter row locked, checked against the prediction and written
    -- by one UPDATE: a row that moved is not updated, and FOUND tells.
    FOR i IN 1 .. cardinality(c_series) LOOP
        s := c_seller[i];
        v_series := c_series[i]; v_fy := c_fy[i]; v_last := c_last[i]; v_len := c_len[i]; v_head := c_head[i];
        v_new_last := c_new_last[i]; v_date := c_new_date[i]; v_at := c_new_at[i];
        v_new_len := c_new_len[i]; v_new_head := c_new_head[i];
        UPDATE series_counters SET last_serial = v_new_last, last_invoice_date = v_date,
                last_issued_at = v_at, chain_length = v_new_len, chain_head = v_new_head
            WHERE seller_id = s AND series_id = v_series AND fy = v_fy
                AND last_serial = v_last AND chain_length = v_len AND chain_head IS NOT DISTINCT FROM v_head;
        IF NOT FOUND THEN
            RAISE EXCEPTION USING ERRCODE = 'IV001', MESSAGE = 'counter row moved since it was predicted';
        END IF;
    END LOOP;
    PERFORM set_config('lock_timeout', old_timeout, true);

    FOR i IN 1 .. n LOOP
        s := i_seller[i];
        v_id := nextval(seq);
        v_series := i_series[i]; v_fy := i_fy[i]; v_serial := i_serial[i]; v_number := i_number[i];
        v_date := i_date[i]; v_at := i_at[i]; v_public_id := i_public_id[i]; v_bg := i_bg[i]; v_bn := i_bn[i];
        v_pos := i_pos[i]; v_onum := i_onum[i]; v_odate := i_odate[i]; v_items := i_items[i]::jsonb;
        v_taxable := i_taxable[i]::numeric; v_cgst := i_cgst[i]::numeric; v_sgst := i_sgst[i]::numeric;
        v_igst := i_igst[i]::numeric; v_total := i_total[i]::numeric; v_oext := i_oext[i];
        v_baddr := i_baddr[i]::jsonb; v_ship := i_ship[i]::jsonb;
        INSERT INTO invoices (id, seller_id, series_id, fy, serial, number, invoice_date, issued_at, public_id,
                buyer_gstin, buyer_name, place_of_supply, original_number, original_date, items,
                taxable, cgst, sgst, igst, total, original_external_reason, buyer_address, ship_to)
            OVERRIDING SYSTEM VALUE
            VALUES (v_id, s, v_series, v_fy, v_serial, v_number, v_date, v_at, v_public_id,
                v_bg, v_bn, v_pos, v_onum, v_odate, v_items, v_taxable, v_cgst, v_sgst, v_igst, v_total, v_oext,
                v_baddr, v_ship);
        ids[i] := v_id;
    END LOOP;
    FOR j IN 1 .. coalesce(cardinality(k_key), 0) LOOP
        i := k_invoice[j];
        s := i_seller[i];
        v_id := ids[i]; v_key := k_key[j]; v_hash := k_hash[j];
        INSERT INTO idempotency_keys (seller_id, key, request_hash, invoice_id) VALUES (s, v_key, v_hash, v_id);
    END LOOP;
    FOR j IN 1 .. cardinality(r_series) LOOP
        s := r_seller[j];
        v_series := r_series[j]; v_fy := r_fy[j]; v_position := r_position[j]; v_serial := r_serial[j];
        v_at := r_at[j]; v_hash := r_hash[j];
        INSERT INTO chain_records (series_id, fy, position, kind, serial, recorded_at, hash, seller_id)
            VALUES (v_series, v_fy, v_position, 'issue', v_serial, v_at, v_hash, s);
    END LOOP;

    -- The outbox (docs/webhooks.md): an event for each invoice of a seller
    -- with a live webhook subscribed, read once per seller in this
    -- transaction, and a delivery of the event to each such webhook.
    FOR i IN 1 .. n LOOP
        s := i_seller[i];
        CONTINUE WHEN s = ANY (seen);
        seen := seen || s;
        SELECT array_agg(w.id ORDER BY w.id) INTO hooks FROM webhooks w
            WHERE w.seller_id = s AND w.deleted_at IS NULL AND 'invoice.issued' = ANY (w.events);
        IF hooks IS NOT NULL THEN
            subs := subs || s;
            hook_seller := hook_seller || array_fill(s, ARRAY[cardinality(hooks)]);
            hook_id := hook_id || hooks;
        END IF;
    END LOOP;
    IF cardinality(subs) > 0 THEN
        k := 0;
        FOR i IN 1 .. n LOOP
            IF i_seller[i] = ANY (subs) THEN
                k := k + 1;
            END IF;
        END LOOP;
        IF k > coalesce(cardinality(p_event_ids), 0) THEN
            RAISE EXCEPTION USING ERRCODE = 'IV006', MESSAGE = 'a subscribed seller''s events need ids';
        END IF;
        k := 0;
        FOR i IN 1 .. n LOOP
            s := i_seller[i];
            CONTINUE WHEN NOT (s = ANY (subs));
            k := k + 1;
            e := p_event_ids[k];
            v_id := ids[i]; v_at := i_at[i];
            INSERT INTO events (id, seller_id, type, invoice_id, created_at) OVERRIDING SYSTEM VALUE
                VALUES (e, s, 'invoice.issued', v_id, v_at);
            FOR j IN 1 .. cardinality(hook_id) LOOP
                CONTINUE WHEN hook_seller[j] <> s;
                v_id := hook_id[j];
                INSERT INTO webhook_deliveries (event_id, webhook_id, seller_id) VALUES (e, v_id, s);
            END LOOP;
        END LOOP;
    END IF;
    RETURN ids;
END
$$;
-- +goose StatementEnd

-- Binaries of 00023 serve this schema: they neither read nor write the
-- new columns, and those of 00029 on call invoiced_issue_rows, unchanged.
INSERT INTO schema_compat (version, serves_from) VALUES (41, 23);

-- +goose Down
SET LOCAL lock_timeout = '10s';
DELETE FROM schema_compat WHERE version = 41;
DROP FUNCTION invoiced_issue_rows_v2(bigint, bigint[], bigint[], int[], bigint[], bigint[], bytea[], bigint[], date[],
    timestamptz[], bigint[], bytea[], text, text[], date, date, int, bigint[], bigint[], int[], bigint[], text[],
    date[], timestamptz[], text[], text[], text[], text[], text[], date[], text[], text[], text[], text[], text[],
    text[], text[], text[], text[], int[], text[], bytea[], bigint[], int[], bigint[], bigint[], timestamptz[], bytea[],
    bigint[], bigint[]);
ALTER TABLE invoices DROP COLUMN buyer_address, DROP COLUMN ship_to;
