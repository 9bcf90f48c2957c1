package console

import (
	"net/http"
	"net/url"
	"time"

	"github.com/invoiced/invoiced/api"
	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/reports"
)

// This file holds the locking of a month after its GSTR-1 is filed
// (docs/periods.md): a confirmation, then the lock, through
// invoice.LockPeriod as the API's POST /v1/periods/{fp}/lock and the CLI's
// `periods lock` do. Unlocking stays on the server's command line.

// errNotFiled: the confirmation's "filed" box was not ticked.
var errNotFiled = apperr.New(apperr.Invalid, "not_confirmed", "confirm that the month's GSTR-1 is filed")

// lockView is the confirmation of locking a month.
type lockView struct {
	Month document.Month
	Ended bool                 // the month has ended (IST), so it may be locked
	Lock  *document.PeriodLock // the lock, when the month is locked already
	// Details is whether the key may read: only then does the page show
	// how many documents are dated in the month.
	Details   bool
	Documents int64
	Cancelled int64
	Error     string
}

// monthEnded reports whether m ended before now's month (IST).
func monthEnded(m document.Month, now time.Time) bool {
	return m.Start().Before(document.MonthOf(gst.DateIST(now)).Start())
}

// lockViewOf returns the confirmation of locking the month the path's
// {fp} names, for session s; it fails with document.ErrInvalidMonth and
// database errors.
func (c *Console) lockViewOf(r *http.Request, s *session) (lockView, error) {
	m, err := document.ParseMonth(r.PathValue("fp"))
	if err != nil {
		return lockView{}, err
	}
	ctx := r.Context()
	v := lockView{Month: m, Ended: monthEnded(m, c.now()), Details: s.principal.Has(apikey.ScopeRead)}
	locks, err := invoice.PeriodLocks(ctx, c.pool, s.principal.Seller.ID)
	if err != nil {
		return lockView{}, err
	}
	for _, l := range locks {
		if l.Month == m {
			v.Lock = &l
		}
	}
	if v.Details {
		p, err := reports.ParsePeriod(m.FP())
		if err != nil {
			return lockView{}, err
		}
		rep, err := reports.DocIssue(ctx, c.pool, s.principal.Seller, p)
		if err != nil {
			return lockView{}, err
		}
		for _, d := range rep.DocIssue.DocDet {
			for _, doc := range d.Docs {
				v.Documents += doc.TotNum
				v.Cancelled += doc.Cancel
			}
		}
	}
	return v, nil
}

// lockForm serves GET /console/periods/{fp}/lock (scope manage): what
// locking the month means, and the button.
func (c *Console) lockForm(w http.ResponseWriter, r *http.Request) {
	s := sessionOf(r)
	v, err := c.lockViewOf(r, s)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.page(w, r, http.StatusOK, "lock", s, "Lock "+v.Month.String(), v)
}

// lock serves POST /console/periods/{fp}/lock (fields filed=yes and
// csrf_token; scope manage): it locks the month, recorded as done by the
// session's key in the console, and returns to GSTR-1 with a notice. A
// refusal (the box not ticked, a month not ended) shows the
// confirmation again with the reason.
func (c *Console) lock(w http.ResponseWriter, r *http.Request) {
	s := sessionOf(r)
	v, err := c.lockViewOf(r, s)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	if r.PostFormValue("filed") != "yes" {
		err = apperr.Errorf(errNotFiled, "Tick the box to confirm that the GSTR-1 of %s is filed.", v.Month)
	} else {
		_, _, err = invoice.LockPeriod(r.Context(), c.pool, s.principal.Seller, v.Month, byOf(s), c.now())
	}
	if err != nil {
		status, _, msg, internal := api.Problem(err)
		if internal {
			c.fail(w, r, s, err)
			return
		}
		v.Error = msg
		c.page(w, r, status, "lock", s, "Lock "+v.Month.String(), v)
		return
	}
	if !s.principal.Has(apikey.ScopeRead) {
		// The GSTR-1 page needs read: say it here instead.
		c.page(w, r, http.StatusOK, "error", s, "Locked", errorView{Message: v.Month.String() + " is locked."})
		return
	}
	http.Redirect(w, r, "/console/gstr1?fp="+v.Month.FP()+"&locked="+url.QueryEscape(v.Month.FP()), http.StatusSeeOther)
}

// lockableMonths returns the months of p that have ended by now and are
// not among locks, in order.
func lockableMonths(p reports.Period, locks []document.PeriodLock, now time.Time) []document.Month {
	var out []document.Month
	for m := document.MonthOf(p.FirstDay()); !m.Start().After(p.LastDay()); m = document.MonthOf(m.Start().AddDate(0, 1, 0)) {
		if !monthEnded(m, now) {
			break
		}
		locked := false
		for _, l := range locks {
			locked = locked || l.Month == m
		}
		if !locked {
			out = append(out, m)
		}
	}
	return out
}
