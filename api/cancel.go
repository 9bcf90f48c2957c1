package api

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/einvoice/registration"
	"github.com/invoiced/invoiced/internal/metrics"
	"github.com/invoiced/invoiced/invoice"
	"github.com/labstack/echo/v4"
)

// cancelInvoice serves POST /v1/invoices/{id}/cancel (scope issue). With
// an Idempotency-Key, a retry of a cancel whose answer was lost is
// answered with the first answer's bytes (Idempotent-Replayed: true). An
// invoice registered at the IRP is cancelled only once its IRN is
// (registration.Canceller).
func (s *Server) cancelInvoice(c echo.Context) error {
	p, err := s.authorize(c, apikey.CanIssue)
	if err != nil {
		return err
	}
	key, err := idempotencyKey(c.Request().Header)
	if err != nil {
		return err
	}
	id, err := s.invoiceID(c.Request().Context(), p, c.Param("id"))
	if err != nil {
		return err
	}
	body, err := readJSON(c.Response(), c.Request(), s.bodyLimit(smallBodyMax))
	if err != nil {
		return err
	}
	b, err := decodeCancelRequest(body)
	if err != nil {
		return err
	}
	code, err := b.eInvoiceReason()
	if err != nil {
		return err
	}
	req := registration.CancelRequest{CancelRequest: invoice.CancelRequest{ID: id, Reason: strings.TrimSpace(b.Reason), IdempotencyKey: key}, Code: code}
	if key != "" {
		// Both forms of an id name one invoice: hash its internal id.
		req.RequestHash = requestHash(http.MethodPost, "/v1/invoices/"+strconv.FormatInt(id, 10)+"/cancel", body)
	}
	// An invoice with a registered IRN has it cancelled at the IRP first
	// (docs/e-invoice.md, "Cancel").
	inv, replayed, err := s.canceller.Cancel(c.Request().Context(), p.Seller, req, s.now())
	if err != nil {
		return err
	}
	if replayed {
		c.Response().Header().Set(headerReplayed, "true")
	} else {
		s.metrics.Cancelled(string(inv.DocType), metrics.SourceOnline, 1)
	}
	return writeJSON(c, http.StatusOK, cancelAnswer(p, inv, s.publicURL))
}

// cancelAnswer is the body of a cancel's answer: the whole invoice for a
// key that may read it, otherwise only what confirms the cancellation
// (id, number, status, cancelled_at), so that an issue-only key cannot
// read invoices by cancelling them.
func cancelAnswer(p apikey.Principal, inv document.Invoice, publicURL string) any {
	full := renderInvoice(inv, publicURL)
	if p.Scopes.Has(apikey.CanRead) {
		return full
	}
	return cancelledJSON{ID: full.ID, Number: full.Number, Status: full.Status, CancelledAt: full.CancelledAt}
}
