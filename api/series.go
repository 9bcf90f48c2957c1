package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"
)

// createSeries serves POST /v1/series (with an optional opening, declared
// in the same transaction) (scope manage).
func (s *Server) createSeries(c echo.Context) error {
	p, err := s.authorize(c, apikey.CanManage)
	if err != nil {
		return err
	}
	body, err := readJSON(c.Response(), c.Request(), s.bodyLimit(smallBodyMax))
	if err != nil {
		return err
	}
	b, err := decodeSeriesRequest(body)
	if err != nil {
		return err
	}
	op, err := b.opening()
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	var sr gst.Series
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		sr, err = series.CreateSeriesTx(ctx, tx, series.NewSeries{
			SellerID: p.Seller.ID, Code: b.Code, DocType: b.DocType, Format: b.Format, Shop: b.Shop,
		})
		if err != nil || op == nil {
			return err
		}
		_, err = invoice.DeclareOpeningTx(ctx, tx, p.Seller, sr, *op, "key "+apikey.Tag+p.Prefix, s.now())
		return err
	})
	if err != nil {
		return err
	}
	var years []series.Usage
	if op != nil {
		years = []series.Usage{{FY: op.FY, LastSerial: op.LastSerial, LastNumber: strings.ToUpper(strings.TrimSpace(op.LastNumber)), LastInvoiceDate: op.LastInvoiceDate}}
	}
	return writeJSON(c, http.StatusCreated, renderSeries(sr, years))
}

// listSeries serves GET /v1/series (scope read).
func (s *Server) listSeries(c echo.Context) error {
	p, err := s.authorize(c, apikey.CanRead)
	if err != nil {
		return err
	}
	all, err := series.List(c.Request().Context(), s.pool, p.Seller.ID)
	if err != nil {
		return err
	}
	out := seriesListJSON{Series: make([]seriesJSON, 0, len(all))}
	for _, su := range all {
		if p.MaySeries(su.Code) {
			out.Series = append(out.Series, renderSeries(su.Series, su.Years))
		}
	}
	return writeJSON(c, http.StatusOK, out)
}

// seriesOf returns the series with the code (any spelling) that request
// principal p may use: ErrNotFound-kinded errors for a series its seller
// does not have, apikey.ErrSeriesForbidden for one outside the key's series. Every
// request that names a series fetches it here, so the key's restriction
// cannot be left out of a route.
func (s *Server) seriesOf(ctx context.Context, p apikey.Principal, code string) (gst.Series, error) {
	sr, err := s.series.get(ctx, s.pool, p.Seller.ID, code)
	if err != nil {
		return gst.Series{}, err
	}
	if err := p.CheckSeries(sr.Code); err != nil {
		return gst.Series{}, err
	}
	return sr, nil
}
