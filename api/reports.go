package api

import (
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/reports"
	"github.com/labstack/echo/v4"
)

// exportTimeout bounds an export from the request to the last byte sent; a
// million-invoice audit takes about a minute to write (docs/reports.md).
const exportTimeout = 30 * time.Minute

// audit serves GET /v1/series/{code}/audit?fy=2026-27&format=csv|json|xlsx
// [&part=rows|summary] (scope read): the serial audit of one series-year
// from one database snapshot, or its summary alone. fy defaults to the
// current financial year (IST), format to json, part to rows (in CSV the
// rows alone; in JSON and XLSX the summary and the rows). The export is
// spooled to a temporary file inside its transaction and sent after the
// transaction ends, with Content-Length, so a slow reader never holds a
// database connection, an error (series_year_not_found when the
// series-year holds nothing) gets the usual error body, and a truncated
// download is recognisable. Past the export limits the answer is 429
// too_many_exports; a client that stops reading for the stall timeout is
// cut off.
func (s *Server) audit(c echo.Context) error {
	ctx := c.Request().Context()
	p, err := s.authorize(c, apikey.CanRead)
	if err != nil {
		return err
	}
	q := c.QueryParams()
	fy, err := s.fyParam(q.Get("fy"))
	if err != nil {
		return err
	}
	format := strings.ToLower(q.Get("format"))
	if format == "" {
		format = reports.FormatJSON
	}
	ctype := reports.ContentType(format)
	if ctype == "" {
		return apperr.Errorf(reports.ErrInvalidFormat, "format %q: must be csv, json or xlsx", clip(format))
	}
	write, suffix := reports.WriteAudit, ""
	switch part := q.Get("part"); part {
	case "", "rows":
	case "summary":
		write, suffix = reports.WriteAuditSummary, "-summary"
	default:
		return apperr.Errorf(errInvalidPart, "part %q: must be rows or summary", clip(part))
	}
	sr, err := s.seriesOf(ctx, p, c.Param("code"))
	if err != nil {
		return err
	}
	// The route's guard chain holds an expensive-read slot (ClassExport).
	name := strings.NewReplacer("/", "-").Replace(sr.Code + "-" + fy.String() + "-audit" + suffix + "." + format)
	return s.SendExport(c.Response(), c.Request(), name, ctype, func(w io.Writer) error {
		return write(ctx, s.pool, p.Seller, sr, fy, format, w)
	})
}

// errInvalidPart answers an audit part other than rows and summary.
var errInvalidPart = apperr.New(apperr.Invalid, "invalid_report_part", "the report part must be rows or summary")

// docIssue serves GET /v1/reports/gstr1/doc-issue?fp=112026 (scope read):
// GSTR-1 Table 13 ("documents issued") for the documents dated in the
// return period fp: MMYYYY, a range MMYYYY-MMYYYY, or a quarter
// YYYY-YY-Qn.
func (s *Server) docIssue(c echo.Context) error {
	p, err := s.authorize(c, apikey.CanRead)
	if err != nil {
		return err
	}
	if err := p.CheckAllSeries(); err != nil {
		return err
	}
	fp := c.QueryParam("fp")
	if fp == "" {
		return apperr.Errorf(reports.ErrInvalidPeriod, "fp is required: MMYYYY (112026), a range (042026-062026) or a quarter (2026-27-Q1)")
	}
	period, err := reports.ParsePeriod(fp)
	if err != nil {
		return err
	}
	rep, err := reports.DocIssue(c.Request().Context(), s.pool, p.Seller, period)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, rep)
}
