package reports

import (
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"
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
	// invoiced (1..the opening's last serial), or is dated before its date.
	DeclaredSerial FindingKind = "declared_serial"

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
		IssueRecordDuplicate, CancelRecordMissing, CancelRecordUnexpected, ChainLengthMismatch, ChainHeadMismatch, CounterMissing, OpeningMismatch:
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
	DocType series.DocType
	FY      series.FY

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
		return fmt.Sprintf("unknown: %d findings omitted", c.Omitted)
	}
	return "ok"
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
func Verify(ctx context.Context, b db.OptionsBeginner, seller series.Seller, seriesCode string, fy series.FY) (VerifyReport, error) {
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
func VerifyTx(ctx context.Context, tx pgx.Tx, seller series.Seller, seriesCode string, fy series.FY) (VerifyReport, error) {
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
func filterText(code string, fy series.FY) string {
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

// checker accumulates the findings of one series-year.
type checker struct {
	gstin string
	sy    seriesYear
	res   ChainResult
}

func (c *checker) add(f Finding) {
	if len(c.res.Findings) >= MaxFindings {
		c.res.Omitted++
		return
	}
	f.Series, f.FY = c.sy.Series.Code, c.sy.FY.String()
	c.res.Findings = append(c.res.Findings, f)
}

func addCapped[T any](list *[]T, v T) {
	if len(*list) < MaxFindings {
		*list = append(*list, v)
	}
}

// check verifies one series-year.
func check(ctx context.Context, tx pgx.Tx, gstin string, sy seriesYear) (ChainResult, error) {
	c := &checker{gstin: gstin, sy: sy}
	c.res.Series, c.res.DocType, c.res.FY = sy.Series.Code, sy.Series.DocType, sy.FY
	op, found, err := invoice.OpeningOf(ctx, tx, sy.Series.ID, sy.FY)
	if err != nil {
		return ChainResult{}, err
	}
	if found {
		c.res.Opening = &op
	}
	lastHash, lastPos, err := c.walkChain(ctx, tx)
	if err != nil {
		return ChainResult{}, err
	}
	if err := c.walkInvoices(ctx, tx); err != nil {
		return ChainResult{}, err
	}
	dups, err := duplicateNumbers(ctx, tx, sy.Series.ID, sy.FY, MaxFindings)
	if err != nil {
		return ChainResult{}, err
	}
	for _, d := range dups {
		c.res.DuplicateNumbers = append(c.res.DuplicateNumbers, d)
		c.add(Finding{Kind: DuplicateNumberKind, Serial: d.Serials[0],
			Message: fmt.Sprintf("number %s is held by %d invoices (serials %s)", d.Number, len(d.Serials), joinInts(d.Serials))})
	}
	c.checkCounter(lastHash, lastPos)
	return c.res, nil
}

// walkChain walks the records in position order and returns the last
// stored hash and position.
func (c *checker) walkChain(ctx context.Context, tx pgx.Tx) (lastHash []byte, lastPos int64, err error) {
	var (
		group           []recordRow // rows of one position (several only with duplicate serials)
		lastIssueSerial int64
	)
	flush := func() {
		if len(group) == 0 {
			return
		}
		r := group[0]
		linkKnown := true
		if r.Position != lastPos+1 {
			what := fmt.Sprintf("chain records at positions %s are", SerialRange{lastPos + 1, r.Position - 1})
			if r.Position-1 == lastPos+1 {
				what = fmt.Sprintf("the chain record at position %d is", lastPos+1)
			}
			c.add(Finding{Kind: RecordMissing, Position: lastPos + 1, To: r.Position - 1,
				Message: fmt.Sprintf("%s missing (deleted); the record at position %d no longer links to its predecessor", what, r.Position)})
			linkKnown = false
		}
		if r.Kind == invoice.KindOpening {
			c.checkOpening(r, linkKnown)
			c.res.OpeningHash = r.Hash
			if c.res.Opening != nil {
				lastIssueSerial = max(lastIssueSerial, c.res.Opening.LastSerial)
			}
			lastHash, lastPos = r.Hash, r.Position
			c.res.Records++
			group = group[:0]
			return
		}
		switch r.Kind {
		case invoice.KindIssue:
			if r.Serial <= lastIssueSerial {
				c.add(Finding{Kind: RecordOrder, Position: r.Position, Serial: r.Serial,
					Message: fmt.Sprintf("issue record of serial %d follows the issue record of serial %d", r.Serial, lastIssueSerial)})
			}
			lastIssueSerial = max(lastIssueSerial, r.Serial)
		case invoice.KindCancel:
			if r.Serial > lastIssueSerial {
				c.add(Finding{Kind: RecordOrder, Position: r.Position, Serial: r.Serial,
					Message: fmt.Sprintf("cancel record of serial %d precedes its issue record", r.Serial)})
			}
		}
		found, matched, timeOK := false, false, true
		for i := range group {
			g := &group[i]
			if !g.Found {
				continue
			}
			found = true
			rec, ok := c.record(g.Kind, &g.Inv, g.Position, lastHash)
			if ok && bytes.Equal(rec.Hash(), g.Hash) {
				matched = true
				timeOK = rec.RecordedAt.Equal(g.RecordedAt)
				break
			}
			timeOK = timeOK && ok && rec.RecordedAt.Equal(g.RecordedAt)
		}
		switch {
		case !found:
			c.add(Finding{Kind: InvoiceMissing, Position: r.Position, Serial: r.Serial,
				Message: fmt.Sprintf("%s record names serial %d, which has no invoice row (deleted)", r.Kind, r.Serial)})
		case !matched && linkKnown:
			c.add(Finding{Kind: HashMismatch, Position: r.Position, Serial: r.Serial,
				Message: fmt.Sprintf("%s record of serial %d (%s) does not match the invoice's current fields: the invoice or the record was altered", r.Kind, r.Serial, r.Inv.Number)})
		}
		if found && !timeOK {
			c.add(Finding{Kind: RecordedAtMismatch, Position: r.Position, Serial: r.Serial,
				Message: fmt.Sprintf("%s record of serial %d: recorded_at %s differs from the invoice's time", r.Kind, r.Serial, invoice.Timestamp(r.RecordedAt))})
		}
		lastHash, lastPos = r.Hash, r.Position
		c.res.Records++
		group = group[:0]
	}
	err = walkRecords(ctx, tx, c.sy.Series.ID, c.sy.FY, func(r *recordRow) error {
		if len(group) > 0 && group[0].Position != r.Position {
			flush()
		}
		group = append(group, *r)
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	flush()
	return lastHash, lastPos, nil
}

// checkOpening checks the opening record r against the declaration.
func (c *checker) checkOpening(r recordRow, linkKnown bool) {
	op := c.res.Opening
	switch {
	case op == nil:
		c.add(Finding{Kind: OpeningMismatch, Position: r.Position, Serial: r.Serial,
			Message: "an opening record has no stored declaration (the declaration was deleted)"})
	case r.Position != 1:
		c.add(Finding{Kind: OpeningMismatch, Position: r.Position, Serial: r.Serial,
			Message: fmt.Sprintf("the opening record is at position %d, not 1", r.Position)})
	case !bytes.Equal(invoice.OpeningRecord(c.gstin, c.sy.Series, *op).Hash(), r.Hash) && linkKnown:
		c.add(Finding{Kind: OpeningMismatch, Position: r.Position, Serial: r.Serial,
			Message: "the opening record does not match the stored declaration: the declaration or the record was altered"})
	}
}

// record rebuilds the chain record of kind for the invoice fields f; ok is
// false when a stored amount does not parse.
func (c *checker) record(kind string, f *invoiceFields, position int64, prev []byte) (invoice.Record, bool) {
	inv, ok := c.invoice(f)
	if kind == invoice.KindCancel {
		return invoice.CancelRecord(c.gstin, inv, position, prev), ok
	}
	return invoice.IssueRecord(c.gstin, inv, position, prev), ok
}

// invoice returns the invoice.Invoice that f describes, as far as the chain
// covers it.
func (c *checker) invoice(f *invoiceFields) (invoice.Invoice, bool) {
	inv := invoice.Invoice{
		SeriesCode: c.sy.Series.Code, DocType: c.sy.Series.DocType, FY: c.sy.FY,
		Serial: f.Serial, Number: f.Number, InvoiceDate: f.InvoiceDate, IssuedAt: f.IssuedAt,
		Status: f.Status, CancelledAt: f.CancelledAt, CancelReason: f.CancelReason,
	}
	if f.BuyerGSTIN != "" || f.BuyerName != "" {
		inv.Buyer = &invoice.Buyer{GSTIN: f.BuyerGSTIN, Name: f.BuyerName}
	}
	inv.PlaceOfSupply = f.PlaceOfSupply
	if f.OriginalNumber != "" && f.OriginalDate != nil {
		inv.Original = &invoice.Original{Number: f.OriginalNumber, InvoiceDate: *f.OriginalDate}
	}
	ok := json.Unmarshal(f.Items, &inv.Items) == nil
	parse := func(s string) decimal.Decimal {
		d, err := decimal.NewFromString(s)
		if err != nil {
			ok = false
		}
		return d
	}
	inv.Totals = invoice.Totals{Taxable: parse(f.Taxable), CGST: parse(f.CGST), SGST: parse(f.SGST), IGST: parse(f.IGST), Total: parse(f.Total)}
	return inv, ok
}

// walkInvoices walks the invoices in serial order.
func (c *checker) walkInvoices(ctx context.Context, tx pgx.Tx) error {
	var (
		expected   int64 = 1
		havePrev   bool
		prevSerial int64
		prevDate   time.Time
		dupOf      int64 = -1
		declared   int64 // serials 1..declared were issued before invoiced
		openedOn   time.Time
	)
	if op := c.res.Opening; op != nil {
		declared, openedOn, expected = op.LastSerial, op.LastInvoiceDate, op.LastSerial+1
	}
	err := walkInvoices(ctx, tx, c.sy.Series.ID, c.sy.FY, func(r *invoiceRow) error {
		c.res.Invoices++
		if r.Status == invoice.StatusCancelled {
			c.res.Cancelled++
		}
		if !havePrev {
			c.res.FirstSerial, c.res.FirstNumber = r.Serial, r.Number
		}
		c.res.LastSerial, c.res.LastNumber = r.Serial, r.Number
		switch {
		case havePrev && r.Serial == prevSerial:
			if dupOf != r.Serial {
				dupOf = r.Serial
				addCapped(&c.res.DuplicateSerials, r.Serial)
				c.add(Finding{Kind: DuplicateSerial, Serial: r.Serial,
					Message: fmt.Sprintf("serial %d is held by more than one invoice (%s)", r.Serial, r.Number)})
			}
		case r.Serial > expected:
			c.gap(expected, r.Serial-1, "")
		}
		if r.Serial <= declared || r.InvoiceDate.Before(openedOn) {
			c.add(Finding{Kind: DeclaredSerial, Serial: r.Serial,
				Message: fmt.Sprintf("%s (serial %d, dated %s) falls among the serials declared as issued before invoiced (1 to %d, up to %s)",
					r.Number, r.Serial, r.InvoiceDate.Format(time.DateOnly), declared, openedOn.Format(time.DateOnly))})
		}
		expected = max(expected, r.Serial+1)
		if havePrev && r.InvoiceDate.Before(prevDate) {
			addCapped(&c.res.DateRegressions, DateRegression{Serial: r.Serial, Number: r.Number,
				InvoiceDate: r.InvoiceDate.Format(time.DateOnly), PreviousDate: prevDate.Format(time.DateOnly)})
			c.add(Finding{Kind: DateOrder, Serial: r.Serial,
				Message: fmt.Sprintf("%s is dated %s, earlier than its predecessor (%s)", r.Number, r.InvoiceDate.Format(time.DateOnly), prevDate.Format(time.DateOnly))})
		}
		if series.FYOf(r.InvoiceDate) != c.sy.FY {
			c.add(Finding{Kind: DateOutsideFY, Serial: r.Serial,
				Message: fmt.Sprintf("%s is dated %s, outside %s", r.Number, r.InvoiceDate.Format(time.DateOnly), c.sy.FY)})
		}
		if want, err := c.sy.Series.Format.Render(c.sy.FY, r.Serial); err != nil || want != r.Number {
			c.add(Finding{Kind: NumberMismatch, Serial: r.Serial,
				Message: fmt.Sprintf("serial %d carries number %s; the series format renders %q", r.Serial, r.Number, want)})
		}
		switch {
		case r.Issues == 0:
			c.add(Finding{Kind: IssueRecordMissing, Serial: r.Serial,
				Message: fmt.Sprintf("%s has no issue record in the chain", r.Number)})
		case r.Issues > 1:
			c.add(Finding{Kind: IssueRecordDuplicate, Serial: r.Serial,
				Message: fmt.Sprintf("%s has %d issue records", r.Number, r.Issues)})
		}
		switch {
		case r.Status == invoice.StatusCancelled && r.Cancels == 0:
			c.add(Finding{Kind: CancelRecordMissing, Serial: r.Serial,
				Message: fmt.Sprintf("%s is cancelled but the chain has no cancel record for it", r.Number)})
		case r.Status != invoice.StatusCancelled && r.Cancels > 0:
			c.add(Finding{Kind: CancelRecordUnexpected, Serial: r.Serial,
				Message: fmt.Sprintf("%s is %s but the chain records its cancellation", r.Number, r.Status)})
		case r.Cancels > 1:
			c.add(Finding{Kind: CancelRecordUnexpected, Serial: r.Serial,
				Message: fmt.Sprintf("%s has %d cancel records", r.Number, r.Cancels)})
		}
		havePrev, prevSerial, prevDate = true, r.Serial, r.InvoiceDate
		return nil
	})
	return err
}

func (c *checker) gap(from, to int64, why string) {
	addCapped(&c.res.Gaps, SerialRange{from, to})
	msg := fmt.Sprintf("serials %s are missing", SerialRange{from, to})
	if from == to {
		msg = fmt.Sprintf("serial %d is missing", from)
	}
	c.add(Finding{Kind: SerialGap, Serial: from, To: to, Message: msg + why})
}

// checkCounter compares the counter row with what the walks found.
func (c *checker) checkCounter(lastHash []byte, lastPos int64) {
	ctr := c.sy.Counter
	if ctr == nil {
		if c.res.Invoices == 0 && c.res.Records == 0 {
			return
		}
		c.add(Finding{Kind: CounterMissing, Message: fmt.Sprintf("no counter row, but %d invoices and %d chain records exist", c.res.Invoices, c.res.Records)})
		return
	}
	c.res.HasCounter, c.res.CounterLastSerial = true, ctr.LastSerial
	c.res.ChainLength, c.res.ChainHead = ctr.ChainLength, ctr.ChainHead
	highest := c.res.LastSerial
	if c.res.Opening != nil {
		highest = max(highest, c.res.Opening.LastSerial)
	}
	switch max := highest; {
	case ctr.LastSerial > max:
		c.gap(max+1, ctr.LastSerial, fmt.Sprintf(" (the counter says %d were issued)", ctr.LastSerial))
		c.add(Finding{Kind: CounterAhead, Serial: max + 1, To: ctr.LastSerial,
			Message: fmt.Sprintf("counter last_serial is %d but the highest stored serial is %d (%d ahead)", ctr.LastSerial, max, ctr.LastSerial-max)})
	case ctr.LastSerial < max:
		c.add(Finding{Kind: CounterBehind, Serial: ctr.LastSerial + 1, To: max,
			Message: fmt.Sprintf("counter last_serial is %d but serials up to %d are stored (%d behind): the next issue would reuse a number", ctr.LastSerial, max, max-ctr.LastSerial)})
	}
	if ctr.ChainLength != c.res.Records || ctr.ChainLength != lastPos {
		c.add(Finding{Kind: ChainLengthMismatch,
			Message: fmt.Sprintf("counter chain_length is %d but the chain holds %d records ending at position %d", ctr.ChainLength, c.res.Records, lastPos)})
	}
	if !bytes.Equal(ctr.ChainHead, lastHash) {
		c.add(Finding{Kind: ChainHeadMismatch, Position: lastPos,
			Message: fmt.Sprintf("counter chain_head %s differs from the last record's hash %s", shortHex(ctr.ChainHead), shortHex(lastHash))})
	}
}

func shortHex(b []byte) string {
	if len(b) == 0 {
		return "(none)"
	}
	h := hex.EncodeToString(b)
	if len(h) > 16 {
		return h[:16] + "…"
	}
	return h
}

func joinInts(xs []int64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}
