package console

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/invoice"
)

// This file holds the top bar's search: an invoice by its number across
// every series and year of the seller (invoice.FindByNumber, as the API's
// GET /v1/invoices?number= finds it).

// errBadNumber: a search without a number, or one longer than any.
var errBadNumber = apperr.New(apperr.Invalid, "invalid_number", "type an invoice number, such as CH1/26-27/00042")

// maxNumberLen is the longest invoice number a format renders.
const maxNumberLen = 16

type findView struct {
	Number string
	Found  []document.Invoice
	Error  string
}

// foundAt returns the series-year page that shows inv's row.
func foundAt(inv document.Invoice) string {
	return "/console/series/" + url.PathEscape(inv.SeriesCode) + "/" + inv.FY.String() + "?number=" + url.QueryEscape(inv.Number)
}

// findNumber returns the seller's invoices numbered number (any case),
// newest year first; errBadNumber for an empty or overlong number.
func (c *Console) findNumber(ctx context.Context, s *session, number string) ([]document.Invoice, error) {
	if number == "" || len(number) > maxNumberLen {
		return nil, apperr.Errorf(errBadNumber, "Type an invoice number of at most %d characters, such as CH1/26-27/00042.", maxNumberLen)
	}
	return invoice.FindByNumber(ctx, c.pool, s.principal.Seller.ID, number)
}

// find serves GET /console/find?number=X (scope read): the series-year
// page with the invoice's row when one invoice of the seller has that
// number, else a page listing them (a format without the year repeats its
// numbers each year) or saying there is none.
func (c *Console) find(w http.ResponseWriter, r *http.Request) {
	s := sessionOf(r)
	if err := require(s, apikey.ScopeRead); err != nil {
		c.fail(w, r, s, err)
		return
	}
	v := findView{Number: strings.ToUpper(strings.TrimSpace(r.URL.Query().Get("number")))}
	found, err := c.findNumber(r.Context(), s, v.Number)
	switch {
	case apperr.KindOf(err) == apperr.Invalid:
		v.Error = apperr.MessageOf(err)
		c.page(w, r, http.StatusUnprocessableEntity, "find", s, "Find an invoice", v)
		return
	case err != nil:
		c.fail(w, r, s, err)
		return
	case len(found) == 1:
		http.Redirect(w, r, foundAt(found[0]), http.StatusSeeOther)
		return
	}
	v.Found = found
	status := http.StatusOK
	if len(found) == 0 {
		status = http.StatusNotFound
	}
	c.page(w, r, status, "find", s, "Find "+v.Number, v)
}
