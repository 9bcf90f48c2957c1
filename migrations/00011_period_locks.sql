-- +goose Up
-- A month is locked once its GSTR-1 is filed: from then on no invoice
-- dated in it may be issued (backdated) or cancelled. period is the
-- month's first day. Only a month that has ended (in IST) can be locked,
-- so an invoice dated in the current month never meets a lock and skips
-- the check; a backdated one is checked inside its issuing transaction
-- after taking its seller's row FOR SHARE, which a lock being created
-- holds FOR UPDATE (docs/periods.md).
CREATE TABLE period_locks (
    seller_id  bigint NOT NULL REFERENCES sellers (id),
    period     date NOT NULL CHECK (extract(day FROM period) = 1),
    locked_at  timestamptz NOT NULL,
    locked_by  text NOT NULL,
    PRIMARY KEY (seller_id, period)
);

-- Every lock and unlock, with who, when and (for an unlock) why.
CREATE TABLE period_lock_events (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    seller_id  bigint NOT NULL REFERENCES sellers (id),
    period     date NOT NULL,
    action     text NOT NULL CHECK (action IN ('lock', 'unlock')),
    at         timestamptz NOT NULL,
    by         text NOT NULL,
    reason     text NOT NULL DEFAULT ''
);
CREATE INDEX period_lock_events_seller ON period_lock_events (seller_id, id);

-- +goose Down
DROP TABLE period_lock_events;
DROP TABLE period_locks;
