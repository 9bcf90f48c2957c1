package reports

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
)

// This file holds the plain words the console and the downloads a person
// reads (the audit summary in CSV and XLSX) share: one date style, who
// did something, the findings, plurals. The JSON export and the CLI's
// machine output keep the library's terms.

// Every date a person reads is written "2 Jan 2006", and every instant in
// IST as "2 Jan 2006, 15:04 IST".
const (
	DateLayout = "2 Jan 2006"
	TimeLayout = "2 Jan 2006, 15:04 IST"
)

// ISTTime returns t as a person reads it: "1 Dec 2026, 09:35 IST".
func ISTTime(t time.Time) string { return t.In(gst.IST).Format(TimeLayout) }

// PlainDay returns a date written YYYY-MM-DD as "1 Dec 2026"; s as it is
// when it is not one.
func PlainDay(s string) string {
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return s
	}
	return d.Format(DateLayout)
}

// PlainInstant returns an instant written as document.Timestamp (UTC) in
// IST, "1 Dec 2026, 09:35 IST"; s as it is when it is not one.
func PlainInstant(s string) string {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return s
	}
	return ISTTime(t)
}

// PlainMonth returns a return period written MMYYYY ("112026") as
// "Nov 2026"; fp as it is when it is not one.
func PlainMonth(fp string) string {
	m, err := document.ParseMonth(fp)
	if err != nil {
		return fp
	}
	return m.String()
}

// Plural returns n with the singular or plural noun: "1 finding",
// "2 findings", "0 findings". n is an int or an int64.
func Plural(n any, one, many string) string {
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

// ConsoleBy heads what the console records as who locked a month or ended
// a lease: the signed-in key's tag and prefix follow.
const ConsoleBy = "console key "

// Who returns, in plain words, who did something as the library records
// it: "key ik_ab12cd34" (an API key), "console key ik_…" (an API key
// signed in to the console), "cli" (the server's command line) or
// "device T07" (an offline terminal).
func Who(by string) string {
	switch {
	case by == "cli":
		return "an administrator on the server"
	case strings.HasPrefix(by, ConsoleBy):
		return "API key " + strings.TrimPrefix(by, ConsoleBy) + " in the console"
	case strings.HasPrefix(by, "key "):
		return "API key " + strings.TrimPrefix(by, "key ")
	}
	return by
}

// findingLabels are the audit's finding kinds in plain words.
var findingLabels = map[FindingKind]string{
	HashMismatch:           "Invoice or record altered",
	RecordMissing:          "Tamper-check records missing",
	InvoiceMissing:         "Invoice deleted",
	RecordedAtMismatch:     "Recorded time altered",
	RecordOrder:            "Records out of order",
	IssueRecordMissing:     "Issue not recorded",
	IssueRecordDuplicate:   "Issue recorded twice",
	CancelRecordMissing:    "Cancellation not recorded",
	CancelRecordUnexpected: "Cancellation recorded wrongly",
	ChainLengthMismatch:    "Record count differs",
	ChainHeadMismatch:      "Fingerprint differs",
	CounterMissing:         "Numbering counter missing",
	OpeningMismatch:        "Opening declaration altered",
	DeclaredSerial:         "Number declared before invoiced reused",
	SerialGap:              "Missing numbers",
	DuplicateSerial:        "Number used twice",
	DuplicateNumberKind:    "Number used twice",
	DateOrder:              "Dated earlier than the invoice before it",
	DateOutsideFY:          "Dated outside its financial year",
	NumberMismatch:         "Number does not match the series' pattern",
	CounterAhead:           "Numbers given out but not stored",
	CounterBehind:          "Numbering counter behind the stored invoices",
	DeviceNotUploaded:      "Offline device's invoices not uploaded",
}

// FindingLabel returns kind in plain words.
func FindingLabel(kind FindingKind) string {
	if l, ok := findingLabels[kind]; ok {
		return l
	}
	return string(kind)
}

// ExplainFinding returns what finding f means, in plain words and the
// plain date style; the pages it names are the console's, by their names
// in its menu.
func ExplainFinding(f Finding) string {
	switch f.Kind {
	case DeviceNotUploaded:
		return fmt.Sprintf("an offline device whose lease was ended by force may have printed serials from %d on that never reached invoiced; settle its lease on the Offline devices page once you know its last number", f.Serial)
	case CounterAhead:
		return fmt.Sprintf("numbers up to serial %d were given out, but the last invoice stored is serial %d", f.To, f.Serial-1)
	case CounterBehind:
		return fmt.Sprintf("invoices up to serial %d are stored, but the counter is at serial %d: the next invoice would repeat a number", f.To, f.Serial-1)
	}
	return PlainText(f.Message)
}

// PlainFinding returns f on one line as a person reads it: "Missing
// numbers at serial 3: serials 3-4 are missing".
func PlainFinding(f Finding) string {
	var b strings.Builder
	b.WriteString(FindingLabel(f.Kind))
	if f.Serial > 0 {
		fmt.Fprintf(&b, " at serial %d", f.Serial)
	}
	if f.Position > 0 {
		fmt.Fprintf(&b, " (record %d)", f.Position)
	}
	b.WriteString(": ")
	b.WriteString(ExplainFinding(f))
	return b.String()
}

var (
	isoInstant = regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z\b`)
	isoDate    = regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}\b`)
)

// PlainText returns a message of the library (a finding, a Table 13
// warning) with its dates and instants in the plain style and its words
// for people: "its predecessor" is "the invoice before it".
func PlainText(msg string) string {
	msg = isoInstant.ReplaceAllStringFunc(msg, PlainInstant)
	msg = isoDate.ReplaceAllStringFunc(msg, PlainDay)
	return strings.ReplaceAll(msg, "its predecessor", "the invoice before it")
}
