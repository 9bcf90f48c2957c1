package console

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/invoiced/invoiced/api"
	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/series"
)

// This file holds cancelling an invoice: the confirmation and the cancel.

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
// ("CH1-2026-7", invoice.ParseKey), and returns the seller's invoice. The
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
