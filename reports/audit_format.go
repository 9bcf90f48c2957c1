package reports

import (
	"fmt"
	"strings"
	"time"

	"github.com/invoiced/invoiced/gst"
)

// This file holds what the export formats share: the writer each implements
// and the summary as labelled lines.

// auditWriter renders one export format.
type auditWriter interface {
	summary(Summary) error
	beginRows() error // after summary, before the first row
	row(*Row) error
	close() error // completes the export
	abort()       // releases resources; harmless after close
}

// istStamp returns t in IST with microseconds and the offset written,
// "2026-12-01T09:35:00.000000+05:30": the same instant as the chain's UTC
// stamp, to the microsecond, in the time zone the invoice date is in.
func istStamp(t time.Time) string {
	return t.In(gst.IST).Format("2006-01-02T15:04:05.000000-07:00")
}

// summaryField is one line of the summary block (CSV, XLSX).
type summaryField struct {
	label string
	value any // string or int64
}

// declaredLines returns the summary's line for each range of serials a
// settlement declared spent, in plain words, and what an intact verdict
// adds about them ("" when there are none).
func (s Summary) declaredLines() (lines []string, verdict string) {
	var count int64
	for _, d := range s.Declared {
		lines = append(lines, fmt.Sprintf("%s to %s (serials %d to %d, %s of device %s; declared %s by %s: %s)",
			d.FirstNumber, d.LastNumber, d.FirstSerial, d.LastSerial, Plural(d.Count, "number", "numbers"), d.DeviceID,
			PlainInstant(d.DeclaredAt), Who(d.DeclaredBy), d.Reason))
		count += d.Count
	}
	if count > 0 {
		verdict = "; " + Plural(count, "number", "numbers") + " declared spent by a lost device's settlement"
	}
	return lines, verdict
}

// fields returns the summary as labelled lines in the console's words
// (words.go): dates and instants in IST as a person writes them, 0 for
// nothing, lists joined with "; " and ranges written "7 to 9" (so
// spreadsheets do not read them as dates), and the 64-character
// fingerprint (the chain head) last.
func (s Summary) fields() []summaryField {
	list := func(parts []string) string {
		if len(parts) == 0 {
			return "0"
		}
		return strings.Join(parts, "; ")
	}
	var gaps, twice, regr, locked []string
	declared, declaredVerdict := s.declaredLines()
	opening := "0"
	if o := s.Opening; o != nil {
		opening = fmt.Sprintf("serials 1 to %d, last %s dated %s; declared %s by %s", o.LastSerial, o.LastNumber,
			PlainDay(o.LastInvoiceDate), PlainInstant(o.DeclaredAt), Who(o.DeclaredBy))
	}
	for _, l := range s.LockedPeriods {
		locked = append(locked, fmt.Sprintf("%s (locked %s by %s)", PlainMonth(l.FP), PlainInstant(l.LockedAt), Who(l.LockedBy)))
	}
	for _, g := range s.Gaps {
		if g.From == g.To {
			gaps = append(gaps, fmt.Sprint(g.From))
		} else {
			gaps = append(gaps, fmt.Sprintf("%d to %d", g.From, g.To))
		}
	}
	for _, d := range s.DuplicateSerials {
		twice = append(twice, fmt.Sprintf("serial %d", d))
	}
	for _, d := range s.DuplicateNumbers {
		twice = append(twice, fmt.Sprintf("%s (serials %s)", d.Number, joinInts(d.Serials)))
	}
	for _, d := range s.DateRegressions {
		regr = append(regr, fmt.Sprintf("%s dated %s, after %s", d.Number, PlainDay(d.InvoiceDate), PlainDay(d.PreviousDate)))
	}
	notStored := "0"
	switch {
	case s.CounterDrift > 0:
		notStored = fmt.Sprintf("%d (numbers up to serial %d were given out; the last invoice stored is serial %d)", s.CounterDrift, s.CounterLastSerial, s.MaxSerial)
	case s.CounterDrift < 0:
		notStored = fmt.Sprintf("0; the counter is %d behind the stored invoices (at serial %d, invoices up to serial %d): the next invoice would repeat a number", -s.CounterDrift, s.CounterLastSerial, s.MaxSerial)
	}
	verdict := "Intact: no number missing or used twice, no date out of order, nothing altered" + declaredVerdict
	if !s.Intact {
		verdict = "NOT intact: " + Plural(len(s.Findings), "finding", "findings")
		if s.FindingsOmitted > 0 {
			verdict += fmt.Sprintf(" and %d more", s.FindingsOmitted)
		}
	}
	tamper := "nothing altered"
	if s.Chain != "ok" {
		tamper = PlainText(s.Chain)
	}
	out := []summaryField{
		{"Seller GSTIN", s.SellerGSTIN},
		{"Series", s.Series},
		{"Document type", s.DocType},
		{"Financial year", s.FY},
		{"First number", s.FirstNumber},
		{"Last number", s.LastNumber},
		{"Total", s.Total},
		{"Cancelled", s.Cancelled},
		{"Net issued", s.NetIssued},
		{"Verdict", verdict},
		{"Missing numbers", list(gaps)},
		{"Numbers used twice", list(twice)},
		{"Dated earlier than the invoice before", list(regr)},
		{"Numbers given out but not stored", notStored},
		{"Tamper check", tamper + " (" + Plural(s.ChainRecords, "record", "records") + ")"},
		{"Issued before invoiced (declared)", opening},
		{"Declared spent (lost device)", list(declared)},
		{"Locked months (GSTR-1 filed)", list(locked)},
	}
	for _, f := range s.Findings {
		out = append(out, summaryField{"Finding", PlainFinding(f)})
	}
	return append(out,
		summaryField{"Tamper-check records", s.ChainLength},
		summaryField{"Fingerprint of the year so far", s.ChainHead})
}
