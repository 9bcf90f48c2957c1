package invoice_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/invoiced/invoiced/invoice"
)

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
			return invoice.NewPlainCommitter(noDB{}, invoice.Config{Batching: true, MaxBatch: -1, InFlight: -3, DateClock: 7})
		}, []string{"MaxBatch -1", "InFlight -3", "DateClock 7"}},
		{"predict, plain", func() (*invoice.Committer, error) {
			return invoice.NewPlainCommitter(noDB{}, invoice.Config{Batching: true, Predict: true})
		}, []string{"Predict needs pipelined transactions"}},
		{"predict, no batching", func() (*invoice.Committer, error) {
			return invoice.NewCommitter(&pgxpool.Pool{}, invoice.Config{Predict: true})
		}, []string{"Predict needs Config.Batching"}},
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
	c, err := invoice.NewPlainCommitter(noDB{}, invoice.Config{Batching: true})
	if err != nil || !c.Batching() {
		t.Errorf("valid config: %v, batching %v", err, c != nil && c.Batching())
	}
}
