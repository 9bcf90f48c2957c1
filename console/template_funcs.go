package console

import (
	"fmt"
	"html/template"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/reports"
)

// This file holds what the templates call: the date and time layouts, the
// template functions, and the plain words for who did something and for
// the audit's findings.

// The console writes every date one way, "2 Jan 2006", and every time of
// day in IST as "2 Jan 2006, 15:04 IST".
const (
	dateLayout = "2 Jan 2006"
	timeLayout = "2 Jan 2006, 15:04 IST"
)

var funcs = template.FuncMap{
	// date writes a civil date (a time.Time at 00:00 UTC).
	"date": func(t time.Time) string { return t.Format(dateLayout) },
	// day writes a date given as YYYY-MM-DD (the audit rows').
	"day": func(s string) string {
		d, err := time.Parse(time.DateOnly, s)
		if err != nil {
			return s
		}
		return d.Format(dateLayout)
	},
	// when writes an instant in IST.
	"when":    func(t time.Time) string { return t.In(gst.IST).Format(timeLayout) },
	"fyPath":  func(fy gst.FY) string { return fy.String() },
	"pathEsc": url.PathEscape,
	// key is the API's id of the invoice with serial in series code and
	// year fy (invoice.Key): the console's links use it, never the
	// database's id.
	"key":   document.Key,
	"ts":    document.Timestamp,
	"state": gst.StateLabel,
	// istTime writes an instant given as invoice.Timestamp in IST.
	"istTime": func(s string) string {
		t, err := time.Parse("2006-01-02T15:04:05.000000Z", s)
		if err != nil {
			return s
		}
		return t.In(gst.IST).Format(timeLayout)
	},
	"plural": plural,
	// deref returns *t (zero when nil), for the optional times of leases.
	"deref": func(t *time.Time) time.Time {
		if t == nil {
			return time.Time{}
		}
		return *t
	},
	"abs": func(n int64) int64 { return max(n, -n) },
	// month writes a month given as MMYYYY ("112026") as "Nov 2026".
	"month": func(fp string) string {
		m, err := document.ParseMonth(fp)
		if err != nil {
			return fp
		}
		return m.String()
	},
	"who":     who,
	"finding": findingLabel,
	"explain": explainFinding,
	"plain":   plainText,
	"example": exampleNumber,
}

// plural returns n with the singular or plural noun: "1 finding",
// "2 findings", "0 findings".
func plural(n any, one, many string) string {
	var v int64
	switch x := n.(type) {
	case int:
		v = int64(x)
	case int64:
		v = x
	}
	if v == 1 {
		return "1 " + one
	}
	return strconv.FormatInt(v, 10) + " " + many
}

// who returns, in plain words, who did something as the library records
// it: "key ik_ab12cd34" (an API key), "console key ik_…" (an API key
// signed in to the console), "cli" (the server's command line) or
// "device T07" (an offline terminal).
func who(by string) string {
	switch {
	case by == "cli":
		return "an administrator on the server"
	case strings.HasPrefix(by, consoleBy):
		return "API key " + strings.TrimPrefix(by, consoleBy) + " in the console"
	case strings.HasPrefix(by, "key "):
		return "API key " + strings.TrimPrefix(by, "key ")
	}
	return by
}

// consoleBy heads what the console records as who locked a month or ended
// a lease: the signed-in key's tag and prefix follow.
const consoleBy = "console key "

// byOf returns what the console records as done by session s.
func byOf(s *session) string { return consoleBy + apikey.Tag + s.principal.Prefix }

// findingLabels are the audit's finding kinds in plain words.
var findingLabels = map[reports.FindingKind]string{
	reports.HashMismatch:           "Invoice or record altered",
	reports.RecordMissing:          "Tamper-check records missing",
	reports.InvoiceMissing:         "Invoice deleted",
	reports.RecordedAtMismatch:     "Recorded time altered",
	reports.RecordOrder:            "Records out of order",
	reports.IssueRecordMissing:     "Issue not recorded",
	reports.IssueRecordDuplicate:   "Issue recorded twice",
	reports.CancelRecordMissing:    "Cancellation not recorded",
	reports.CancelRecordUnexpected: "Cancellation recorded wrongly",
	reports.ChainLengthMismatch:    "Record count differs",
	reports.ChainHeadMismatch:      "Fingerprint differs",
	reports.CounterMissing:         "Numbering counter missing",
	reports.OpeningMismatch:        "Opening declaration altered",
	reports.DeclaredSerial:         "Number declared before invoiced reused",
	reports.SerialGap:              "Missing numbers",
	reports.DuplicateSerial:        "Number used twice",
	reports.DuplicateNumberKind:    "Number used twice",
	reports.DateOrder:              "Dated earlier than the invoice before it",
	reports.DateOutsideFY:          "Dated outside its financial year",
	reports.NumberMismatch:         "Number does not match the series' pattern",
	reports.CounterAhead:           "Numbers given out but not stored",
	reports.CounterBehind:          "Numbering counter behind the stored invoices",
	reports.DeviceNotUploaded:      "Offline device's invoices not uploaded",
}

// findingLabel returns kind in plain words.
func findingLabel(kind reports.FindingKind) string {
	if l, ok := findingLabels[kind]; ok {
		return l
	}
	return string(kind)
}

// explainFinding returns what finding f means, in plain words and the
// console's date style.
func explainFinding(f reports.Finding) string {
	switch f.Kind {
	case reports.DeviceNotUploaded:
		return fmt.Sprintf("an offline device whose lease was ended by force may have printed serials from %d on that never reached invoiced; settle its lease on the Leases page once you know its last number", f.Serial)
	case reports.CounterAhead:
		return fmt.Sprintf("numbers up to serial %d were given out, but the last invoice stored is serial %d", f.To, f.Serial-1)
	case reports.CounterBehind:
		return fmt.Sprintf("invoices up to serial %d are stored, but the counter is at serial %d: the next invoice would repeat a number", f.To, f.Serial-1)
	}
	return plainText(f.Message)
}

var (
	isoInstant = regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z\b`)
	isoDate    = regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}\b`)
)

// plainText returns a message of the library (a finding, a Table 13
// warning) with its dates and instants in the console's style and its
// words for people: "its predecessor" is "the invoice before it".
func plainText(msg string) string {
	msg = isoInstant.ReplaceAllStringFunc(msg, func(s string) string {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return s
		}
		return t.In(gst.IST).Format(timeLayout)
	})
	msg = isoDate.ReplaceAllStringFunc(msg, func(s string) string {
		d, err := time.Parse(time.DateOnly, s)
		if err != nil {
			return s
		}
		return d.Format(dateLayout)
	})
	return strings.ReplaceAll(msg, "its predecessor", "the invoice before it")
}

// exampleNumber returns the first number format gives in year fy, to show
// a series' format as a number instead of its template.
func exampleNumber(f gst.Format, fy gst.FY) string {
	n, err := f.Render(fy, 1)
	if err != nil {
		return f.String()
	}
	return n
}
