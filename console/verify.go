package console

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/reports"
)

// This file holds the verify page.

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
