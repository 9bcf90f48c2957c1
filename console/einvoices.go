package console

import (
	"net/http"

	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/einvoice/registration"
)

// This file holds the e-invoicing page: the registrations at the IRP that
// need a person (docs/e-invoice.md): refused by the IRP, or an IRN the IRP
// would not cancel for a cancelled invoice.

// maxProblems is how many of them the page lists, newest first.
const maxProblems = 200

type eInvoicesView struct {
	EInvoicing bool
	Problems   []registration.Problem
}

// eInvoices serves GET /console/e-invoices (scope read).
func (c *Console) eInvoices(w http.ResponseWriter, r *http.Request) {
	s := sessionOf(r)
	if err := require(s, apikey.ScopeRead); err != nil {
		c.fail(w, r, s, err)
		return
	}
	ps, err := registration.Problems(r.Context(), c.pool, s.principal.Seller.ID, maxProblems)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.page(w, r, http.StatusOK, "e-invoices", s, "E-invoices", eInvoicesView{EInvoicing: s.principal.Seller.EInvoicing, Problems: ps})
}
