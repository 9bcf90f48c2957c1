-- +goose Up
-- Sessions of the web console (/console/). The session id is 256 random
-- bits held only by the browser's cookie; the table keeps its SHA-256, so
-- a reader of the database cannot take over a session. A session acts with
-- the API key it signed in with (key_prefix): revoking the key ends it.
-- Sessions expire 30 minutes after last use and 12 hours after sign-in.
CREATE TABLE console_sessions (
    id_hash      bytea PRIMARY KEY CHECK (length(id_hash) = 32),
    seller_id    bigint NOT NULL REFERENCES sellers (id),
    key_prefix   text NOT NULL,
    csrf_token   text NOT NULL,
    created_at   timestamptz NOT NULL,
    last_seen_at timestamptz NOT NULL
);
CREATE INDEX console_sessions_created ON console_sessions (created_at);

-- +goose Down
DROP TABLE console_sessions;
