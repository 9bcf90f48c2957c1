package api

import (
	"encoding/hex"
	"strings"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/jsonfast"
	"github.com/invoiced/invoiced/lease"
	"github.com/labstack/echo/v4"
)

// Cancellations made offline (docs/offline.md): a route of their own
// beside device-invoices, so that each body keeps one strict shape and
// each check its own store function; the device sends runs of invoices
// and of cancellations in its chain's order.

// offlineCancelsBody is the JSON body of POST
// /v1/series/{code}/device-cancels.
type offlineCancelsBody struct {
	Cancels []offlineCancelBody `json:"cancels"`
}

type offlineCancelBody struct {
	FY          string `json:"fy"`
	Position    int64  `json:"position"`
	Serial      int64  `json:"serial"`
	Number      string `json:"number"`
	CancelledAt string `json:"cancelled_at"`
	Reason      string `json:"reason"`
	ChainHash   string `json:"chain_hash"`
}

// cancelLimits bounds the arrays of an upload of cancellations while it
// is read.
var cancelLimits = jsonfast.Limits{ByKey: map[string]int{"cancels": lease.MaxOfflineBatch}}

// decodeOfflineCancels decodes a cancel upload that readScanned read with
// cancelLimits strictly; it fails with document.ErrInvalid naming the
// cancellation and field.
func decodeOfflineCancels(body []byte) ([]lease.OfflineCancel, error) {
	var b offlineCancelsBody
	if err := decodeScanned(body, &b, document.ErrInvalid); err != nil {
		return nil, err
	}
	if len(b.Cancels) == 0 || len(b.Cancels) > lease.MaxOfflineBatch {
		return nil, apperr.Errorf(document.ErrInvalid, "cancels must hold 1 to %d cancellations", lease.MaxOfflineBatch)
	}
	out := make([]lease.OfflineCancel, len(b.Cancels))
	for i, cb := range b.Cancels {
		fy, err := gst.ParseFY(cb.FY)
		if err != nil {
			return nil, apperr.Errorf(document.ErrInvalid, "cancels[%d].fy: %s", i, apperr.MessageOf(err))
		}
		at, err := time.Parse(time.RFC3339Nano, cb.CancelledAt)
		if err != nil {
			return nil, apperr.Errorf(document.ErrInvalid, "cancels[%d].cancelled_at %q must be an RFC 3339 instant such as 2026-12-01T04:02:00.000000Z", i, clip(cb.CancelledAt))
		}
		hash, err := hex.DecodeString(cb.ChainHash)
		if err != nil || len(hash) != 32 {
			return nil, apperr.Errorf(document.ErrInvalid, "cancels[%d].chain_hash must be 64 hex digits", i)
		}
		if cb.Position < 1 || cb.Serial < 1 {
			return nil, apperr.Errorf(document.ErrInvalid, "cancels[%d]: position and serial must be 1 or more", i)
		}
		out[i] = lease.OfflineCancel{FY: fy, Position: cb.Position, Serial: cb.Serial, Number: strings.ToUpper(cb.Number),
			CancelledAt: at, Reason: cb.Reason, ChainHash: hash}
	}
	return out, nil
}

// uploadOfflineCancels serves POST /v1/series/{code}/device-cancels
// (scope issue, header Lease-Id): 201 when cancellations were stored, 200
// when every one was stored already; 409 not_continuation with where the
// series stands, or 422 naming the first bad cancellation and field, and
// nothing stored.
func (s *Server) uploadOfflineCancels(c echo.Context) error {
	return holderUpload(s, c, cancelLimits, decodeOfflineCancels, lease.UploadOfflineCancels, s.metrics.Cancelled)
}
