package invoice_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/invoice"
)

// strategies are the Committer's strategies on plain PostgreSQL (on a
// Citus coordinator, make test-citus, the pool's is the Citus strategy):
// "pool" (NewCommitter: pipelined, predicted) and "plain" (NewPlainCommitter
// on one connection's worth of API: plain transactions, not predicted).
var strategies = []string{"pool", "plain"}

// newCommitter returns a Committer of strategy s ("pool" or "plain") on
// pool, with cfg for the database under test (testfactory.Config).
func newCommitter(t testing.TB, s string, pool *pgxpool.Pool, cfg invoice.Config) *invoice.Committer {
	t.Helper()
	cfg = testfactory.Config(t, cfg)
	switch s {
	case "pool":
		return mustCommitter(invoice.NewCommitter(pool, cfg))
	case "plain":
		return mustCommitter(invoice.NewPlainCommitter(pool, cfg))
	}
	t.Fatalf("no strategy %q", s)
	return nil
}

// mustCommitter returns c, panicking when its constructor refused the
// test's configuration (a bug in the test).
func mustCommitter(c *invoice.Committer, err error) *invoice.Committer {
	if err != nil {
		panic(err)
	}
	return c
}

// noDB is a Beginner that is never asked to begin: the constructor's
// checks come first.
type noDB struct{}

func (noDB) Begin(context.Context) (pgx.Tx, error) { return nil, errors.New("not a database") }

// TestNewCommitterRefusesBadConfig: each invalid field is refused, and the
// error names it.
func TestNewCommitterRefusesBadConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		make func() (*invoice.Committer, error)
		want []string
	}{
		{"nil pool", func() (*invoice.Committer, error) { return invoice.NewCommitter(nil, invoice.Config{}) }, []string{"needs a pool"}},
		{"nil db", func() (*invoice.Committer, error) { return invoice.NewPlainCommitter(nil, invoice.Config{}) }, []string{"needs a database"}},
		{"negative", func() (*invoice.Committer, error) {
			return invoice.NewPlainCommitter(noDB{}, invoice.Config{MaxBatch: -1, InFlight: -3, DateClock: 7, CitusBatch: 5})
		}, []string{"MaxBatch -1", "InFlight -3", "DateClock 7", "CitusBatch 5"}},
		{"negative, pool", func() (*invoice.Committer, error) {
			return invoice.NewCommitter(&pgxpool.Pool{}, invoice.Config{MaxBatch: -1})
		}, []string{"MaxBatch -1"}},
	} {
		c, err := tc.make()
		if err == nil || c != nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", tc.name, err, w)
			}
		}
	}
	if _, err := invoice.NewPlainCommitter(noDB{}, invoice.Config{}); err != nil {
		t.Errorf("valid config: %v", err)
	}
}
