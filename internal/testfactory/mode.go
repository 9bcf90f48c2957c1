package testfactory

import (
	"testing"

	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/series"
)

// Options returns o for the database under test: with Routed set when it
// is a Citus coordinator (dbtest.Citus; make test-citus), as invoiced
// serve runs there, so that each statement is routed to one shard
// (docs/scale-out.md); on plain PostgreSQL, o unchanged. It fails the test
// when the database cannot be asked whether it is Citus.
func Options(t testing.TB, o series.Options) series.Options {
	t.Helper()
	if dbtest.Citus(t) {
		o.Routed = true
	}
	return o
}

// Config returns cfg for the database under test: with Citus set when it
// is a Citus coordinator (the Committer then takes the Citus strategy:
// routed writes, one seller's or shard's series per transaction, a
// predicted batch as one delegated call); on plain PostgreSQL, cfg
// unchanged. It fails the test when the database cannot be asked whether
// it is Citus.
func Config(t testing.TB, cfg invoice.Config) invoice.Config {
	t.Helper()
	if dbtest.Citus(t) {
		cfg.Citus = true
	}
	return cfg
}
