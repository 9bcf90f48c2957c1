package api

import (
	"net/http"
	"strings"
	"time"

	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/reports"
	"github.com/labstack/echo/v4"
)

// exportTimeout bounds a streamed export; a million-invoice audit takes
// about a minute (docs/reports.md).
const exportTimeout = 30 * time.Minute

// audit serves GET /v1/series/{code}/audit?fy=2026-27&format=csv|json|xlsx
// [&part=rows|summary] (scope read): the serial audit of one series-year,
// streamed from one database snapshot, or its summary alone. fy defaults
// to the current financial year (IST), format to json, part to rows (in
// CSV the rows alone; in JSON and XLSX the summary and the rows). Errors
// found before the first byte is sent (series_year_not_found when the
// series-year holds nothing) get the usual error body; a failure mid-stream aborts the connection, so a client never
// mistakes a truncated export for a complete one.
func (s *Server) audit(c echo.Context) error {
	ctx := c.Request().Context()
	p, err := s.authorize(c, scopeReadBit)
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
	sr, err := s.series.get(ctx, s.pool, p.seller.ID, c.Param("code"))
	if err != nil {
		return err
	}
	w := c.Response()
	// The server's write timeout is sized for API calls, not exports.
	_ = http.NewResponseController(w.Writer).SetWriteDeadline(time.Now().Add(exportTimeout))
	name := strings.NewReplacer("/", "-").Replace(sr.Code + "-" + fy.String() + "-audit" + suffix + "." + format)
	w.Header().Set(echo.HeaderContentType, ctype)
	w.Header().Set(echo.HeaderContentDisposition, `attachment; filename="`+name+`"`)
	w.Header().Set("Cache-Control", "no-store")
	err = write(ctx, s.pool, p.seller, sr, fy, format, &lazyWriter{c: c})
	if err != nil && w.Committed {
		s.log.Error("audit export failed mid-stream", "err", err, "series", sr.Code, "fy", fy.String())
		panic(http.ErrAbortHandler)
	}
	if err == nil && !w.Committed {
		w.WriteHeader(http.StatusOK)
	}
	if err != nil { // nothing sent yet: the error body replaces the export's headers
		w.Header().Del(echo.HeaderContentType)
		w.Header().Del(echo.HeaderContentDisposition)
	}
	return err
}

// errInvalidPart answers an audit part other than rows and summary.
var errInvalidPart = apperr.New(apperr.Invalid, "invalid_report_part", "the report part must be rows or summary")

// lazyWriter sends the 200 status line with the first byte written, so an
// error before any output still gets a proper error status.
type lazyWriter struct{ c echo.Context }

func (l *lazyWriter) Write(b []byte) (int, error) {
	w := l.c.Response()
	if !w.Committed {
		w.WriteHeader(http.StatusOK)
	}
	return w.Write(b)
}

// docIssue serves GET /v1/reports/gstr1/doc-issue?fp=112026 (scope read):
// GSTR-1 Table 13 ("documents issued") for the documents dated in the
// return period fp: MMYYYY, a range MMYYYY-MMYYYY, or a quarter
// YYYY-YY-Qn.
func (s *Server) docIssue(c echo.Context) error {
	p, err := s.authorize(c, scopeReadBit)
	if err != nil {
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
	rep, err := reports.DocIssue(c.Request().Context(), s.pool, p.seller, period)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, rep)
}

// isExport reports whether the matched route streams a long export, which
// gets exportTimeout instead of the request timeout.
func isExport(path string) bool { return path == "/v1/series/:code/audit" }
