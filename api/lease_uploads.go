package api

import (
	"context"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/internal/jsonfast"
	"github.com/invoiced/invoiced/internal/metrics"
	"github.com/invoiced/invoiced/lease"
	"github.com/labstack/echo/v4"
	"github.com/shopspring/decimal"
)

// The lease holder's uploads (docs/offline.md): the invoices it numbered
// offline, and what its uploads of invoices and of cancellations
// (lease_cancels.go) share: the checks before the body is read, the
// bounded read, and the answer.

// offlineBody is the JSON body of POST /v1/series/{code}/device-invoices.
type offlineBody struct {
	Invoices []offlineInvoiceBody `json:"invoices"`
}

type offlineInvoiceBody struct {
	Serial        int64         `json:"serial"`
	Number        string        `json:"number"`
	InvoiceDate   string        `json:"invoice_date"`
	IssuedAt      string        `json:"issued_at"`
	Buyer         *buyerBody    `json:"buyer"`
	ShipTo        *shipToBody   `json:"ship_to"`
	PlaceOfSupply string        `json:"place_of_supply"`
	Items         []itemBody    `json:"items"`
	Original      *originalBody `json:"original"`
	Totals        totalsBody    `json:"totals"`
	ChainHash     string        `json:"chain_hash"`
}

type totalsBody struct {
	Taxable string `json:"taxable"`
	CGST    string `json:"cgst"`
	SGST    string `json:"sgst"`
	IGST    string `json:"igst"`
	Total   string `json:"total"`
}

// offlineLimits bounds the arrays of an upload of invoices while it is
// read.
var offlineLimits = jsonfast.Limits{ByKey: map[string]int{"invoices": lease.MaxOfflineBatch, "items": document.MaxItems}}

// decodeOffline decodes an upload that readScanned read with
// offlineLimits strictly; it fails like decodeIssueRequest, naming the
// invoice.
func decodeOffline(body []byte) ([]lease.OfflineInvoice, error) {
	var b offlineBody
	if err := decodeScanned(body, &b, document.ErrInvalid); err != nil {
		return nil, err
	}
	if len(b.Invoices) == 0 || len(b.Invoices) > lease.MaxOfflineBatch {
		return nil, apperr.Errorf(document.ErrInvalid, "invoices must hold 1 to %d invoices", lease.MaxOfflineBatch)
	}
	out := make([]lease.OfflineInvoice, len(b.Invoices))
	for i, ib := range b.Invoices {
		fail := func(err error) error {
			return apperr.Errorf(apperrOf(err), "invoices[%d].%s", i, apperr.MessageOf(err))
		}
		date := ib.InvoiceDate
		req, err := (&issueBody{InvoiceDate: &date, Buyer: ib.Buyer, ShipTo: ib.ShipTo, PlaceOfSupply: ib.PlaceOfSupply, Items: ib.Items, Original: ib.Original}).request()
		if err != nil {
			return nil, fail(err)
		}
		at, err := time.Parse(time.RFC3339Nano, ib.IssuedAt)
		if err != nil {
			return nil, apperr.Errorf(document.ErrInvalid, "invoices[%d].issued_at %q must be an RFC 3339 instant such as 2026-12-01T04:02:00.000000Z", i, clip(ib.IssuedAt))
		}
		hash, err := hex.DecodeString(ib.ChainHash)
		if err != nil || len(hash) != 32 {
			return nil, apperr.Errorf(document.ErrInvalid, "invoices[%d].chain_hash must be 64 hex digits", i)
		}
		o := lease.OfflineInvoice{Serial: ib.Serial, Number: strings.ToUpper(ib.Number), IssuedAt: at, Request: req, ChainHash: hash}
		for _, f := range []struct {
			name string
			text string
			dst  *decimal.Decimal
		}{{"taxable", ib.Totals.Taxable, &o.Totals.Taxable}, {"cgst", ib.Totals.CGST, &o.Totals.CGST}, {"sgst", ib.Totals.SGST, &o.Totals.SGST},
			{"igst", ib.Totals.IGST, &o.Totals.IGST}, {"total", ib.Totals.Total, &o.Totals.Total}} {
			d, err := document.ParseMoney(f.text)
			if err != nil {
				return nil, apperr.Errorf(document.ErrInvalid, "invoices[%d].totals.%s %q must be an amount such as \"10.50\"", i, f.name, clip(f.text))
			}
			*f.dst = d
		}
		out[i] = o
	}
	return out, nil
}

// apperrOf returns err's coded error, document.ErrInvalid when it has none.
func apperrOf(err error) *apperr.Error {
	var ae *apperr.Error
	if errors.As(err, &ae) {
		return ae
	}
	return document.ErrInvalid
}

// uploadJSON is the answer to an upload.
type uploadJSON struct {
	Stored   int          `json:"stored"`
	Replayed int          `json:"replayed"`
	Next     positionJSON `json:"next"`
}

// continuationBody is the 409 of an upload that does not continue the
// series: the error and where the series stands.
type continuationBody struct {
	Error    errorDetail  `json:"error"`
	Expected positionJSON `json:"expected"`
}

// uploadOffline serves POST /v1/series/{code}/device-invoices (scope
// issue, header Lease-Id): 201 when invoices were stored, 200 when every
// one was stored already; 409 not_continuation with the expected next
// serial and chain head, or 422 naming the first bad invoice and field,
// and nothing stored.
func (s *Server) uploadOffline(c echo.Context) error {
	return holderUpload(s, c, offlineLimits, decodeOffline, lease.UploadOffline, s.metrics.Issued)
}

// holderUpload serves an upload by the holder of a series' lease (scope
// issue, header Lease-Id). Before the body is read it checks the key, its
// series restriction and that the lease holds the series, so that no
// other key can make the server read (or hold) an upload's body; the body
// is read with readScanned under limits (each array refused at its first
// element past the limit, while it arrives), then decode decodes it into
// items, store stores them as an exact continuation of the series or not
// at all, count records what was stored (source device) in the metrics,
// and the answer is writeUpload's. Each item costs a token of the key's
// rate limit (chargeInvoices). It returns errNoLeaseID without the
// header, the errors of authorisation, lease.CheckLease, the body,
// decode, chargeInvoices and store, and document.ErrInvalid naming the
// array past its limit.
func holderUpload[E any](s *Server, c echo.Context, limits jsonfast.Limits, decode func([]byte) ([]E, error),
	store func(context.Context, db.Beginner, gst.Seller, gst.Series, string, []E, time.Time) (lease.UploadResult, error),
	count func(docType, source string, n int)) error {
	p, sr, leaseID, err := s.holderRequest(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if err := lease.CheckLease(ctx, s.pool, sr, leaseID); err != nil {
		return err
	}
	body, err := readScanned(c.Response(), c.Request(), s.bodyLimit(batchBodyMax), limits)
	var long *jsonfast.ArrayTooLong
	if errors.As(err, &long) {
		return apperr.Errorf(document.ErrInvalid, "%s holds more than %d elements, the most one upload allows", long.Key, long.Max)
	}
	if err != nil {
		return err
	}
	items, err := decode(body)
	if err != nil {
		return err
	}
	if err := s.chargeInvoices(c, p, len(items)); err != nil {
		return err
	}
	res, err := store(ctx, s.pool, p.Seller, sr, leaseID, items, s.now())
	if err == nil && res.Stored > 0 {
		count(string(sr.DocType), metrics.SourceDevice, res.Stored)
	}
	return writeUpload(c, res, err)
}

// writeUpload answers an upload of invoices or cancellations: 201 when
// something was stored, 200 when everything was replayed, the 409
// not_continuation with where the series stands, or err's answer.
func writeUpload(c echo.Context, res lease.UploadResult, err error) error {
	var ce *lease.ContinuationError
	if errors.As(err, &ce) {
		pr, _ := classify(err)
		return writeJSON(c, pr.status, continuationBody{Error: errorDetail{Code: pr.code, Message: pr.message}, Expected: renderPosition(ce.Expected)})
	}
	if err != nil {
		return err
	}
	status := http.StatusCreated
	if res.Stored == 0 {
		status = http.StatusOK
	}
	return writeJSON(c, status, uploadJSON{Stored: res.Stored, Replayed: res.Replayed, Next: renderPosition(res.Next)})
}
