-- +goose Up
-- API keys restricted to some series of their seller (one per terminal).
-- A restricted key keeps its scopes in series_scopes and none in scopes:
-- a binary older than this migration reads only scopes, so it refuses such
-- a key everything (403) instead of letting it into every series. An
-- unrestricted key has both columns NULL, as every existing row. The
-- check holds for every existing row, and api_keys is small, so it is
-- validated at once; the lock wait is bounded.
SET LOCAL lock_timeout = '10s';
ALTER TABLE api_keys
    ADD COLUMN series_codes  text[],
    ADD COLUMN series_scopes text[],
    ADD CONSTRAINT api_keys_series_restriction CHECK (
        (series_codes IS NULL) = (series_scopes IS NULL)
        AND (series_codes IS NULL OR (cardinality(series_codes) > 0 AND cardinality(series_scopes) > 0 AND cardinality(scopes) = 0))
    );
-- Adds nullable columns that older binaries never read; the rows they
-- would misread fail closed (above). Binaries of 00012 serve this schema.
INSERT INTO schema_compat (version, serves_from) VALUES (13, 12);

-- +goose Down
DELETE FROM schema_compat WHERE version = 13;
ALTER TABLE api_keys DROP CONSTRAINT api_keys_series_restriction,
    DROP COLUMN series_scopes, DROP COLUMN series_codes;
