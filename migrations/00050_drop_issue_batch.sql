-- +goose Up
-- invoiced_issue_batch (00026, restated by 00027 and 00028) was the
-- delegated batch of the binaries of 00026 to 00028. Binaries from 00029
-- call invoiced_issue_rows, and from 00041 invoiced_issue_rows_v2; none
-- calls it, and no test does. Dropping it contracts the schema for the
-- binaries of 00026 to 00028 only (on Citus they delegated to it), so this
-- declares that binaries of 00029 on serve it: those older refuse to start
-- (migrations.CheckServable) instead of failing on their first batch.
DROP FUNCTION IF EXISTS invoiced_issue_batch;
INSERT INTO schema_compat (version, serves_from) VALUES (50, 29);

-- +goose Down
-- The function is not restored: its body is 00028's, and no binary that
-- a database at 00049 serves calls it.
DELETE FROM schema_compat WHERE version = 50;
