package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/invoiced/invoiced/api"
	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/reports"
	"github.com/invoiced/invoiced/series"
)

// pageRows is how many audit rows a series-year page shows.
const pageRows = 100

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
	// year fy (document.Key): the console's links use it, never the
	// database's id.
	"key":   document.Key,
	"ts":    document.Timestamp,
	"state": gst.StateLabel,
	// istTime writes an instant given as document.Timestamp in IST.
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

// errForbidden is shown when the key lacks a scope.
var errForbidden = apikey.ErrForbidden

// require returns apikey.ErrForbidden unless the session's key has scope.
func require(s *session, scope string) error {
	if !s.principal.Has(scope) {
		return apperr.Errorf(errForbidden, "the API key you signed in with lacks the %q scope this needs", scope)
	}
	return nil
}

// ---- overview

type seriesLine struct {
	reports.Activity
	Numbers   []yearNumber
	CurrentFY gst.FY
}

type yearNumber struct {
	FY     gst.FY
	Last   string // the last number issued
	Serial int64
}

type overviewView struct {
	Series []seriesLine
	Today  time.Time
}

// overview serves GET /console/: each series with its last numbers, today's
// count, this year's cancellations and a link to check this year's chain
// (checked on demand, never on every view: its cost grows with the year).
func (c *Console) overview(w http.ResponseWriter, r *http.Request) {
	s := sessionOf(r)
	if err := require(s, apikey.ScopeRead); err != nil {
		c.fail(w, r, s, err)
		return
	}
	ctx := r.Context()
	today := gst.DateIST(c.now())
	fy := gst.FYOf(today)
	acts, err := reports.SeriesActivity(ctx, c.pool, s.principal.Seller, today)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	v := overviewView{Today: today}
	for _, a := range acts {
		line := seriesLine{Activity: a, CurrentFY: fy}
		for _, u := range a.Years {
			n, _ := a.Series.Format.Render(u.FY, u.LastSerial)
			line.Numbers = append(line.Numbers, yearNumber{FY: u.FY, Last: n, Serial: u.LastSerial})
		}
		v.Series = append(v.Series, line)
	}
	c.page(w, r, http.StatusOK, "overview", s, "Overview", v)
}

// ---- series-year

type seriesYearView struct {
	Series    gst.Series
	FY        gst.FY
	Head      reports.Head
	Checked   bool // Summary holds the whole year's check
	Summary   reports.Summary
	Rows      []reports.Row
	Number    string // the number searched for
	NextAfter int64  // serial to continue after; 0 when this is the last page
	After     int64
	CanCancel bool
	Chart     template.HTML
	Cancelled string // the number just cancelled, for the notice
	Base      string // this page's path
	// Elsewhere are the invoices numbered Number in other series or
	// years, when this year has none.
	Elsewhere []document.Invoice
}

// seriesYearOf reads the {code} and {fy} of the path.
func (c *Console) seriesYearOf(r *http.Request, s *session) (gst.Series, gst.FY, error) {
	fy, err := gst.ParseFY(r.PathValue("fy"))
	if err != nil {
		return gst.Series{}, 0, err
	}
	sr, err := series.Get(r.Context(), c.pool, s.principal.Seller.ID, r.PathValue("code"))
	return sr, fy, err
}

// seriesYear serves GET /console/series/{code}/{fy}[?after=N|?number=X]:
// the year's head (counter, chain head, first and last numbers), 100 rows
// from after N (or the one numbered X) with a chart of their days, and the
// downloads. Every read is an index lookup or the page's rows, so the page
// costs what it shows whatever the year's size.
func (c *Console) seriesYear(w http.ResponseWriter, r *http.Request) { c.seriesYearPage(w, r, false) }

// seriesYearCheck serves GET /console/series/{code}/{fy}/check: the
// series-year page with the whole year's audit summary (gaps, duplicates,
// dates, chain), computed now under the expensive-read budget.
func (c *Console) seriesYearCheck(w http.ResponseWriter, r *http.Request) {
	c.seriesYearPage(w, r, true)
}

func (c *Console) seriesYearPage(w http.ResponseWriter, r *http.Request, check bool) {
	s := sessionOf(r)
	if err := require(s, apikey.ScopeRead); err != nil {
		c.fail(w, r, s, err)
		return
	}
	ctx := r.Context()
	sr, fy, err := c.seriesYearOf(r, s)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	q := r.URL.Query()
	v := seriesYearView{Series: sr, FY: fy, CanCancel: s.principal.Has(apikey.ScopeIssue), Checked: check,
		Number: strings.ToUpper(strings.TrimSpace(q.Get("number"))), Cancelled: q.Get("cancelled"),
		Base: "/console/series/" + url.PathEscape(sr.Code) + "/" + fy.String()}
	if v.Head, err = reports.SeriesYearHead(ctx, c.pool, s.principal.Seller, sr, fy); err != nil {
		c.fail(w, r, s, err)
		return
	}
	if check {
		if v.Summary, err = reports.AuditSummary(ctx, c.pool, s.principal.Seller, sr, fy); err != nil {
			c.fail(w, r, s, err)
			return
		}
	}
	rq := reports.RowQuery{Limit: pageRows + 1, Number: v.Number}
	if a := q.Get("after"); a != "" && v.Number == "" {
		if rq.After, err = strconv.ParseInt(a, 10, 64); err != nil || rq.After < 0 {
			c.fail(w, r, s, apperr.Errorf(apperr.New(apperr.Malformed, "bad_page", "bad page"), "after must be a serial"))
			return
		}
		v.After = rq.After
	}
	rows, err := reports.AuditRows(ctx, c.pool, sr, fy, rq)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	if len(rows) > pageRows {
		rows = rows[:pageRows]
		v.NextAfter = rows[len(rows)-1].Serial
	}
	if len(rows) == 0 && v.Number != "" {
		// Not in this year: say where it is, if anywhere.
		found, err := c.findNumber(ctx, s, v.Number)
		if err != nil && apperr.KindOf(err) != apperr.Invalid {
			c.fail(w, r, s, err)
			return
		}
		v.Elsewhere = found
	}
	v.Rows = rows
	v.Chart = chartSVG(pageDays(rows), fy, gst.DateIST(c.now()))
	c.page(w, r, http.StatusOK, "series", s, sr.Code+" "+fy.String(), v)
}

// pageDays returns the invoices of rows per invoice date, in date order.
func pageDays(rows []reports.Row) []reports.DayCount {
	var out []reports.DayCount
	at := map[string]int{}
	for _, row := range rows {
		i, ok := at[row.InvoiceDate]
		if !ok {
			d, err := time.Parse(time.DateOnly, row.InvoiceDate)
			if err != nil {
				continue
			}
			i = len(out)
			at[row.InvoiceDate] = i
			out = append(out, reports.DayCount{Date: d})
		}
		out[i].Issued++
		if row.Status == document.StatusCancelled {
			out[i].Cancelled++
		}
	}
	slices.SortFunc(out, func(a, b reports.DayCount) int { return a.Date.Compare(b.Date) })
	return out
}

// auditDownload serves GET /console/series/{code}/{fy}/audit?format=csv|json|xlsx[&part=summary]:
// the export the API gives, as an attachment.
func (c *Console) auditDownload(w http.ResponseWriter, r *http.Request) {
	s := sessionOf(r)
	if err := require(s, apikey.ScopeRead); err != nil {
		c.fail(w, r, s, err)
		return
	}
	sr, fy, err := c.seriesYearOf(r, s)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	format := r.URL.Query().Get("format")
	ctype := reports.ContentType(format)
	if ctype == "" {
		c.fail(w, r, s, apperr.Errorf(reports.ErrInvalidFormat, "format %q must be csv, json or xlsx", format))
		return
	}
	write, suffix := reports.WriteAudit, ""
	if r.URL.Query().Get("part") == "summary" {
		write, suffix = reports.WriteAuditSummary, "-summary"
	}
	name := strings.ReplaceAll(sr.Code+"-"+fy.String()+"-audit"+suffix+"."+format, "/", "-")
	// The route's guard chain holds an expensive-read slot; the export is
	// spooled in its own transaction and sent after it has ended, as the
	// API's is, so a browser that does not read holds no connection.
	err = c.keys.SendExport(w, r, name, ctype, func(out io.Writer) error {
		return write(r.Context(), c.pool, s.principal.Seller, sr, fy, format, out)
	})
	if err != nil {
		c.fail(w, r, s, err)
	}
}

// ---- cancel

type cancelView struct {
	Invoice document.Invoice
	Key     string // the invoice's id in the API and the console, CH1-2026-7
	// Details is whether the key may read the invoice (scope read): only
	// then does the confirmation show its date, total and buyer.
	Details bool
	Total   string
	Reason  string
	Error   string
	Back    string
}

// cancelViewOf returns the confirmation of inv for session s.
func cancelViewOf(s *session, inv document.Invoice) cancelView {
	v := cancelView{Invoice: inv, Key: document.KeyOf(inv), Details: s.principal.Has(apikey.ScopeRead)}
	if v.Details {
		v.Total, v.Back = document.Money(inv.Totals.Total), backTo(inv)
	} else {
		v.Invoice = document.Invoice{ID: inv.ID, Number: inv.Number, SeriesCode: inv.SeriesCode, FY: inv.FY, Serial: inv.Serial, Status: inv.Status}
		v.Back = "/console/"
	}
	return v
}

// invoiceOf reads the {id} of the path, the API's invoice id
// ("CH1-2026-7", document.ParseKey), and returns the seller's invoice. The
// database's numeric ids are not accepted: they are global, so they
// counted every seller's invoices. Anything but the key of an invoice of
// the seller is invoice.ErrNotFound.
func (c *Console) invoiceOf(r *http.Request, s *session) (document.Invoice, error) {
	code, fy, serial, ok := document.ParseKey(r.PathValue("id"))
	if !ok {
		return document.Invoice{}, invoice.ErrNotFound
	}
	ctx := r.Context()
	sr, err := series.Get(ctx, c.pool, s.principal.Seller.ID, code)
	if errors.Is(err, series.ErrNotFound) {
		return document.Invoice{}, invoice.ErrNotFound
	}
	if err != nil {
		return document.Invoice{}, err
	}
	id, err := invoice.IDBySerial(ctx, c.pool, s.principal.Seller.ID, sr.ID, fy, serial)
	if err != nil {
		return document.Invoice{}, err
	}
	return invoice.Get(ctx, c.pool, s.principal.Seller.ID, id)
}

func backTo(inv document.Invoice) string {
	return "/console/series/" + url.PathEscape(inv.SeriesCode) + "/" + inv.FY.String() + "?number=" + url.QueryEscape(inv.Number)
}

// toCancel returns the invoice the path names, for a session whose key may
// cancel (scope issue); it fails as require and invoiceOf do.
func (c *Console) toCancel(r *http.Request, s *session) (document.Invoice, error) {
	if err := require(s, apikey.ScopeIssue); err != nil {
		return document.Invoice{}, err
	}
	return c.invoiceOf(r, s)
}

// cancelForm serves GET /console/invoices/{id}/cancel: the confirmation,
// with a field for the reason.
func (c *Console) cancelForm(w http.ResponseWriter, r *http.Request) {
	s := sessionOf(r)
	inv, err := c.toCancel(r, s)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	if inv.Status == document.StatusCancelled {
		c.fail(w, r, s, apperr.Errorf(invoice.ErrAlreadyCancelled, "%s is already cancelled", inv.Number))
		return
	}
	c.page(w, r, http.StatusOK, "cancel", s, "Cancel "+inv.Number, cancelViewOf(s, inv))
}

// cancel serves POST /console/invoices/{id}/cancel (fields reason and
// csrf_token): it cancels the invoice and returns to its row; a refusal
// shows the form again with the reason.
func (c *Console) cancel(w http.ResponseWriter, r *http.Request) {
	s := sessionOf(r)
	inv, err := c.toCancel(r, s)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	reason := strings.TrimSpace(r.PostFormValue("reason"))
	done, err := invoice.Cancel(r.Context(), c.pool, s.principal.Seller, inv.ID, reason, c.now(), c.keys.Options())
	if err != nil {
		status, _, msg, internal := api.Problem(err)
		if internal {
			c.fail(w, r, s, err)
			return
		}
		v := cancelViewOf(s, inv)
		v.Reason, v.Error = reason, msg
		c.page(w, r, status, "cancel", s, "Cancel "+inv.Number, v)
		return
	}
	if !s.principal.Has(apikey.ScopeRead) {
		// The series-year page needs read: say it here instead.
		c.page(w, r, http.StatusOK, "error", s, "Cancelled", errorView{Message: done.Number + " is cancelled. Its number stays used and is reported as cancelled."})
		return
	}
	http.Redirect(w, r, backTo(done)+"&cancelled="+url.QueryEscape(done.Number), http.StatusSeeOther)
}

// ---- GSTR-1 Table 13

type gstr1Row struct {
	Nature string
	reports.DocRange
}

type gstr1View struct {
	FP         string // as asked
	Period     reports.Period
	Rows       []gstr1Row
	Warnings   []string
	Error      string
	Quick      []quickPeriod
	HasPeriod  bool
	TotalCount int64
	Locks      []document.PeriodLock
	History    []document.PeriodEvent
	Declared   []string // serials issued before invoiced (openings)
	// CanLock is whether the key may lock months (scope manage);
	// Lockable the months of the period that have ended and are not
	// locked; Locked the month just locked, for the notice.
	CanLock  bool
	Lockable []document.Month
	Locked   string
}

type quickPeriod struct{ Label, FP string }

// quickPeriods returns the periods offered as links: this month, last
// month, this quarter, this financial year so far.
func quickPeriods(today time.Time) []quickPeriod {
	month := time.Date(today.Year(), today.Month(), 1, 0, 0, 0, 0, time.UTC)
	last := month.AddDate(0, -1, 0)
	fy := gst.FYOf(today)
	q := (int(month.Month())+8)%12/3 + 1 // April–June is Q1
	return []quickPeriod{
		{"This month", month.Format("012006")},
		{"Last month", last.Format("012006")},
		{fmt.Sprintf("Quarter %d", q), fmt.Sprintf("%s-Q%d", fy, q)},
		{"Year to date", fy.Start().Format("012006") + "-" + month.Format("012006")},
	}
}

// gstr1 serves GET /console/gstr1?fp=…: Table 13 as the GST portal lays
// it out, for a month, a quarter or a range.
func (c *Console) gstr1(w http.ResponseWriter, r *http.Request) {
	s := sessionOf(r)
	if err := require(s, apikey.ScopeRead); err != nil {
		c.fail(w, r, s, err)
		return
	}
	today := gst.DateIST(c.now())
	v := gstr1View{FP: strings.TrimSpace(r.URL.Query().Get("fp")), Quick: quickPeriods(today),
		CanLock: s.principal.Has(apikey.ScopeManage)}
	if m, err := document.ParseMonth(r.URL.Query().Get("locked")); err == nil {
		v.Locked = m.String()
	}
	status := http.StatusOK
	locks, err := invoice.PeriodLocks(r.Context(), c.pool, s.principal.Seller.ID)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	if v.History, err = invoice.PeriodEvents(r.Context(), c.pool, s.principal.Seller.ID); err != nil {
		c.fail(w, r, s, err)
		return
	}
	v.Locks = locks
	if v.FP == "" {
		v.FP = v.Quick[0].FP
	}
	p, err := reports.ParsePeriod(v.FP)
	if err != nil {
		status, _, v.Error, _ = api.Problem(err)
		c.page(w, r, status, "gstr1", s, "GSTR-1 Table 13", v)
		return
	}
	rep, err := reports.DocIssue(r.Context(), c.pool, s.principal.Seller, p)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	v.Period, v.HasPeriod, v.Warnings, v.Declared = p, true, rep.Warnings, rep.Declared
	if v.CanLock {
		v.Lockable = lockableMonths(p, locks, c.now())
	}
	for _, d := range rep.DocIssue.DocDet {
		for _, doc := range d.Docs {
			v.Rows = append(v.Rows, gstr1Row{Nature: gst.NatureOf(d.DocNum), DocRange: doc})
			v.TotalCount += doc.TotNum
		}
	}
	c.page(w, r, status, "gstr1", s, "GSTR-1 Table 13", v)
}

// gstr1JSON serves GET /console/gstr1.json?fp=…: the doc_issue JSON the
// API gives, as an attachment.
func (c *Console) gstr1JSON(w http.ResponseWriter, r *http.Request) {
	s := sessionOf(r)
	if err := require(s, apikey.ScopeRead); err != nil {
		c.fail(w, r, s, err)
		return
	}
	p, err := reports.ParsePeriod(r.URL.Query().Get("fp"))
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	rep, err := reports.DocIssue(r.Context(), c.pool, s.principal.Seller, p)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Disposition", `attachment; filename="gstr1-doc-issue-`+p.String()+`.json"`)
	_, _ = w.Write(append(b, '\n')) // a failed write means the browser has gone
}

// ---- verify

type verifyView struct {
	Chains []verifyLine
	Empty  bool
	OK     bool
}

type verifyLine struct {
	reports.ChainResult
	Head string
}

// verify serves GET /console/verify: each series-year intact, or each break
// with its place, and each chain head to anchor.
func (c *Console) verify(w http.ResponseWriter, r *http.Request) {
	s := sessionOf(r)
	if err := require(s, apikey.ScopeRead); err != nil {
		c.fail(w, r, s, err)
		return
	}
	rep, err := reports.Verify(r.Context(), c.pool, s.principal.Seller, "", 0)
	var v verifyView
	switch {
	case errors.Is(err, reports.ErrSeriesYearNotFound):
		v.Empty = true
	case err != nil:
		c.fail(w, r, s, err)
		return
	}
	v.OK = rep.OK()
	for _, ch := range rep.Chains {
		v.Chains = append(v.Chains, verifyLine{ChainResult: ch, Head: fmt.Sprintf("%x", ch.ChainHead)})
	}
	c.page(w, r, http.StatusOK, "verify", s, "Verify", v)
}
