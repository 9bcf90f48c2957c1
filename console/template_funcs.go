package console

import (
	"html/template"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/reports"
)

// This file holds what the templates call. The console writes every date
// one way, "2 Jan 2006", and every time of day in IST as "2 Jan 2006,
// 15:04 IST", in the plain words it shares with the downloads (reports).

var funcs = template.FuncMap{
	// date writes a civil date (a time.Time at 00:00 UTC).
	"date": func(t time.Time) string { return t.Format(reports.DateLayout) },
	// day writes a date given as YYYY-MM-DD (the audit rows').
	"day": reports.PlainDay,
	// when writes an instant in IST.
	"when":    reports.ISTTime,
	"fyPath":  func(fy gst.FY) string { return fy.String() },
	"pathEsc": url.PathEscape,
	// key is the API's id of the invoice with serial in series code and
	// year fy (invoice.Key): the console's links use it, never the
	// database's id.
	"key":   document.Key,
	"ts":    document.Timestamp,
	"state": gst.StateLabel,
	// istTime writes an instant given as invoice.Timestamp in IST.
	"istTime": reports.PlainInstant,
	"plural":  reports.Plural,
	// deref returns *t (zero when nil), for the optional times of leases.
	"deref": func(t *time.Time) time.Time {
		if t == nil {
			return time.Time{}
		}
		return *t
	},
	"abs": func(n int64) int64 { return max(n, -n) },
	// month writes a month given as MMYYYY ("112026") as "Nov 2026".
	"month":   reports.PlainMonth,
	"who":     reports.Who,
	"finding": reports.FindingLabel,
	"explain": func(f reports.Finding) template.HTML { return keepNumbers(reports.ExplainFinding(f)) },
	"plain":   func(s string) template.HTML { return keepNumbers(reports.PlainText(s)) },
	"example": exampleNumber,
}

// numberRE matches a document number in a message: letters or digits, a
// slash, ending in a digit (CH1/26-27/00001).
var numberRE = regexp.MustCompile(`[A-Z0-9][A-Z0-9-]*/[A-Z0-9/-]*[0-9]`)

// keepNumbers returns the text s as HTML, each document number in it set
// in a nowrap span so that no line breaks inside it.
func keepNumbers(s string) template.HTML {
	var b strings.Builder
	last := 0
	for _, m := range numberRE.FindAllStringIndex(s, -1) {
		b.WriteString(template.HTMLEscapeString(s[last:m[0]]))
		b.WriteString(`<span class="nowrap">`)
		b.WriteString(template.HTMLEscapeString(s[m[0]:m[1]]))
		b.WriteString(`</span>`)
		last = m[1]
	}
	b.WriteString(template.HTMLEscapeString(s[last:]))
	return template.HTML(b.String()) // every part escaped above
}

// byOf returns what the console records as done by session s.
func byOf(s *session) string { return reports.ConsoleBy + apikey.Tag + s.principal.Prefix }

// exampleNumber returns the first number format gives in year fy, to show
// a series' format as a number instead of its template.
func exampleNumber(f gst.Format, fy gst.FY) string {
	n, err := f.Render(fy, 1)
	if err != nil {
		return f.String()
	}
	return n
}
