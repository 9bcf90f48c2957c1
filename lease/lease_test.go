package lease_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/lease"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

type fixture struct {
	pool   *pgxpool.Pool
	seller gst.Seller
}

// setup returns a fresh database with one seller.
func setup(t *testing.T) fixture {
	t.Helper()
	pool := dbtest.New(t)
	return fixture{pool: pool, seller: testfactory.Seller(t, pool, nil)}
}

// series returns a new series of the fixture's seller.
func (f fixture) series(t *testing.T, code, format string) gst.Series {
	t.Helper()
	return testfactory.Series(t, f.pool, f.seller, &testfactory.SeriesOpts{Code: code, DocType: "invoice", Format: format, Shop: "stall"})
}

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
	ctx := t.Context()
	s := f.series(t, "T07", "T07/{FY}/{SEQ:5}")
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, gst.IST)
	lost := answerLost{f.pool}
	want := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, db.ErrOutcomeUnknown) {
			t.Fatalf("%s with its COMMIT's answer lost: %v, want commit_outcome_unknown", what, err)
		}
	}
	_, err := lease.TakeLease(ctx, lost, s, "till-7", "test", now)
	want("take", err)
	l, err := lease.HolderLease(ctx, f.pool, s)
	if err != nil {
		t.Fatalf("the lease was taken: %v", err)
	}
	_, err = lease.EndLeaseByDevice(ctx, lost, s, l.ID, gst.FY(2026), 0, nil, now)
	want("the device's end", err)
	// The end is idempotent: asked again, the same answer.
	if again, err := lease.EndLeaseByDevice(ctx, f.pool, s, l.ID, gst.FY(2026), 0, nil, now.Add(time.Hour)); err != nil || again.SettledAt == nil || !again.SettledAt.Equal(now) {
		t.Fatalf("the device's end asked again: %+v, %v", again, err)
	}
	if _, err := lease.EndLeaseByDevice(ctx, f.pool, s, l.ID, gst.FY(2026), 1, nil, now); !errors.Is(err, lease.ErrLeaseNotHeld) {
		t.Fatalf("another end of an ended lease: %v, want lease_not_held", err)
	}
	if _, err := lease.TakeLease(ctx, f.pool, s, "till-8", "test", now); err != nil {
		t.Fatal(err)
	}
	_, err = lease.ForceEndLease(ctx, lost, s, "stolen", "test", now)
	want("forced end", err)
	_, err = lease.SettleLeaseYears(ctx, lost, s, map[gst.FY]int64{2026: 0, 2027: 0}, "nothing printed", "test", now, testSeal)
	want("settlement", err)
	if _, err := lease.HolderLease(ctx, f.pool, s); !errors.Is(err, lease.ErrLeaseNotFound) {
		t.Fatalf("after the settlement: %v, want no holder", err)
	}
}

// TestDeviceIDEchoCutsBetweenCharacters: the refusal of a bad device id
// echoes at most 40 bytes of it, cut before a character that byte 40
// would split (%q showed half of it as "\xc3").
func TestDeviceIDEchoCutsBetweenCharacters(t *testing.T) {
	t.Parallel()
	err := lease.CheckDeviceID(strings.Repeat("a", 39) + "é and more")
	if want := `"` + strings.Repeat("a", 39) + `…"`; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("%v; want the id echoed as %s", err, want)
	}
}

// TestEndSentBeforeAResumeNeverCommits: an end the device asked for at an
// end epoch is refused (ErrEndSuperseded), and ends nothing, once the
// device resumed the lease (ResumeLease moved the epoch on): also for the
// late end that would settle a lease ended by force meanwhile. A resume
// of an ended lease changes nothing; a resume whose COMMIT's answer is
// lost is an unknown outcome, and did commit.
func TestEndSentBeforeAResumeNeverCommits(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	s := f.series(t, "T07", "T07/{FY}/{SEQ:5}")
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, gst.IST)
	epoch := func(n int64) *int64 { return &n }
	for _, forced := range []bool{false, true} {
		l, err := lease.TakeLease(ctx, f.pool, s, "till-7", "test", now)
		if err != nil || l.EndEpoch != 0 {
			t.Fatalf("take: %+v, %v", l, err)
		}
		r, err := lease.ResumeLease(ctx, f.pool, s, l.ID, now)
		if err != nil || r.EndEpoch != 1 || r.EndedAt != nil {
			t.Fatalf("resume: epoch %d, ended %v, %v; want epoch 1, in force", r.EndEpoch, r.EndedAt, err)
		}
		if forced {
			if _, err := lease.ForceEndLease(ctx, f.pool, s, "till missing", "test", now); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := lease.EndLeaseByDevice(ctx, f.pool, s, l.ID, gst.FY(2026), 0, epoch(0), now); !errors.Is(err, lease.ErrEndSuperseded) {
			t.Fatalf("forced %v: an end asked before the resume: %v, want lease_end_superseded", forced, err)
		}
		if h, err := lease.HolderLease(ctx, f.pool, s); err != nil || h.ID != l.ID || h.SettledAt != nil {
			t.Fatalf("forced %v: after the stale end the lease must still hold: %+v, %v", forced, h, err)
		}
		if forced {
			// Ended by force: nothing to resume, nothing written.
			if r, err := lease.ResumeLease(ctx, f.pool, s, l.ID, now); err != nil || r.EndedAt == nil || r.EndEpoch != 1 {
				t.Fatalf("resume of a lease ended by force: %+v, %v", r, err)
			}
		} else if _, err := lease.ResumeLease(ctx, answerLost{f.pool}, s, l.ID, now); !errors.Is(err, db.ErrOutcomeUnknown) {
			t.Fatalf("resume with its COMMIT's answer lost: %v, want commit_outcome_unknown", err)
		}
		want := int64(2)
		if forced {
			want = 1
		}
		if g, err := lease.GetLease(ctx, f.pool, s, l.ID); err != nil || g.EndEpoch != want {
			t.Fatalf("forced %v: epoch %d after the second resume, want %d (%v)", forced, g.EndEpoch, want, err)
		}
		if e, err := lease.EndLeaseByDevice(ctx, f.pool, s, l.ID, gst.FY(2026), 0, epoch(want), now); err != nil || e.SettledAt == nil {
			t.Fatalf("forced %v: the end at the current epoch: %+v, %v", forced, e, err)
		}
		if r, err := lease.ResumeLease(ctx, f.pool, s, l.ID, now); err != nil || r.EndEpoch != want || r.SettledAt == nil {
			t.Fatalf("forced %v: resume of an ended lease: %+v, %v; want it unchanged", forced, r, err)
		}
	}
}

// TestForcedEndYearsNeverBeforeTheLeaseStart: a lease whose floor (and so
// its start year) is 2027-28, taken and ended by force and settled by a
// server whose clock still says 31 March 2027: the forced end and the
// settlement cover the two years the lease reserves (2027-28 and
// 2028-29), never a year before the lease, and the settlement spends the
// declared serials there.
func TestForcedEndYearsNeverBeforeTheLeaseStart(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	s := f.series(t, "T07", "T07/{FY}/{SEQ:5}")
	// Two invoices of 2027-28 committed by an issuer whose clock ran ahead.
	if _, err := f.pool.Exec(ctx, `INSERT INTO series_counters (series_id, fy, seller_id, last_serial, capacity, last_invoice_date, last_issued_at)
		VALUES ($1, 2027, $2, 2, $3, '2027-04-01', '2027-04-01T00:00:01+05:30')`, s.ID, s.SellerID, s.Format.Capacity()); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2027, 3, 31, 23, 59, 0, 0, gst.IST)
	l, err := lease.TakeLease(ctx, f.pool, s, "till-7", "test", now)
	if err != nil || l.StartFY() != gst.FY(2027) || l.Next.Serial != 3 || len(l.Start) != 2 || l.Start[1].FY != gst.FY(2028) || l.Start[1].Serial != 1 {
		t.Fatalf("take: start %s serial %d, years %+v, %v; want 2027-28 serial 3 and 2028-29 serial 1", l.StartFY(), l.Next.Serial, l.Start, err)
	}
	forced, err := lease.ForceEndLease(ctx, f.pool, s, "till missing", "test", now)
	if err != nil || len(forced.EndYears) != 2 || forced.EndYears[gst.FY(2027)] != 2 || forced.EndYears[gst.FY(2028)] != 0 || forced.EndFY != gst.FY(2027) {
		t.Fatalf("forced end with the clock before the lease's year: years %v, end %s/%d, %v; want 2027-28 through 2, 2028-29 through 0", forced.EndYears, forced.EndFY, forced.EndSerial, err)
	}
	if _, err := lease.SettleLeaseYears(ctx, f.pool, s, map[gst.FY]int64{2026: 0, 2027: 4, 2028: 0}, "paper receipts to 4", "test", now, testSeal); !errors.Is(err, lease.ErrInvalidLease) {
		t.Fatalf("settle naming 2026-27, before the lease: %v, want invalid_lease", err)
	}
	settled, err := lease.SettleLeaseYears(ctx, f.pool, s, map[gst.FY]int64{2027: 4, 2028: 0}, "paper receipts to 4", "test", now, testSeal)
	if err != nil || len(settled.DeclaredYears) != 2 || settled.DeclaredYears[gst.FY(2027)] != 4 {
		t.Fatalf("settle with the clock before the lease's year: %v, %v; want 2027-28 through 4", settled.DeclaredYears, err)
	}
	f.wantNext(t, s, gst.FY(2027), 5, "after the settlement")
	f.wantNext(t, s, gst.FY(2026), 1, "before the lease, untouched")
}

// TestLeaseReservesTwoYears: a lease reserves the year of its floor and
// the next, whatever the server's clock says when it ends: a till leased
// at 23:48 IST on 31 March prints the new year's first serial before the
// server's midnight and is lost. The forced end covers 2027-28, the
// settlement must declare it (declared_through alone is refused, and so is
// a year the lease does not reserve), and it spends the serial.
func TestLeaseReservesTwoYears(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	s := f.series(t, "T07", "T07/{FY}/{SEQ:5}")
	now := time.Date(2027, 3, 31, 23, 48, 0, 0, gst.IST)
	l, err := lease.TakeLease(ctx, f.pool, s, "till-7", "test", now)
	if err != nil || len(l.Years()) != 2 || l.Years()[1] != gst.FY(2027) {
		t.Fatalf("take: years %v, %v; want 2026-27 and 2027-28", l.Years(), err)
	}
	forced, err := lease.ForceEndLease(ctx, f.pool, s, "till missing", "test", now.Add(9*time.Minute))
	if _, ok := forced.EndYears[gst.FY(2027)]; err != nil || !ok || len(forced.EndYears) != 2 {
		t.Fatalf("forced end before midnight: years %v, %v; want 2026-27 and 2027-28", forced.EndYears, err)
	}
	if _, err := lease.SettleLease(ctx, f.pool, s, 0, "nothing printed", "test", now.Add(10*time.Minute)); !errors.Is(err, lease.ErrLeaseYearsUndeclared) {
		t.Fatalf("declared_through alone: %v, want lease_years_undeclared", err)
	}
	if _, err := lease.SettleLeaseYears(ctx, f.pool, s, map[gst.FY]int64{2026: 0}, "nothing printed", "test", now.Add(10*time.Minute), testSeal); !errors.Is(err, lease.ErrLeaseYearsUndeclared) {
		t.Fatalf("2027-28 undeclared: %v, want lease_years_undeclared", err)
	}
	if _, err := lease.SettleLeaseYears(ctx, f.pool, s, map[gst.FY]int64{2026: 0, 2027: 1, 2028: 2}, "paper receipts", "test", now.Add(10*time.Minute), testSeal); !errors.Is(err, lease.ErrInvalidLease) {
		t.Fatalf("2028-29 declared: %v, want invalid_lease (not a year of the lease)", err)
	}
	settled, err := lease.SettleLeaseYears(ctx, f.pool, s, map[gst.FY]int64{2026: 0, 2027: 1}, "paper receipts", "test", now.Add(10*time.Minute), testSeal)
	if err != nil || len(settled.DeclaredYears) != 2 {
		t.Fatalf("settle: %v, %v", settled.DeclaredYears, err)
	}
	for fy, next := range map[gst.FY]int64{2026: 1, 2027: 2, 2028: 1} {
		f.wantNext(t, s, fy, next, "after the settlement")
	}
}

// TestSettlementNeverDeclaresBelowWhatIsKnown: a declaration below the
// last serial uploaded in a year, or below the last serial the device
// reported in an end request (recorded though the end was refused, 409
// lease_not_uploaded), is refused (declared_too_low) and spends nothing:
// those numbers were printed, and online issuance would hand them out
// again. At what is known, it settles.
func TestSettlementNeverDeclaresBelowWhatIsKnown(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	s := f.series(t, "T07", "T07/{FY}/{SEQ:5}")
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, gst.IST)
	// Three invoices of the series stored before the lease.
	if _, err := f.pool.Exec(ctx, `INSERT INTO series_counters (series_id, fy, seller_id, last_serial, capacity, last_invoice_date, last_issued_at)
		VALUES ($1, 2026, $2, 3, $3, '2026-11-29', '2026-11-29T11:00:00+05:30')`, s.ID, s.SellerID, s.Format.Capacity()); err != nil {
		t.Fatal(err)
	}
	l, err := lease.TakeLease(ctx, f.pool, s, "till-7", "test", now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lease.EndLeaseByDevice(ctx, f.pool, s, l.ID, gst.FY(2026), 7, nil, now.Add(time.Minute)); !errors.Is(err, lease.ErrNotUploaded) {
		t.Fatalf("the device's end with 4..7 not uploaded: %v, want lease_not_uploaded", err)
	}
	g, err := lease.GetLease(ctx, f.pool, s, l.ID)
	if err != nil || g.ReportedFY != gst.FY(2026) || g.ReportedSerial != 7 || g.LastContactAt == nil || !g.LastContactAt.Equal(now.Add(time.Minute)) {
		t.Fatalf("after the refused end: reported %s/%d, contact %v, %v; want 2026-27/7 at %s", g.ReportedFY, g.ReportedSerial, g.LastContactAt, err, now.Add(time.Minute))
	}
	if _, err := lease.ForceEndLease(ctx, f.pool, s, "till missing", "test", now); err != nil {
		t.Fatal(err)
	}
	for _, d := range []map[gst.FY]int64{{2026: 2, 2027: 0}, {2026: 6, 2027: 0}} {
		if _, err := lease.SettleLeaseYears(ctx, f.pool, s, d, "paper roll", "test", now, testSeal); !errors.Is(err, lease.ErrDeclaredTooLow) {
			t.Fatalf("declaring %v: %v, want declared_too_low", d, err)
		}
		f.wantNext(t, s, gst.FY(2026), 4, "after a refused declaration")
	}
	if _, err := lease.SettleLeaseYears(ctx, f.pool, s, map[gst.FY]int64{2026: 7, 2027: 0}, "paper roll to 7", "test", now, testSeal); err != nil {
		t.Fatal(err)
	}
	f.wantNext(t, s, gst.FY(2026), 8, "after the settlement")
}

// TestLeaseAskedAgainAnswersTheSameLease: a lease taken with an
// Idempotency-Key is answered again (replayed) to the same key and device
// while the device has not been in touch, with the same positions; to
// another key, to another device, or once the device was in touch, it is
// lease_held.
func TestLeaseAskedAgainAnswersTheSameLease(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	s := f.series(t, "T07", "T07/{FY}/{SEQ:5}")
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, gst.IST)
	l, replayed, err := lease.TakeLeaseKeyed(ctx, f.pool, s, "till-7", "k1", "test", now)
	if err != nil || replayed {
		t.Fatalf("take: %+v, %v, %v", l, replayed, err)
	}
	again, replayed, err := lease.TakeLeaseKeyed(ctx, f.pool, s, "till-7", "k1", "test", now.Add(time.Minute))
	if err != nil || !replayed || again.ID != l.ID || !again.NotBefore.Equal(l.NotBefore) || len(again.Start) != len(l.Start) || again.Start[0].Serial != l.Start[0].Serial {
		t.Fatalf("the same request again: %+v, %v, %v; want lease %s replayed as taken", again, replayed, err, l.ID)
	}
	for _, c := range []struct{ device, key string }{{"till-7", "k2"}, {"till-8", "k1"}, {"till-7", ""}} {
		if _, _, err := lease.TakeLeaseKeyed(ctx, f.pool, s, c.device, c.key, "test", now); !errors.Is(err, lease.ErrLeaseHeld) {
			t.Fatalf("device %s, key %q: %v, want lease_held", c.device, c.key, err)
		}
	}
	if _, err := lease.ResumeLease(ctx, f.pool, s, l.ID, now); err != nil {
		t.Fatal(err)
	}
	if _, _, err := lease.TakeLeaseKeyed(ctx, f.pool, s, "till-7", "k1", "test", now); !errors.Is(err, lease.ErrLeaseHeld) {
		t.Fatalf("the same request after the device was in touch: %v, want lease_held", err)
	}
}

// wantNext fails t unless series-year (s, fy) continues at serial next
// (what names the moment, for the message).
func (f fixture) wantNext(t *testing.T, s gst.Series, fy gst.FY, next int64, what string) {
	t.Helper()
	if p, err := lease.NextPosition(t.Context(), f.pool, s, fy); err != nil || p.Serial != next {
		t.Fatalf("%s: %s continues at %d, %v; want %d", what, fy, p.Serial, err, next)
	}
}

// testSeal seals declarations as the server does, for a seller whose
// GSTIN the test does not need.
var testSeal = invoice.DeclarationSeal("27AAPFU0939F1ZV")
