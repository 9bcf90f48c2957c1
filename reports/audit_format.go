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

// fields returns the summary as labelled lines, lists joined with "; "
// and ranges written "7 to 9" (so spreadsheets do not read them as dates).
func (s Summary) fields() []summaryField {
	none := func(parts []string) string {
		if len(parts) == 0 {
			return "none"
		}
		return strings.Join(parts, "; ")
	}
	var gaps, dupS, dupN, regr, locked, declared []string
	for _, d := range s.Declared {
		declared = append(declared, fmt.Sprintf("%d to %d (%s to %s, %d serials of device %s; declared %s by %s: %s)",
			d.FirstSerial, d.LastSerial, d.FirstNumber, d.LastNumber, d.Count, d.DeviceID, d.DeclaredAt, d.DeclaredBy, d.Reason))
	}
	opening := "none"
	if o := s.Opening; o != nil {
		opening = fmt.Sprintf("1 to %d (last %s dated %s; declared %s by %s)", o.LastSerial, o.LastNumber, o.LastInvoiceDate, o.DeclaredAt, o.DeclaredBy)
	}
	for _, l := range s.LockedPeriods {
		locked = append(locked, fmt.Sprintf("%s (locked %s by %s)", l.FP, l.LockedAt, l.LockedBy))
	}
	for _, g := range s.Gaps {
		if g.From == g.To {
			gaps = append(gaps, fmt.Sprint(g.From))
		} else {
			gaps = append(gaps, fmt.Sprintf("%d to %d", g.From, g.To))
		}
	}
	for _, d := range s.DuplicateSerials {
		dupS = append(dupS, fmt.Sprint(d))
	}
	for _, d := range s.DuplicateNumbers {
		dupN = append(dupN, fmt.Sprintf("%s (serials %s)", d.Number, joinInts(d.Serials)))
	}
	for _, d := range s.DateRegressions {
		regr = append(regr, fmt.Sprintf("%s dated %s after %s", d.Number, d.InvoiceDate, d.PreviousDate))
	}
	drift := "none"
	switch {
	case s.CounterDrift > 0:
		drift = fmt.Sprintf("counter ahead by %d (last_serial %d, highest stored %d)", s.CounterDrift, s.CounterLastSerial, s.MaxSerial)
	case s.CounterDrift < 0:
		drift = fmt.Sprintf("counter behind by %d (last_serial %d, highest stored %d)", -s.CounterDrift, s.CounterLastSerial, s.MaxSerial)
	}
	intact := "yes"
	if !s.Intact {
		intact = "no"
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
		{"Gaps", none(gaps)},
		{"Duplicate serials", none(dupS)},
		{"Duplicate numbers", none(dupN)},
		{"Dated before predecessor", none(regr)},
		{"Counter drift", drift},
		{"Chain records", s.ChainRecords},
		{"Chain", s.Chain},
		{"Chain length", s.ChainLength},
		{"Chain head", s.ChainHead},
		{"Intact", intact},
		{"Issued before invoiced", opening},
		{"Declared spent (lost device)", none(declared)},
		{"Locked periods", none(locked)},
	}
	for _, f := range s.Findings {
		out = append(out, summaryField{"Finding", f.String()})
	}
	if s.FindingsOmitted > 0 {
		out = append(out, summaryField{"Findings omitted", int64(s.FindingsOmitted)})
	}
	return out
}
