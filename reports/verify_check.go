package reports

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"
)

// This file holds the checks of one series-year: its chain walked record by
// record, its invoices against the records, and its counter row.

// checker accumulates the findings of one series-year.
type checker struct {
	gstin string
	sy    seriesYear
	res   ChainResult
	// next is the serial after the last one accounted for (stored,
	// opened or declared) by the invoice walk.
	next int64
	// sealed marks the declarations (by index in res.Declared) whose
	// chain record the walk met.
	sealed map[int]bool
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
	op, found, err := invoice.OpeningOf(ctx, tx, sy.Series, sy.FY)
	if err != nil {
		return ChainResult{}, err
	}
	if found {
		c.res.Opening = &op
	}
	if c.res.Declared, err = series.DeclarationsOf(ctx, tx, sy.Series, sy.FY); err != nil {
		return ChainResult{}, err
	}
	c.sealed = map[int]bool{}
	lastHash, lastPos, err := c.walkChain(ctx, tx)
	if err != nil {
		return ChainResult{}, err
	}
	if err := c.walkInvoices(ctx, tx); err != nil {
		return ChainResult{}, err
	}
	dups, err := duplicateNumbers(ctx, tx, sy.Series, sy.FY, MaxFindings)
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

// chainPlace is where a walk of the chain stands: the last record's hash
// and position, and the highest serial issued so far (the opening's last
// serial counts as issued).
type chainPlace struct {
	lastHash        []byte
	lastPos         int64
	lastIssueSerial int64
}

// walkChain walks the records in position order, checking each position's
// records (checkPosition), and returns the last stored hash and position.
// It fails only when reading the records fails.
func (c *checker) walkChain(ctx context.Context, tx pgx.Tx) (lastHash []byte, lastPos int64, err error) {
	var (
		at    chainPlace
		group []recordRow // rows of one position (several only with duplicate serials)
	)
	err = walkRecords(ctx, tx, c.sy.Series, c.sy.FY, func(r *recordRow) error {
		if len(group) > 0 && group[0].Position != r.Position {
			c.checkPosition(&at, group)
			group = group[:0]
		}
		group = append(group, *r)
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	if len(group) > 0 {
		c.checkPosition(&at, group)
	}
	return at.lastHash, at.lastPos, nil
}

// checkPosition checks group, the records of one position (several only
// with duplicate serials), after the walk stood at at: the link to the
// previous position, an opening against its declaration, the order of
// issue and cancel records, and that a record's invoice exists and hashes
// to it. It then moves at to group's position.
func (c *checker) checkPosition(at *chainPlace, group []recordRow) {
	r := group[0]
	linkKnown := c.checkLink(at, r)
	if r.Kind == invoice.KindOpening {
		c.checkOpening(r, linkKnown)
		c.res.OpeningHash = r.Hash
		if c.res.Opening != nil {
			at.lastIssueSerial = max(at.lastIssueSerial, c.res.Opening.LastSerial)
		}
		at.lastHash, at.lastPos = r.Hash, r.Position
		c.res.Records++
		return
	}
	if r.Kind == series.KindDeclared {
		c.checkDeclared(r, at.lastHash, linkKnown)
		at.lastIssueSerial = max(at.lastIssueSerial, r.Serial)
		at.lastHash, at.lastPos = r.Hash, r.Position
		c.res.Records++
		return
	}
	c.checkOrder(at, r)
	found, matched, timeOK := c.matchInvoice(group, at.lastHash)
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
			Message: fmt.Sprintf("%s record of serial %d: recorded_at %s differs from the invoice's time", r.Kind, r.Serial, document.Timestamp(r.RecordedAt))})
	}
	at.lastHash, at.lastPos = r.Hash, r.Position
	c.res.Records++
}

// checkLink adds a RecordMissing finding when r does not follow the
// position the walk stands at. It returns whether r's link to its
// predecessor is known (false after a gap: the predecessor's hash is not
// the one r was made with).
func (c *checker) checkLink(at *chainPlace, r recordRow) bool {
	if r.Position == at.lastPos+1 {
		return true
	}
	what := fmt.Sprintf("chain records at positions %s are", SerialRange{at.lastPos + 1, r.Position - 1})
	if r.Position-1 == at.lastPos+1 {
		what = fmt.Sprintf("the chain record at position %d is", at.lastPos+1)
	}
	c.add(Finding{Kind: RecordMissing, Position: at.lastPos + 1, To: r.Position - 1,
		Message: fmt.Sprintf("%s missing (deleted); the record at position %d no longer links to its predecessor", what, r.Position)})
	return false
}

// checkOrder adds a RecordOrder finding when the issue record r does not
// follow every earlier issue's serial, or the cancel record r comes before
// its serial's issue; an issue moves at's highest serial.
func (c *checker) checkOrder(at *chainPlace, r recordRow) {
	switch r.Kind {
	case document.KindIssue:
		if r.Serial <= at.lastIssueSerial {
			c.add(Finding{Kind: RecordOrder, Position: r.Position, Serial: r.Serial,
				Message: fmt.Sprintf("issue record of serial %d follows the issue record of serial %d", r.Serial, at.lastIssueSerial)})
		}
		at.lastIssueSerial = max(at.lastIssueSerial, r.Serial)
	case document.KindCancel:
		if r.Serial > at.lastIssueSerial {
			c.add(Finding{Kind: RecordOrder, Position: r.Position, Serial: r.Serial,
				Message: fmt.Sprintf("cancel record of serial %d precedes its issue record", r.Serial)})
		}
	}
}

// matchInvoice rebuilds the record of each of group's invoices on prev
// and returns whether any has an invoice row (found), whether one's record
// hashes to its stored hash (matched), and whether the recorded times agree
// (timeOK: the matching one's, else every rebuilt one's).
func (c *checker) matchInvoice(group []recordRow, prev []byte) (found, matched, timeOK bool) {
	timeOK = true
	for i := range group {
		g := &group[i]
		if !g.Found {
			continue
		}
		found = true
		rec, ok := c.record(g.Kind, &g.Inv, g.Position, prev)
		if ok && bytes.Equal(rec.Hash(), g.Hash) {
			return true, true, rec.RecordedAt.Equal(g.RecordedAt)
		}
		timeOK = timeOK && ok && rec.RecordedAt.Equal(g.RecordedAt)
	}
	return found, false, timeOK
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

// checkDeclared checks the declared record r against the stored
// declaration at its position, whose record it rebuilds on prev.
func (c *checker) checkDeclared(r recordRow, prev []byte, linkKnown bool) {
	i := slices.IndexFunc(c.res.Declared, func(d series.Declaration) bool { return d.Position == r.Position })
	if i < 0 {
		c.add(Finding{Kind: DeclarationMismatch, Position: r.Position, Serial: r.Serial,
			Message: "a declared record has no stored declaration (the declaration was deleted)"})
		return
	}
	c.sealed[i] = true
	d := &c.res.Declared[i]
	d.Hash = r.Hash
	if linkKnown && !bytes.Equal(invoice.DeclarationRecord(c.gstin, c.sy.Series, *d, prev).Hash(), r.Hash) {
		c.add(Finding{Kind: DeclarationMismatch, Position: r.Position, Serial: r.Serial,
			Message: fmt.Sprintf("the declared record of serials %s does not match the stored declaration: the declaration or the record was altered", SerialRange{d.First, d.Last})})
	}
}

// declaredAt returns the declaration whose serials hold serial, or nil.
func (c *checker) declaredAt(serial int64) *series.Declaration {
	for i := range c.res.Declared {
		if d := &c.res.Declared[i]; d.First <= serial && serial <= d.Last {
			return d
		}
	}
	return nil
}

// gaps reports serials from..to that no declaration holds as gaps (why
// appended to each message).
func (c *checker) gaps(from, to int64, why string) {
	for s := from; s <= to; {
		if d := c.declaredAt(s); d != nil {
			s = d.Last + 1
			continue
		}
		end := to
		for _, d := range c.res.Declared {
			if d.First > s && d.First-1 < end {
				end = d.First - 1
			}
		}
		c.gap(s, end, why)
		s = end + 1
	}
}

// record rebuilds the chain record of kind for the invoice fields f; ok is
// false when a stored amount does not parse.
func (c *checker) record(kind string, f *invoiceFields, position int64, prev []byte) (document.Record, bool) {
	inv, ok := c.invoice(f)
	if kind == document.KindCancel {
		return document.CancelRecord(c.gstin, inv, position, prev), ok
	}
	return document.IssueRecord(c.gstin, inv, position, prev), ok
}

// invoice returns the document.Invoice that f describes, as far as the chain
// covers it.
func (c *checker) invoice(f *invoiceFields) (document.Invoice, bool) {
	inv := document.Invoice{
		SeriesCode: c.sy.Series.Code, DocType: c.sy.Series.DocType, FY: c.sy.FY,
		Serial: f.Serial, Number: f.Number, InvoiceDate: f.InvoiceDate, IssuedAt: f.IssuedAt,
		Status: f.Status, CancelledAt: f.CancelledAt, CancelReason: f.CancelReason,
	}
	if f.BuyerGSTIN != "" || f.BuyerName != "" || f.BuyerAddress != nil {
		inv.Buyer = &document.Buyer{GSTIN: f.BuyerGSTIN, Name: f.BuyerName}
	}
	inv.PlaceOfSupply = f.PlaceOfSupply
	if f.OriginalNumber != "" && f.OriginalDate != nil {
		inv.Original = &document.Original{Number: f.OriginalNumber, InvoiceDate: *f.OriginalDate}
	}
	ok := json.Unmarshal(f.Items, &inv.Items) == nil && document.ParseAddresses(inv.Buyer, &inv.ShipTo, f.BuyerAddress, f.ShipTo) == nil
	parse := func(s string) decimal.Decimal {
		d, err := decimal.NewFromString(s)
		if err != nil {
			ok = false
		}
		return d
	}
	inv.Totals = document.Totals{Taxable: parse(f.Taxable), CGST: parse(f.CGST), SGST: parse(f.SGST), IGST: parse(f.IGST), Total: parse(f.Total)}
	return inv, ok
}

// walkInvoices walks the invoices in serial order.
func (c *checker) walkInvoices(ctx context.Context, tx pgx.Tx) error {
	expected, dupOf := int64(1), int64(-1)
	var havePrev bool
	var prevSerial, declared int64 // serials 1..declared were issued before invoiced
	var prevDate, openedOn time.Time
	if op := c.res.Opening; op != nil {
		declared, openedOn, expected = op.LastSerial, op.LastInvoiceDate, op.LastSerial+1
	}
	err := walkInvoices(ctx, tx, c.sy.Series, c.sy.FY, func(r *invoiceRow) error {
		c.res.Invoices++
		if r.Status == document.StatusCancelled {
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
			c.gaps(expected, r.Serial-1, "")
		}
		if d := c.declaredAt(r.Serial); d != nil {
			c.add(Finding{Kind: DeclaredSerial, Serial: r.Serial,
				Message: fmt.Sprintf("%s (serial %d) is among the serials %s declared spent when the lease of device %s was settled (%s)",
					r.Number, r.Serial, SerialRange{d.First, d.Last}, d.DeviceID, d.DeclaredAt.UTC().Format(time.RFC3339))})
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
		if gst.FYOf(r.InvoiceDate) != c.sy.FY {
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
		case r.Status == document.StatusCancelled && r.Cancels == 0:
			c.add(Finding{Kind: CancelRecordMissing, Serial: r.Serial,
				Message: fmt.Sprintf("%s is cancelled but the chain has no cancel record for it", r.Number)})
		case r.Status != document.StatusCancelled && r.Cancels > 0:
			c.add(Finding{Kind: CancelRecordUnexpected, Serial: r.Serial,
				Message: fmt.Sprintf("%s is %s but the chain records its cancellation", r.Number, r.Status)})
		case r.Cancels > 1:
			c.add(Finding{Kind: CancelRecordUnexpected, Serial: r.Serial,
				Message: fmt.Sprintf("%s has %d cancel records", r.Number, r.Cancels)})
		}
		havePrev, prevSerial, prevDate = true, r.Serial, r.InvoiceDate
		return nil
	})
	c.next = expected
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
		c.add(Finding{Kind: CounterMissing, Message: fmt.Sprintf("no counter row, but %s and %s exist", Plural(c.res.Invoices, "invoice", "invoices"), Plural(c.res.Records, "chain record", "chain records"))})
		return
	}
	c.res.HasCounter, c.res.CounterLastSerial = true, ctr.LastSerial
	c.res.ChainLength, c.res.ChainHead = ctr.ChainLength, ctr.ChainHead
	highest := c.res.LastSerial
	if c.res.Opening != nil {
		highest = max(highest, c.res.Opening.LastSerial)
	}
	for _, d := range c.res.Declared {
		highest = max(highest, d.Last)
	}
	// Serials after the last invoice up to the last declared one that no
	// declaration holds.
	c.gaps(max(c.next, c.res.LastSerial+1), highest, "")
	switch max := highest; {
	case ctr.LastSerial > max:
		c.gap(max+1, ctr.LastSerial, fmt.Sprintf(" (the counter says %d were issued)", ctr.LastSerial))
		c.add(Finding{Kind: CounterAhead, Serial: max + 1, To: ctr.LastSerial,
			Message: fmt.Sprintf("counter last_serial is %d but the highest stored serial is %d (%d ahead)", ctr.LastSerial, max, ctr.LastSerial-max)})
	case ctr.LastSerial < max:
		c.add(Finding{Kind: CounterBehind, Serial: ctr.LastSerial + 1, To: max,
			Message: fmt.Sprintf("counter last_serial is %d but serials up to %d are stored (%d behind): the next issue would reuse a number", ctr.LastSerial, max, max-ctr.LastSerial)})
	}
	for i, d := range c.res.Declared {
		if !c.sealed[i] {
			c.add(Finding{Kind: DeclarationMismatch, Position: d.Position, Serial: d.Last,
				Message: fmt.Sprintf("the declaration of serials %s has no declared record in the chain at position %d", SerialRange{d.First, d.Last}, d.Position)})
		}
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
