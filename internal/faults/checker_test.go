package faults

import (
	"strings"
	"testing"
	"time"
)

// A small, clean history: keys a and b acknowledged as serials 1 and 2 of
// CH1; key c had an unknown outcome, then was replayed as serial 3.
func cleanHistory() ([]Op, []Stored) {
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Millisecond) }
	ops := []Op{
		{Type: Invoke, Client: 1, Key: "a", Series: "CH1"},
		{Type: OK, Client: 1, Key: "a", Series: "CH1", Status: 201, Serial: 1, Number: "CH1/26-27/000001", IssuedAt: at(1)},
		{Type: Invoke, Client: 2, Key: "b", Series: "CH1"},
		{Type: OK, Client: 2, Key: "b", Series: "CH1", Status: 201, Serial: 2, Number: "CH1/26-27/000002", IssuedAt: at(2)},
		{Type: Invoke, Client: 1, Key: "c", Series: "CH1"},
		{Type: Unknown, Client: 1, Key: "c", Series: "CH1", Err: "connection reset"},
		{Type: Invoke, Client: 1, Key: "c", Series: "CH1"},
		{Type: OK, Client: 1, Key: "c", Series: "CH1", Status: 201, Serial: 3, Number: "CH1/26-27/000003", IssuedAt: at(3), Replayed: true},
		{Type: Invoke, Client: 2, Key: "d", Series: "CH1"},
		{Type: Fail, Client: 2, Key: "d", Series: "CH1", Status: 422},
	}
	stored := []Stored{
		{Series: "CH1", FY: 2026, Serial: 1, Number: "CH1/26-27/000001", IssuedAt: at(1), Key: "a"},
		{Series: "CH1", FY: 2026, Serial: 2, Number: "CH1/26-27/000002", IssuedAt: at(2), Key: "b"},
		{Series: "CH1", FY: 2026, Serial: 3, Number: "CH1/26-27/000003", IssuedAt: at(3), Key: "c"},
	}
	return ops, stored
}

func TestCheckerAcceptsCleanHistory(t *testing.T) {
	ops, stored := cleanHistory()
	r := Check(ops, stored, CheckOptions{})
	if !r.OK() {
		t.Fatalf("violations on a clean history: %v", r.Violations)
	}
	if r.Invokes != 5 || r.Acked != 3 || r.Failed != 1 || r.Unknown != 1 || r.Keys != 4 || r.KeysAcked != 3 ||
		r.ResolvedUnknown != 1 || r.ReplayedAfterUnknown != 1 {
		t.Fatalf("counts wrong: %+v", r)
	}
	if line := r.Line("x"); !strings.Contains(line, "FAULTS x ops=5 acked=3 failed=1 unknown=1") || !strings.Contains(line, "invariants=PASS") {
		t.Fatalf("summary line %q", line)
	}
	// RequireAllAcked flags key d, which never succeeded.
	if r := Check(ops, stored, CheckOptions{RequireAllAcked: true}); r.OK() {
		t.Fatal("RequireAllAcked did not flag a key that was never acknowledged")
	}
}

// wantViolation checks that Check finds a violation mentioning want.
func wantViolation(t *testing.T, ops []Op, stored []Stored, want string) {
	t.Helper()
	r := Check(ops, stored, CheckOptions{})
	for _, v := range r.Violations {
		if strings.Contains(v, want) {
			if !strings.Contains(r.Line("x"), "invariants=FAIL") {
				t.Errorf("summary does not say FAIL: %s", r.Line("x"))
			}
			return
		}
	}
	t.Fatalf("no violation mentioning %q; got %v", want, r.Violations)
}

func TestCheckerCatchesGap(t *testing.T) {
	ops, stored := cleanHistory()
	stored[2].Serial = 4 // serial 3 missing
	wantViolation(t, ops, stored, "gap")
}

func TestCheckerCatchesGapAtStart(t *testing.T) {
	ops, stored := cleanHistory()
	stored = stored[1:] // serial 1 missing; a's ack is lost too
	wantViolation(t, ops, stored, "gap: serial 2 follows 0")
}

func TestCheckerCatchesDuplicateSerial(t *testing.T) {
	ops, stored := cleanHistory()
	stored[2].Serial = 2
	wantViolation(t, ops, stored, "stored twice (duplicate)")
}

func TestCheckerCatchesDuplicateNumber(t *testing.T) {
	ops, stored := cleanHistory()
	stored[2].Number = stored[1].Number
	wantViolation(t, ops, stored, "stored twice")
}

func TestCheckerCatchesLostAck(t *testing.T) {
	ops, stored := cleanHistory()
	stored = stored[:2] // c was acknowledged (as a replay) but is not stored
	wantViolation(t, ops, stored, "lost acknowledgement")
	if r := Check(ops, stored, CheckOptions{}); len(r.Lost) != 1 {
		t.Errorf("Lost = %v, want the one key not stored", r.Lost)
	}
}

func TestCheckerCatchesAckWithWrongNumber(t *testing.T) {
	ops, stored := cleanHistory()
	ops[1].Number, ops[1].Serial = "CH1/26-27/000009", 9
	wantViolation(t, ops, stored, "stored as")
}

func TestCheckerCatchesTwoInvoicesForOneKey(t *testing.T) {
	ops, stored := cleanHistory()
	stored = append(stored, Stored{Series: "CH1", FY: 2026, Serial: 4, Number: "CH1/26-27/000004", IssuedAt: stored[2].IssuedAt, Key: "c"})
	wantViolation(t, ops, stored, `key "c": 2 invoices stored`)
}

func TestCheckerCatchesDifferentReplays(t *testing.T) {
	ops, stored := cleanHistory()
	ops = append(ops,
		Op{Type: Invoke, Client: 3, Key: "a", Series: "CH1"},
		Op{Type: OK, Client: 3, Key: "a", Series: "CH1", Status: 201, Serial: 2, Number: "CH1/26-27/000002", Replayed: true})
	wantViolation(t, ops, stored, "and later as")
}

func TestCheckerCatchesInvoiceOfFailedKey(t *testing.T) {
	ops, stored := cleanHistory()
	stored = append(stored, Stored{Series: "CH1", FY: 2026, Serial: 4, Number: "CH1/26-27/000004", IssuedAt: stored[2].IssuedAt, Key: "d"})
	wantViolation(t, ops, stored, "every attempt failed definitely")
}

// TestCheckerCatchesInvoiceAfterADefinitiveRefusal: key e had an unknown
// attempt, then a definitive refusal (422), and its invoice is stored: the
// client trusted the refusal. A 409 idempotency_key_in_progress is no
// refusal.
func TestCheckerCatchesInvoiceAfterADefinitiveRefusal(t *testing.T) {
	ops, stored := cleanHistory()
	ops = append(ops,
		Op{Type: Invoke, Client: 3, Key: "e", Series: "CH1"},
		Op{Type: Unknown, Client: 3, Key: "e", Series: "CH1", Status: 503, Err: "commit_outcome_unknown"},
		Op{Type: Invoke, Client: 3, Key: "e", Series: "CH1"},
		Op{Type: Fail, Client: 3, Key: "e", Series: "CH1", Status: 422, Err: `{"error":{"code":"invalid_date"}}`})
	stored = append(stored, Stored{Series: "CH1", FY: 2026, Serial: 4, Number: "CH1/26-27/000004", IssuedAt: stored[2].IssuedAt, Key: "e"})
	wantViolation(t, ops, stored, `key "e": refused definitively (422`)

	ops, stored = cleanHistory()
	ops = append(ops,
		Op{Type: Invoke, Client: 3, Key: "e", Series: "CH1"},
		Op{Type: Fail, Client: 3, Key: "e", Series: "CH1", Status: 409, Err: `{"error":{"code":"idempotency_key_in_progress"}}`},
		Op{Type: Invoke, Client: 3, Key: "e", Series: "CH1"},
		Op{Type: OK, Client: 3, Key: "e", Series: "CH1", Status: 201, Serial: 4, Number: "CH1/26-27/000004", IssuedAt: stored[2].IssuedAt})
	stored = append(stored, Stored{Series: "CH1", FY: 2026, Serial: 4, Number: "CH1/26-27/000004", IssuedAt: stored[2].IssuedAt, Key: "e"})
	if r := Check(ops, stored, CheckOptions{}); !r.OK() {
		t.Fatalf("a key in progress, then issued: %v", r.Violations)
	}

	// 409 period_locked and series_leased are not final (docs/api.md): an
	// unknown attempt may commit after the month is unlocked.
	for _, code := range []string{"period_locked", "series_leased"} {
		ops, stored = cleanHistory()
		ops = append(ops,
			Op{Type: Invoke, Client: 3, Key: "e", Series: "CH1"},
			Op{Type: Unknown, Client: 3, Key: "e", Series: "CH1", Status: 503, Err: "commit_outcome_unknown"},
			Op{Type: Invoke, Client: 3, Key: "e", Series: "CH1"},
			Op{Type: Fail, Client: 3, Key: "e", Series: "CH1", Status: 409, Err: `{"error":{"code":"` + code + `"}}`})
		stored = append(stored, Stored{Series: "CH1", FY: 2026, Serial: 4, Number: "CH1/26-27/000004", IssuedAt: stored[2].IssuedAt, Key: "e"})
		if r := Check(ops, stored, CheckOptions{}); !r.OK() {
			t.Fatalf("an unknown attempt, then %s, then its invoice: %v", code, r.Violations)
		}
	}
}

func TestCheckerCatchesForeignInvoice(t *testing.T) {
	ops, stored := cleanHistory()
	stored = append(stored, Stored{Series: "CH1", FY: 2026, Serial: 4, Number: "CH1/26-27/000004", IssuedAt: stored[2].IssuedAt, Key: "zz"})
	wantViolation(t, ops, stored, "no request in the history used")
	if r := Check(ops, stored, CheckOptions{AllowForeign: true}); !r.OK() {
		t.Fatalf("AllowForeign still flags: %v", r.Violations)
	}
}

func TestCheckerCatchesIssueTimeGoingBack(t *testing.T) {
	ops, stored := cleanHistory()
	stored[2].IssuedAt = stored[0].IssuedAt.Add(-time.Hour)
	ops[7].IssuedAt = stored[2].IssuedAt
	wantViolation(t, ops, stored, "issue time goes backwards")
}

func TestCheckerCatchesAckedIssueTimeMismatch(t *testing.T) {
	ops, stored := cleanHistory()
	ops[1].IssuedAt = ops[1].IssuedAt.Add(time.Second)
	wantViolation(t, ops, stored, "acknowledged with issue time")
}

func TestCheckerCatchesUnfinishedInvoke(t *testing.T) {
	ops, stored := cleanHistory()
	ops = append(ops, Op{Type: Invoke, Client: 9, Key: "e", Series: "CH1"})
	wantViolation(t, ops, stored, "without a completion")
}

// Gaps are per series-year: serial 1 in two series or two years is fine.
func TestCheckerSeparatesSeriesAndYears(t *testing.T) {
	ops, stored := cleanHistory()
	ops = append(ops,
		Op{Type: Invoke, Client: 1, Key: "x", Series: "CH2"},
		Op{Type: OK, Client: 1, Key: "x", Series: "CH2", Status: 201, Serial: 1, Number: "CH2/26-27/000001"},
		Op{Type: Invoke, Client: 1, Key: "y", Series: "CH1"},
		Op{Type: OK, Client: 1, Key: "y", Series: "CH1", Status: 201, Serial: 1, Number: "CH1/27-28/000001"})
	stored = append(stored,
		Stored{Series: "CH2", FY: 2026, Serial: 1, Number: "CH2/26-27/000001", Key: "x"},
		Stored{Series: "CH1", FY: 2027, Serial: 1, Number: "CH1/27-28/000001", IssuedAt: stored[2].IssuedAt, Key: "y"})
	if r := Check(ops, stored, CheckOptions{}); !r.OK() {
		t.Fatalf("violations: %v", r.Violations)
	}
}
