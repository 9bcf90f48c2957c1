-- +goose Up
-- invoiced_require(ok, code, message) returns true when ok is true and
-- otherwise raises an error with SQLSTATE code. It lets one pipelined
-- round trip stop at the first statement whose precondition failed: a
-- group-commit batch that predicted its counter rows' state
-- (series.QueueAdvance) checks the prediction under the row locks, and the
-- statements after a failed check never run. Codes in use (class IV):
--   IV001  a counter row is not in the predicted state
--   IV002  an idempotency key is held by another transaction
--   IV003  an idempotency key was already used
-- +goose StatementBegin
CREATE FUNCTION invoiced_require(ok boolean, code text, message text) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    IF ok IS NOT TRUE THEN
        RAISE EXCEPTION USING ERRCODE = code, MESSAGE = message;
    END IF;
    RETURN true;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION invoiced_require(boolean, text, text);
