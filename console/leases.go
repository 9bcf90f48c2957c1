package console

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/invoiced/invoiced/api"
	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/lease"
	"github.com/invoiced/invoiced/series"
)

// This file holds the leases page (docs/offline.md): which series are
// with which offline device since when, what is not uploaded, and the
// CLI's `leases end` and `leases settle` as forms, through the same
// library calls (lease.ForceEndLease, lease.SettleLeaseYears). A lease's
// id, the device's credential, is never shown.

// pastLeases is how many leases that no longer hold a series the page
// shows.
const pastLeases = 20

// leaseYear is one financial year of a lease: the last serial stored in
// it (uploaded, for a leased series), for a forced end the last one
// uploaded when it ended, the last one the device reported in an end
// request, and the least a settlement may declare (Known).
type leaseYear struct {
	FY          gst.FY
	Stored      int64
	StoredNo    string // the number of serial Stored; "" when 0
	Reported    int64  // the device's own report for this year; 0: none
	ReportedNo  string
	Known       int64 // the later of Stored and Reported
	AtEnd       int64
	AtEndNo     string
	HasEnd      bool
	Declared    int64 // a settlement's last serial; with HasDeclared
	DeclaredNo  string
	HasDeclared bool
}

// leaseLine is a lease as the page shows it.
type leaseLine struct {
	Series  gst.Series
	Lease   lease.Lease
	StartNo string // the first number the device was to give
	Years   []leaseYear
	Forced  bool // ended by force and not settled: the series is still held
	InForce bool // not ended
}

type leasesView struct {
	Holding []leaseLine
	Past    []leaseLine
	Manage  bool
	Notice  string
}

// render returns serial's number in s and year fy; "" for serial 0.
func render(s gst.Series, fy gst.FY, serial int64) string {
	if serial <= 0 {
		return ""
	}
	n, err := s.Format.Render(fy, serial)
	if err != nil {
		return strconv.FormatInt(serial, 10)
	}
	return n
}

// lineOf returns lease l of s as the page shows it; stored is the last
// serial stored per year (the series' counters).
func (c *Console) lineOf(s gst.Series, l lease.Lease, stored map[gst.FY]int64) leaseLine {
	out := leaseLine{Series: s, Lease: l, StartNo: render(s, l.Next.FY, l.Next.Serial),
		InForce: l.EndedAt == nil, Forced: l.EndedAt != nil && l.SettledAt == nil}
	for _, y := range l.Years() {
		ly := leaseYear{FY: y, Stored: stored[y], Known: l.Known(y, stored[y])}
		ly.StoredNo = render(s, y, ly.Stored)
		if l.ReportedFY == y {
			ly.Reported, ly.ReportedNo = l.ReportedSerial, render(s, y, l.ReportedSerial)
		}
		if n, ok := l.EndYears[y]; ok {
			ly.AtEnd, ly.HasEnd = n, true
		} else if l.EndedAt != nil && y == l.EndFY {
			ly.AtEnd, ly.HasEnd = l.EndSerial, true
		}
		ly.AtEndNo = render(s, y, ly.AtEnd)
		if n, ok := l.DeclaredYears[y]; ok {
			ly.Declared, ly.HasDeclared = n, true
			ly.DeclaredNo = render(s, y, n)
		}
		out.Years = append(out.Years, ly)
	}
	return out
}

// sellerSeries returns the seller's series by id, with the last serial
// stored per year of each.
func (c *Console) sellerSeries(ctx context.Context, s *session) (map[int64]series.SeriesUsage, error) {
	all, err := series.List(ctx, c.pool, s.principal.Seller.ID)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]series.SeriesUsage, len(all))
	for _, su := range all {
		out[su.ID] = su
	}
	return out, nil
}

func storedOf(su series.SeriesUsage) map[gst.FY]int64 {
	m := make(map[gst.FY]int64, len(su.Years))
	for _, u := range su.Years {
		m[u.FY] = u.LastSerial
	}
	return m
}

// leases serves GET /console/leases (scope read): the series leased to
// offline devices, since when, what is uploaded, and the last leases that
// ended; for a key with manage, the forms that end a lost device's lease
// and settle it.
func (c *Console) leases(w http.ResponseWriter, r *http.Request) {
	s := sessionOf(r)
	if err := require(s, apikey.ScopeRead); err != nil {
		c.fail(w, r, s, err)
		return
	}
	ctx := r.Context()
	all, err := c.sellerSeries(ctx, s)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	holding, past, err := lease.SellerLeases(ctx, c.pool, s.principal.Seller.ID, pastLeases)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	v := leasesView{Manage: s.principal.Has(apikey.ScopeManage)}
	q := r.URL.Query()
	if code, err := series.ParseCode(q.Get("ended")); err == nil {
		v.Notice = "The lease of " + code + " is ended. The series stays held until it is settled."
	}
	if code, err := series.ParseCode(q.Get("settled")); err == nil {
		v.Notice = "The lease of " + code + " is settled. The series is free again and continues after the declared numbers."
	}
	for _, l := range holding {
		su := all[l.SeriesID]
		v.Holding = append(v.Holding, c.lineOf(su.Series, l, storedOf(su)))
	}
	for _, l := range past {
		su := all[l.SeriesID]
		v.Past = append(v.Past, c.lineOf(su.Series, l, storedOf(su)))
	}
	c.page(w, r, http.StatusOK, "leases", s, "Offline devices", v)
}

// leaseFormView is the confirmation of ending or settling a lease.
type leaseFormView struct {
	Line   leaseLine
	Reason string
	Error  string
	// Through is what was typed per year (settle), by FY.
	Through map[gst.FY]string
}

// heldLease returns the lease holding the series the path's {code} names,
// as the page shows it; series.ErrNotFound or lease.ErrLeaseNotFound
// when there is none.
func (c *Console) heldLease(r *http.Request, s *session) (leaseLine, error) {
	ctx := r.Context()
	sr, err := series.Get(ctx, c.pool, s.principal.Seller.ID, r.PathValue("code"))
	if err != nil {
		return leaseLine{}, err
	}
	l, err := lease.HolderLease(ctx, c.pool, sr)
	if err != nil {
		return leaseLine{}, err
	}
	all, err := c.sellerSeries(ctx, s)
	if err != nil {
		return leaseLine{}, err
	}
	return c.lineOf(sr, l, storedOf(all[sr.ID])), nil
}

// leaseDone redirects to the leases page with notice key=code, or, for a
// key without read (which may not see that page), says what was done.
func (c *Console) leaseDone(w http.ResponseWriter, r *http.Request, s *session, key, code, msg string) {
	if !s.principal.Has(apikey.ScopeRead) {
		c.page(w, r, http.StatusOK, "error", s, "Done", errorView{Message: msg})
		return
	}
	http.Redirect(w, r, "/console/leases?"+key+"="+url.QueryEscape(code), http.StatusSeeOther)
}

// leaseRefused shows form name again with err's message and status, or
// fails for an internal error.
func (c *Console) leaseRefused(w http.ResponseWriter, r *http.Request, s *session, name, title string, v leaseFormView, err error) {
	status, _, msg, internal := api.Problem(err)
	if internal {
		c.fail(w, r, s, err)
		return
	}
	v.Error = msg
	c.page(w, r, status, name, s, title, v)
}

// leaseEndForm serves GET /console/leases/{code}/end (scope manage): what
// ending a lost device's lease by force does, with a field for the reason.
func (c *Console) leaseEndForm(w http.ResponseWriter, r *http.Request) {
	s := sessionOf(r)
	line, err := c.heldLease(r, s)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.page(w, r, http.StatusOK, "leaseend", s, "End the lease of "+line.Series.Code, leaseFormView{Line: line})
}

// leaseEnd serves POST /console/leases/{code}/end (fields reason and
// csrf_token; scope manage): lease.ForceEndLease, recorded as done by the
// session's key in the console, as `invoiced leases end` does.
func (c *Console) leaseEnd(w http.ResponseWriter, r *http.Request) {
	s := sessionOf(r)
	line, err := c.heldLease(r, s)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	v := leaseFormView{Line: line, Reason: strings.TrimSpace(r.PostFormValue("reason"))}
	if _, err := lease.ForceEndLease(r.Context(), c.pool, line.Series, v.Reason, byOf(s), c.now()); err != nil {
		c.leaseRefused(w, r, s, "leaseend", "End the lease of "+line.Series.Code, v, err)
		return
	}
	c.leaseDone(w, r, s, "ended", line.Series.Code, "The lease of "+line.Series.Code+" is ended. The series stays held until it is settled.")
}

// leaseSettleForm serves GET /console/leases/{code}/settle (scope
// manage): for each year of a lease ended by force, a field for the last
// serial the device may have printed, and the reason.
func (c *Console) leaseSettleForm(w http.ResponseWriter, r *http.Request) {
	s := sessionOf(r)
	line, err := c.heldLease(r, s)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	v := leaseFormView{Line: line, Through: map[gst.FY]string{}}
	for _, y := range line.Years {
		v.Through[y.FY] = strconv.FormatInt(y.Known, 10)
	}
	c.page(w, r, http.StatusOK, "leasesettle", s, "Settle the lease of "+line.Series.Code, v)
}

// errBadThrough: a settlement's serial is not a whole number.
var errBadThrough = apperr.New(apperr.Invalid, "invalid_lease", "the last serial must be a whole number")

// leaseSettle serves POST /console/leases/{code}/settle (fields
// through-{fy} for each year of the lease, reason and csrf_token; scope
// manage): lease.SettleLeaseYears, as `invoiced leases settle --years`
// does. The serials after each year's last stored one up to the declared
// one are spent, and the series is free again.
func (c *Console) leaseSettle(w http.ResponseWriter, r *http.Request) {
	s := sessionOf(r)
	line, err := c.heldLease(r, s)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	title := "Settle the lease of " + line.Series.Code
	v := leaseFormView{Line: line, Reason: strings.TrimSpace(r.PostFormValue("reason")), Through: map[gst.FY]string{}}
	declared := map[gst.FY]int64{}
	for _, y := range line.Years {
		text := strings.TrimSpace(r.PostFormValue("through-" + y.FY.String()))
		v.Through[y.FY] = text
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil || n < 0 {
			c.leaseRefused(w, r, s, "leasesettle", title, v, apperr.Errorf(errBadThrough, "The last serial of %s must be a whole number, %d or more.", y.FY, y.Known))
			return
		}
		declared[y.FY] = n
	}
	if _, err := lease.SettleLeaseYears(r.Context(), c.pool, line.Series, declared, v.Reason, byOf(s), c.now(), invoice.DeclarationSeal(s.principal.Seller.GSTIN)); err != nil {
		c.leaseRefused(w, r, s, "leasesettle", title, v, err)
		return
	}
	c.leaseDone(w, r, s, "settled", line.Series.Code, "The lease of "+line.Series.Code+" is settled. The series is free again.")
}
