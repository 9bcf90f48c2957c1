package console

import (
	"html/template"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/reports"
	"github.com/invoiced/invoiced/series"
)

// pageRows is how many audit rows a series-year page shows.
const pageRows = 100

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
