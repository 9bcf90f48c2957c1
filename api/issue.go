package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/metrics"
	"github.com/invoiced/invoiced/invoice"
	"github.com/labstack/echo/v4"
)

// headerReplayed is "true" on an answer replayed for an Idempotency-Key.
const headerReplayed = "Idempotent-Replayed"

// issueInvoice serves POST /v1/series/{code}/invoices (scope issue). The
// request is validated and its amounts computed before any transaction, so
// a refused request never touches a number.
func (s *Server) issueInvoice(c echo.Context) error {
	ctx := c.Request().Context()
	p, err := s.authorize(c, apikey.CanIssue)
	if err != nil {
		return err
	}
	key, err := idempotencyKey(c.Request().Header)
	if err != nil {
		return err
	}
	body, err := readJSON(c.Response(), c.Request(), s.bodyLimit(issueBodyMax))
	if err != nil {
		return err
	}
	var hash []byte
	if key != "" {
		hash = requestHash(http.MethodPost, "/v1/series/"+strings.ToUpper(c.Param("code"))+"/invoices", body)
	}
	req, err := decodeIssueRequest(body)
	if err != nil {
		return err
	}
	sr, err := s.seriesOf(ctx, p, c.Param("code"))
	if err != nil {
		return err
	}
	// The date window is judged in the transaction, once the key is
	// claimed (invoice.Config.DateWindow): a retry of a request that succeeded
	// replays it even if its date is now too old, and a retry of one that
	// may still commit is never refused for its date. The original of a
	// note and a locked month are checked here, early; both stay true for
	// an attempt that may still commit (invoices are never deleted, and the
	// issuing transaction checks the month again under the seller's row
	// lock, so a queued attempt in a month locked since is refused too).
	d, incomplete, err := s.prepare(ctx, p.Seller, sr, req)
	if err != nil {
		// A retry of a request that succeeded earlier replays its answer
		// even if it would no longer pass (its date is now too old, its
		// month is now locked).
		if key != "" {
			if inv, ok, rerr := s.lookupReplay(ctx, p.Seller.ID, key, hash); rerr != nil {
				return rerr
			} else if ok {
				return s.replay(c, inv)
			}
		}
		return err
	}
	d.IdempotencyKey, d.RequestHash = key, hash
	r := s.committer.Issue(ctx, invoice.IssueRequest{Seller: p.Seller, Series: sr, Draft: d})
	switch {
	case r.Err != nil:
		return r.Err
	case r.Replayed:
		return s.replay(c, r.Invoice)
	}
	s.metrics.Issued(string(r.Invoice.DocType), metrics.SourceOnline, 1)
	s.warnIncomplete(c, p.Seller, r.Invoice, incomplete)
	return writeJSON(c, http.StatusCreated, renderInvoice(fresh(p.Seller, r.Invoice), s.publicURL))
}

// prepare validates req for series sr of seller and computes it (see
// document.PrepareContent), judges the recipient's particulars
// (document.CheckParticulars, by Config.BuyerDetails), then checks a note's
// original and a backdated invoice's month; it returns the draft, or the
// refusal (4xx) or a database error. Under WarnBuyerDetails a draft that
// lacks particulars is returned with incomplete holding the refusal
// RequireBuyerDetails would give (warnIncomplete tells the client once the
// invoice is issued). The date window is not judged here (see
// issueInvoice).
func (s *Server) prepare(ctx context.Context, seller gst.Seller, sr gst.Series, req document.Request) (d document.Draft, incomplete, err error) {
	now := s.now()
	d, err = document.PrepareContent(req, seller, sr, now)
	if err == nil {
		if incomplete = document.CheckParticulars(&d, sr.DocType); incomplete != nil && s.buyerDetails == RequireBuyerDetails {
			err, incomplete = incomplete, nil
		}
	}
	if err == nil {
		err = invoice.CheckOriginal(ctx, s.pool, seller, &d)
	}
	if err == nil {
		err = invoice.CheckPeriod(ctx, s.pool, seller, d.InvoiceDate, now)
	}
	return d, incomplete, err
}

// warnIncomplete, when incomplete (prepare's) is not nil, logs that inv
// was issued without the particulars it names and adds a Warning header
// (RFC 9110 obsoleted it, but clients and proxies still show it; code 299,
// "miscellaneous persistent warning") saying so to the answer.
func (s *Server) warnIncomplete(c echo.Context, seller gst.Seller, inv document.Invoice, incomplete error) {
	if incomplete == nil {
		return
	}
	msg := apperr.MessageOf(incomplete)
	s.log.WarnContext(c.Request().Context(), "invoice issued without the particulars CGST Rule 46 asks for (serve --buyer-details warn)",
		append(requestIDs(c.Response().Header(), c.Request()), "gstin", string(seller.GSTIN), "series", inv.SeriesCode, "number", inv.Number, "missing", msg)...)
	c.Response().Header().Add("Warning", `299 invoiced "`+strings.ReplaceAll(inv.Number+": "+msg, `"`, "'")+`"`)
}

// replay answers with inv, issued earlier for the same Idempotency-Key.
func (s *Server) replay(c echo.Context, inv document.Invoice) error {
	s.metrics.Replayed()
	c.Response().Header().Set(headerReplayed, "true")
	return writeJSON(c, http.StatusCreated, renderInvoice(asIssued(inv), s.publicURL))
}

// lookupReplay returns the invoice a stored idempotency key answered for,
// ok false when the key is unknown. A key used with another request is
// ErrKeyReused, one still in progress ErrKeyInProgress.
func (s *Server) lookupReplay(ctx context.Context, sellerID int64, key string, hash []byte) (document.Invoice, bool, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return document.Invoice{}, false, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	id, err := invoice.ClaimKey(ctx, tx, sellerID, key, hash)
	if err != nil || id == 0 {
		return document.Invoice{}, false, err
	}
	inv, err := invoice.Get(ctx, tx, sellerID, id)
	if err != nil {
		return document.Invoice{}, false, err
	}
	return inv, true, nil
}
