package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/invoiced/invoiced/api"
	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/reports"
)

// This file holds the GSTR-1 Table 13 page and its JSON download.

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
