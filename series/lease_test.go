package series_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5"
)

// answerLost is a Beginner whose transactions commit and then report the
// COMMIT's answer lost: the server did the work, the caller never heard.
type answerLost struct{ db db.Beginner }

func (a answerLost) Begin(ctx context.Context) (pgx.Tx, error) {
	tx, err := a.db.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return lostCommit{tx}, nil
}

type lostCommit struct{ pgx.Tx }

func (l lostCommit) Commit(ctx context.Context) error {
	if err := l.Tx.Commit(ctx); err != nil {
		return err
	}
	return io.ErrUnexpectedEOF
}

// TestLostCommitOnLeaseRoutesIsAnUnknownOutcome: on every lease write
// (take, the device's end, forced end, settlement) a COMMIT whose answer
// is lost is db.ErrOutcomeUnknown (503 commit_outcome_unknown: it may be
// done), never a plain outage, which says "not done"; and each did commit.
func TestLostCommitOnLeaseRoutesIsAnUnknownOutcome(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	s := f.series(t, "T07", "T07/{FY}/{SEQ:5}")
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, series.IST)
	lost := answerLost{f.pool}
	want := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, db.ErrOutcomeUnknown) {
			t.Fatalf("%s with its COMMIT's answer lost: %v, want commit_outcome_unknown", what, err)
		}
	}
	_, err := series.TakeLease(ctx, lost, s, "till-7", "test", now)
	want("take", err)
	l, err := series.HolderLease(ctx, f.pool, s)
	if err != nil {
		t.Fatalf("the lease was taken: %v", err)
	}
	_, err = series.EndLeaseByDevice(ctx, lost, s, l.ID, series.FY(2026), 0, now)
	want("the device's end", err)
	// The end is idempotent: asked again, the same answer.
	if again, err := series.EndLeaseByDevice(ctx, f.pool, s, l.ID, series.FY(2026), 0, now.Add(time.Hour)); err != nil || again.SettledAt == nil || !again.SettledAt.Equal(now) {
		t.Fatalf("the device's end asked again: %+v, %v", again, err)
	}
	if _, err := series.EndLeaseByDevice(ctx, f.pool, s, l.ID, series.FY(2026), 1, now); !errors.Is(err, series.ErrLeaseNotHeld) {
		t.Fatalf("another end of an ended lease: %v, want lease_not_held", err)
	}
	if _, err := series.TakeLease(ctx, f.pool, s, "till-8", "test", now); err != nil {
		t.Fatal(err)
	}
	_, err = series.ForceEndLease(ctx, lost, s, "stolen", "test", now)
	want("forced end", err)
	_, err = series.SettleLease(ctx, lost, s, 0, "nothing printed", "test", now)
	want("settlement", err)
	if _, err := series.HolderLease(ctx, f.pool, s); !errors.Is(err, series.ErrLeaseNotFound) {
		t.Fatalf("after the settlement: %v, want no holder", err)
	}
}

// TestDeviceIDEchoCutsBetweenCharacters: the refusal of a bad device id
// echoes at most 40 bytes of it, cut before a character that byte 40
// would split (%q showed half of it as "\xc3").
func TestDeviceIDEchoCutsBetweenCharacters(t *testing.T) {
	t.Parallel()
	err := series.CheckDeviceID(strings.Repeat("a", 39) + "é and more")
	if want := `"` + strings.Repeat("a", 39) + `…"`; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("%v; want the id echoed as %s", err, want)
	}
}
