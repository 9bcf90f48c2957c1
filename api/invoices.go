package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"
)

// listInvoices serves GET /v1/series/{code}/invoices?fy=&cursor=&limit=
// (scope read): the series' invoices of one financial year (default: the
// current one in IST) in serial order, a page at a time: at most limit
// invoices and at most listPageBytes of them (pages.go), with next_cursor
// set when the list goes on. The page is read in one snapshot
// (db.ReadTx).
func (s *Server) listInvoices(c echo.Context) error {
	ctx := c.Request().Context()
	p, err := s.authorize(c, apikey.CanRead)
	if err != nil {
		return err
	}
	q := c.QueryParams()
	dates, err := dateRangeParams(q.Get("from"), q.Get("to"))
	if err != nil {
		return err
	}
	fyText := q.Get("fy")
	if fyText == "" && !dates.From.IsZero() {
		fyText = gst.FYOf(dates.From).String()
	} else if fyText == "" && !dates.To.IsZero() {
		fyText = gst.FYOf(dates.To).String()
	}
	fy, err := s.fyParam(fyText)
	if err != nil {
		return err
	}
	for _, d := range []time.Time{dates.From, dates.To} {
		if !d.IsZero() && gst.FYOf(d) != fy {
			return apperr.Errorf(gst.ErrInvalidDate, "from and to must lie in financial year %s (the listing is per year; ask for each year with fy)", fy)
		}
	}
	var after int64
	if v := q.Get("cursor"); v != "" {
		if after, err = decodeCursor(v); err != nil {
			return err
		}
	}
	limit := defaultListLimit
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxListLimit {
			return apperr.Errorf(errBadLimit, "limit %q must be an integer from 1 to %d", clip(v), maxListLimit)
		}
		limit = n
	}
	sr, err := s.seriesOf(ctx, p, c.Param("code"))
	if err != nil {
		return err
	}
	page := newJSONPage(ctx, `{"invoices":[`, limit)
	next := after
	err = db.ReadTx(ctx, s.pool, func(tx pgx.Tx) error {
		return readPage(page, func(n int) (got int, err error) {
			err = invoice.EachDated(ctx, tx, sr, fy, dates, next, n, func(inv document.Invoice) error {
				got++
				if err := page.add(renderInvoice(inv, s.publicURL)); err != nil {
					return err
				}
				next = inv.Serial
				return nil
			})
			return got, err
		})
	})
	if err != nil {
		return err
	}
	cursor := "null"
	if page.more {
		cursor = `"` + encodeCursor(next) + `"`
	}
	return s.sendPage(c, page.finish(`],"next_cursor":`+cursor+`}`))
}

// findInvoices serves GET /v1/invoices?number= (scope read): the seller's
// invoices with that number, compared case-insensitively (one, or one per
// financial year for a format without {FY}; none is an empty list). A key
// restricted to some series is answered as if the invoices of other
// series did not exist: a 403 for them told it which numbers were used.
func (s *Server) findInvoices(c echo.Context) error {
	ctx := c.Request().Context()
	p, err := s.authorize(c, apikey.CanRead)
	if err != nil {
		return err
	}
	number := strings.TrimSpace(c.QueryParam("number"))
	if number == "" || len(number) > 16 {
		return apperr.Errorf(errBadNumber, "number is required: an invoice number such as CH1/26-27/00042 (at most 16 characters)")
	}
	invs, err := invoice.FindByNumber(ctx, s.pool, p.Seller.ID, number)
	if err != nil {
		return err
	}
	out := invoiceListJSON{Invoices: make([]invoiceJSON, 0, len(invs))}
	for _, inv := range invs {
		if p.MaySeries(inv.SeriesCode) {
			out.Invoices = append(out.Invoices, renderInvoice(inv, s.publicURL))
		}
	}
	return writeJSON(c, http.StatusOK, out)
}

// invoiceID resolves an invoice id path parameter of p's seller to the
// database's id: "CH1-2026-7" (series code, financial year, serial; see
// invoiceKey), or the all-digit database id the API answered before.
// Anything else, and an id of no invoice of the seller, is
// invoice.ErrNotFound; so is a database id of an invoice of a series p is
// restricted from (that answer must not say it exists), while a key id
// naming such a series is apikey.ErrSeriesForbidden whether or not the
// invoice exists. It fails otherwise only on a database error.
func (s *Server) invoiceID(ctx context.Context, p apikey.Principal, v string) (int64, error) {
	sellerID := p.Seller.ID
	if id, err := strconv.ParseInt(v, 10, 64); err == nil {
		if id < 1 || strconv.FormatInt(id, 10) != v {
			return 0, invoice.ErrNotFound
		}
		if p.Series != nil {
			inv, err := invoice.Get(ctx, s.pool, sellerID, id)
			if err != nil {
				return 0, err
			}
			if !p.MaySeries(inv.SeriesCode) {
				return 0, invoice.ErrNotFound
			}
		}
		return id, nil
	}
	code, fy, serial, ok := document.ParseKey(v)
	if !ok {
		return 0, invoice.ErrNotFound
	}
	sr, err := s.seriesOf(ctx, p, code)
	if errors.Is(err, series.ErrNotFound) {
		return 0, invoice.ErrNotFound
	}
	if err != nil {
		return 0, err
	}
	return invoice.IDBySerial(ctx, s.pool, sellerID, sr.ID, fy, serial)
}

// getInvoice serves GET /v1/invoices/{id} (scope read).
func (s *Server) getInvoice(c echo.Context) error {
	p, err := s.authorize(c, apikey.CanRead)
	if err != nil {
		return err
	}
	id, err := s.invoiceID(c.Request().Context(), p, c.Param("id"))
	if err != nil {
		return err
	}
	inv, err := invoice.Get(c.Request().Context(), s.pool, p.Seller.ID, id)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, renderInvoice(inv, s.publicURL))
}
