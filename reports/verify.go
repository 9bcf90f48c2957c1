package reports

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5"
)

// FindingKind names one kind of break that Verify and the audit detect.
type FindingKind string

// The kinds of finding. Those for which Chain reports true break the hash
// chain; the others break the numbering.
const (
	// HashMismatch: a chain record's stored hash differs from the one
	// recomputed from its invoice's current fields and the previous stored
	// hash: the invoice (amount, date, buyer, reason, …) or the record was
	// altered.
	HashMismatch FindingKind = "hash_mismatch"
	// RecordMissing: positions Position..To of the chain have no record
	// (records were deleted).
	RecordMissing FindingKind = "record_missing"
	// InvoiceMissing: a chain record names a serial that has no invoice row
	// (the invoice was deleted).
	InvoiceMissing FindingKind = "invoice_missing"
	// RecordedAtMismatch: a record's recorded_at differs from its invoice's
	// issue or cancellation time.
	RecordedAtMismatch FindingKind = "recorded_at_mismatch"
	// RecordOrder: issue records do not follow serial order, or a
	// cancellation precedes its issue.
	RecordOrder FindingKind = "record_order"
	// IssueRecordMissing: an invoice has no issue record.
	IssueRecordMissing FindingKind = "issue_record_missing"
	// IssueRecordDuplicate: an invoice has more than one issue record.
	IssueRecordDuplicate FindingKind = "issue_record_duplicate"
	// CancelRecordMissing: a cancelled invoice has no cancel record.
	CancelRecordMissing FindingKind = "cancel_record_missing"
	// CancelRecordUnexpected: an invoice that is not cancelled has a cancel
	// record, or a cancelled one has several.
	CancelRecordUnexpected FindingKind = "cancel_record_unexpected"
	// ChainLengthMismatch: the counter row's chain_length differs from the
	// number of records.
	ChainLengthMismatch FindingKind = "chain_length_mismatch"
	// ChainHeadMismatch: the counter row's chain_head differs from the last
	// record's hash.
	ChainHeadMismatch FindingKind = "chain_head_mismatch"
	// CounterMissing: invoices or records exist but the counter row does not.
	CounterMissing FindingKind = "counter_missing"
	// OpeningMismatch: the opening record (position 1) does not match the
	// stored declaration, or one of them is missing or misplaced.
	OpeningMismatch FindingKind = "opening_mismatch"
	// DeclaredSerial: an invoice holds a serial declared as issued before
	// invoiced (1..the opening's last serial), or is dated before its date,
	// or a serial a settlement declared spent (a lost device's).
	DeclaredSerial FindingKind = "declared_serial"
	// DeclarationMismatch: a declared record (a settlement's declaration
	// of a lost device's serials) does not match the stored declaration,
	// or one of them is missing.
	DeclarationMismatch FindingKind = "declaration_mismatch"

	// SerialGap: serials Serial..To are missing.
	SerialGap FindingKind = "serial_gap"
	// DuplicateSerial: more than one invoice holds Serial.
	DuplicateSerial FindingKind = "duplicate_serial"
	// DuplicateNumberKind: more than one invoice holds one number.
	DuplicateNumberKind FindingKind = "duplicate_number"
	// DateOrder: the invoice at Serial is dated earlier than its predecessor.
	DateOrder FindingKind = "date_order"
	// DateOutsideFY: the invoice at Serial is dated outside its financial year.
	DateOutsideFY FindingKind = "date_outside_fy"
	// NumberMismatch: the invoice's number is not what the series' format
	// renders for its serial.
	NumberMismatch FindingKind = "number_mismatch"
	// CounterAhead: the counter's last_serial is above the highest stored
	// serial (the last invoices are missing).
	CounterAhead FindingKind = "counter_ahead"
	// CounterBehind: the counter's last_serial is below the highest stored
	// serial (the next issue would reuse a number).
	CounterBehind FindingKind = "counter_behind"
)

// Chain reports whether k is a break of the hash chain (as opposed to one
// of the numbering).
func (k FindingKind) Chain() bool {
	switch k {
	case HashMismatch, RecordMissing, InvoiceMissing, RecordedAtMismatch, RecordOrder, IssueRecordMissing,
		IssueRecordDuplicate, CancelRecordMissing, CancelRecordUnexpected, ChainLengthMismatch, ChainHeadMismatch, CounterMissing, OpeningMismatch,
		DeclarationMismatch:
		return true
	}
	return false
}

// MaxFindings caps the findings (and each summary list) kept per
// series-year, so that a wholesale alteration cannot exhaust memory; the
// excess is counted in ChainResult.Omitted.
const MaxFindings = 1000

// Finding is one break, located in its series-year.
type Finding struct {
	Kind     FindingKind `json:"kind"`
	Series   string      `json:"series"`
	FY       string      `json:"fy"`
	Position int64       `json:"position,omitempty"` // chain position; 0 when not about one record
	Serial   int64       `json:"serial,omitempty"`   // (first) serial concerned; 0 when none
	To       int64       `json:"to,omitempty"`       // end of a range of serials (SerialGap) or positions (RecordMissing)
	Message  string      `json:"message"`
}

// String returns the finding as one line: where, kind and message.
func (f Finding) String() string {
	var b strings.Builder
	b.WriteString(f.Series + " " + f.FY)
	if f.Position > 0 {
		fmt.Fprintf(&b, " position %d", f.Position)
	}
	if f.Serial > 0 {
		fmt.Fprintf(&b, " serial %d", f.Serial)
	}
	fmt.Fprintf(&b, ": %s: %s", f.Kind, f.Message)
	return b.String()
}

// ChainResult is what Verify found in one series-year.
type ChainResult struct {
	Series  string
	DocType gst.DocType
	FY      gst.FY

	Invoices    int64 // invoice rows
	Cancelled   int64 // of which cancelled
	Records     int64 // chain records (distinct positions)
	FirstSerial int64 // lowest stored serial; 0 when no invoice
	LastSerial  int64 // highest stored serial
	FirstNumber string
	LastNumber  string
	// CounterLastSerial is the counter row's last_serial; HasCounter is
	// false when the row is missing.
	CounterLastSerial int64
	HasCounter        bool
	// ChainLength and ChainHead are the counter row's chain_length and
	// chain_head: what to anchor outside the database.
	ChainLength int64
	ChainHead   []byte
	// Opening is the declaration of serials issued before invoiced (nil
	// when there is none): serials 1..Opening.LastSerial are not gaps.
	Opening     *invoice.Opening
	OpeningHash []byte // the opening record's stored hash
	// Declared are the settlements' declarations of serials a lost
	// device may have printed and never uploaded (docs/offline.md), in
	// chain order, each with its record's stored hash: they are not gaps.
	Declared []series.Declaration

	Findings []Finding // in walk order: chain, then invoices, then counter
	Omitted  int       // findings beyond MaxFindings, not kept

	// Typed lists for the audit summary, each capped at MaxFindings.
	Gaps             []SerialRange
	DuplicateSerials []int64
	DuplicateNumbers []DuplicateNumber
	DateRegressions  []DateRegression
}

// SerialRange is an inclusive run of serials.
type SerialRange struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
}

// String returns "7" or "7-9".
func (r SerialRange) String() string {
	if r.From == r.To {
		return fmt.Sprint(r.From)
	}
	return fmt.Sprintf("%d-%d", r.From, r.To)
}

// DuplicateNumber is a number held by several invoices of a series-year.
type DuplicateNumber struct {
	Number  string  `json:"number"`
	Serials []int64 `json:"serials"`
}

// DateRegression is an invoice dated earlier than its predecessor.
type DateRegression struct {
	Serial       int64  `json:"serial"`
	Number       string `json:"number"`
	InvoiceDate  string `json:"invoice_date"`
	PreviousDate string `json:"previous_date"`
}

// OK reports whether the series-year is intact: no finding at all.
func (c ChainResult) OK() bool { return len(c.Findings) == 0 && c.Omitted == 0 }

// ChainOK reports whether the chain verdict is "ok": no kept finding
// breaks the chain and none was omitted.
func (c ChainResult) ChainOK() bool { return c.Verdict() == "ok" }

// Verdict returns the chain verdict: "ok", "broken at position N: reason"
// for the first chain break with a position, or "broken: reason".
func (c ChainResult) Verdict() string {
	var first *Finding
	for i := range c.Findings {
		f := &c.Findings[i]
		if !f.Kind.Chain() {
			continue
		}
		if f.Position > 0 {
			return fmt.Sprintf("broken at position %d: %s", f.Position, f.Message)
		}
		if first == nil {
			first = f
		}
	}
	if first != nil {
		return "broken: " + first.Message
	}
	if c.Omitted > 0 {
		return "unknown: " + Plural(c.Omitted, "finding", "findings") + " omitted"
	}
	return "ok"
}

// DeclaredCount returns how many serials the year's settlements declared.
func (c ChainResult) DeclaredCount() int64 {
	var n int64
	for _, d := range c.Declared {
		n += d.Count()
	}
	return n
}

// DeclaredRanges returns the declared serials as ranges, in chain order.
func (c ChainResult) DeclaredRanges() []SerialRange {
	out := make([]SerialRange, len(c.Declared))
	for i, d := range c.Declared {
		out[i] = SerialRange{d.First, d.Last}
	}
	return out
}

// NetIssued returns Invoices − Cancelled.
func (c ChainResult) NetIssued() int64 { return c.Invoices - c.Cancelled }

// VerifyReport is what Verify found for a seller.
type VerifyReport struct {
	GSTIN  string
	Chains []ChainResult // ordered by series code, then year
}

// OK reports whether every series-year verified is intact.
func (r VerifyReport) OK() bool {
	for _, c := range r.Chains {
		if !c.OK() {
			return false
		}
	}
	return true
}

// Findings returns every finding of every series-year, in report order.
func (r VerifyReport) Findings() []Finding {
	var out []Finding
	for _, c := range r.Chains {
		out = append(out, c.Findings...)
	}
	return out
}

// Verify checks the seller's series-years: seriesCode ("" = all series)
// and fy (0 = all years) narrow the set. For each it walks the chain
// records in position order, recomputing each record's hash from its
// invoice's current fields and the previous stored hash, then the invoices
// in serial order, then the counter row, and reports every break, located
// by series, year, position and serial. It streams both walks and keeps
// only the findings (at most MaxFindings per series-year).
//
// A report with no finding is OK. An unknown seriesCode gives
// series.ErrNotFound, filters that select no series-year
// ErrSeriesYearNotFound (never an empty, "intact" report); otherwise it
// fails only when the database fails.
func Verify(ctx context.Context, b db.OptionsBeginner, seller gst.Seller, seriesCode string, fy gst.FY) (VerifyReport, error) {
	var rep VerifyReport
	err := readTx(ctx, b, func(tx pgx.Tx) error {
		var err error
		rep, err = VerifyTx(ctx, tx, seller, seriesCode, fy)
		return err
	})
	return rep, err
}

// VerifyTx is Verify inside the caller's transaction (which should be
// REPEATABLE READ for a consistent result).
func VerifyTx(ctx context.Context, tx pgx.Tx, seller gst.Seller, seriesCode string, fy gst.FY) (VerifyReport, error) {
	rep := VerifyReport{GSTIN: string(seller.GSTIN)}
	if seriesCode != "" {
		s, err := series.Get(ctx, tx, seller.ID, seriesCode)
		if err != nil {
			return rep, err
		}
		seriesCode = s.Code
	}
	years, err := listSeriesYears(ctx, tx, seller.ID, seriesCode, fy)
	if err != nil {
		return rep, err
	}
	if len(years) == 0 {
		return rep, apperr.Errorf(ErrSeriesYearNotFound, "%s has no invoice%s", seller.GSTIN, filterText(seriesCode, fy))
	}
	for _, sy := range years {
		res, err := check(ctx, tx, string(seller.GSTIN), sy)
		if err != nil {
			return rep, err
		}
		rep.Chains = append(rep.Chains, res)
	}
	return rep, nil
}

// filterText returns " in series CODE in 2026-27" for the filters set.
func filterText(code string, fy gst.FY) string {
	var s string
	if code != "" {
		s += " in series " + code
	}
	if fy != 0 {
		s += " in " + fy.String()
	}
	return s
}

func sortSeriesYears(ys []seriesYear) {
	slices.SortFunc(ys, func(a, b seriesYear) int {
		return cmp.Or(cmp.Compare(a.Series.Code, b.Series.Code), cmp.Compare(a.FY, b.FY))
	})
}
