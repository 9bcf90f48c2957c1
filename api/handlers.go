package api

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"
)

// Errors of request parameters.
var (
	errBadIdempotencyKey = apperr.New(apperr.Malformed, "invalid_idempotency_key", "Idempotency-Key must be 1 to 255 printable ASCII characters")
	errBadCursor         = apperr.New(apperr.Invalid, "invalid_cursor", "cursor is not a cursor this server returned")
	errBadLimit          = apperr.New(apperr.Invalid, "invalid_limit", "limit must be an integer from 1 to 1000")
	errBadNumber         = apperr.New(apperr.Invalid, "invalid_number", "number must be an invoice number")
)

// Paging of invoice lists.
const (
	defaultListLimit = 100
	maxListLimit     = 1000
)

const headerReplayed = "Idempotent-Replayed"

// createSeries serves POST /v1/series (with an optional opening, declared
// in the same transaction) (scope manage).
func (s *Server) createSeries(c echo.Context) error {
	p, err := s.authorize(c, scopeManageBit)
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
	var sr series.Series
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		sr, err = series.CreateSeriesTx(ctx, tx, series.NewSeries{
			SellerID: p.seller.ID, Code: b.Code, DocType: b.DocType, Format: b.Format, Shop: b.Shop,
		})
		if err != nil || op == nil {
			return err
		}
		_, err = invoice.DeclareOpeningTx(ctx, tx, p.seller, sr, *op, "key "+keyTag+p.prefix, s.now())
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
	p, err := s.authorize(c, scopeReadBit)
	if err != nil {
		return err
	}
	all, err := series.List(c.Request().Context(), s.pool, p.seller.ID)
	if err != nil {
		return err
	}
	out := seriesListJSON{Series: make([]seriesJSON, 0, len(all))}
	for _, su := range all {
		if p.maySeries(su.Code) {
			out.Series = append(out.Series, renderSeries(su.Series, su.Years))
		}
	}
	return writeJSON(c, http.StatusOK, out)
}

// idempotencyKey returns the request's Idempotency-Key, "" when there is
// none. It fails with errBadIdempotencyKey when the header is repeated,
// empty, longer than 255 bytes or not printable ASCII.
func idempotencyKey(h http.Header) (string, error) {
	v, ok := h["Idempotency-Key"]
	if !ok {
		return "", nil
	}
	if len(v) != 1 {
		return "", apperr.Errorf(errBadIdempotencyKey, "the Idempotency-Key header was sent more than once (%d times); send it once per request", len(v))
	}
	if !printableASCII(v[0], 255) {
		return "", errBadIdempotencyKey
	}
	return v[0], nil
}

// requestHash identifies a request for idempotency: SHA-256 over the
// method, the path (series code upper-cased) and the raw body.
func requestHash(method, path string, body []byte) []byte {
	h := sha256.New()
	h.Write([]byte(method))
	h.Write([]byte{0})
	h.Write([]byte(path))
	h.Write([]byte{0})
	h.Write(body)
	return h.Sum(nil)
}

// issueInvoice serves POST /v1/series/{code}/invoices (scope issue). The
// request is validated and its amounts computed before any transaction, so
// a refused request never touches a number.
func (s *Server) issueInvoice(c echo.Context) error {
	ctx := c.Request().Context()
	p, err := s.authorize(c, scopeIssueBit)
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
	d, err := s.prepare(ctx, p.seller, sr, req)
	if err != nil {
		// A retry of a request that succeeded earlier replays its answer
		// even if it would no longer pass (its date is now too old, its
		// month is now locked).
		if key != "" {
			if inv, ok, rerr := s.lookupReplay(ctx, p.seller.ID, key, hash); rerr != nil {
				return rerr
			} else if ok {
				return s.replay(c, inv)
			}
		}
		return err
	}
	d.IdempotencyKey, d.RequestHash = key, hash
	r := s.committer.Issue(ctx, invoice.IssueRequest{Seller: p.seller, Series: sr, Draft: d})
	switch {
	case r.Err != nil:
		return r.Err
	case r.Replayed:
		return s.replay(c, r.Invoice)
	}
	s.metrics.Issued(string(r.Invoice.DocType))
	return writeJSON(c, http.StatusCreated, renderInvoice(r.Invoice))
}

// seriesOf returns the series with the code (any spelling) that request
// principal p may use: ErrNotFound-kinded errors for a series its seller
// does not have, ErrSeriesForbidden for one outside the key's series. Every
// request that names a series fetches it here, so the key's restriction
// cannot be left out of a route.
func (s *Server) seriesOf(ctx context.Context, p principal, code string) (series.Series, error) {
	sr, err := s.series.get(ctx, s.pool, p.seller.ID, code)
	if err != nil {
		return series.Series{}, err
	}
	if err := p.checkSeries(sr.Code); err != nil {
		return series.Series{}, err
	}
	return sr, nil
}

// prepare validates req for series sr of seller and computes it (see
// invoice.PrepareContent), then checks a note's original and a backdated
// invoice's month; it returns the draft, or the refusal (4xx) or a
// database error. The date window is not judged here (see issueInvoice).
func (s *Server) prepare(ctx context.Context, seller series.Seller, sr series.Series, req invoice.Request) (invoice.Draft, error) {
	now := s.now()
	d, err := invoice.PrepareContent(req, seller, sr, now)
	if err == nil {
		err = invoice.CheckOriginal(ctx, s.pool, seller, &d)
	}
	if err == nil {
		err = invoice.CheckPeriod(ctx, s.pool, seller, d.InvoiceDate, now)
	}
	return d, err
}

// replay answers with inv, issued earlier for the same Idempotency-Key.
func (s *Server) replay(c echo.Context, inv invoice.Invoice) error {
	s.metrics.Replayed()
	c.Response().Header().Set(headerReplayed, "true")
	return writeJSON(c, http.StatusCreated, renderInvoice(asIssued(inv)))
}

// lookupReplay returns the invoice a stored idempotency key answered for,
// ok false when the key is unknown. A key used with another request is
// ErrKeyReused, one still in progress ErrKeyInProgress.
func (s *Server) lookupReplay(ctx context.Context, sellerID int64, key string, hash []byte) (invoice.Invoice, bool, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return invoice.Invoice{}, false, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	id, err := invoice.ClaimKey(ctx, tx, sellerID, key, hash)
	if err != nil || id == 0 {
		return invoice.Invoice{}, false, err
	}
	inv, err := invoice.Get(ctx, tx, sellerID, id)
	if err != nil {
		return invoice.Invoice{}, false, err
	}
	return inv, true, nil
}

// listInvoices serves GET /v1/series/{code}/invoices?fy=&cursor=&limit=
// (scope read): the series' invoices of one financial year (default: the
// current one in IST) in serial order, a page at a time.
func (s *Server) listInvoices(c echo.Context) error {
	ctx := c.Request().Context()
	p, err := s.authorize(c, scopeReadBit)
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
		fyText = series.FYOf(dates.From).String()
	} else if fyText == "" && !dates.To.IsZero() {
		fyText = series.FYOf(dates.To).String()
	}
	fy, err := s.fyParam(fyText)
	if err != nil {
		return err
	}
	for _, d := range []time.Time{dates.From, dates.To} {
		if !d.IsZero() && series.FYOf(d) != fy {
			return apperr.Errorf(series.ErrInvalidDate, "from and to must lie in financial year %s (the listing is per year; ask for each year with fy)", fy)
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
	invs, err := invoice.ListDated(ctx, s.pool, sr, fy, dates, after, limit+1)
	if err != nil {
		return err
	}
	out := invoiceListJSON{Invoices: make([]invoiceJSON, 0, min(len(invs), limit))}
	for i, inv := range invs {
		if i == limit {
			next := encodeCursor(invs[i-1].Serial)
			out.NextCursor = &next
			break
		}
		out.Invoices = append(out.Invoices, renderInvoice(inv))
	}
	return writeJSON(c, http.StatusOK, out)
}

// dateRangeParams parses the from and to query parameters (YYYY-MM-DD,
// either may be empty). It fails with series.ErrInvalidDate naming the
// parameter, or when from is after to.
func dateRangeParams(from, to string) (invoice.DateRange, error) {
	var r invoice.DateRange
	for _, p := range []struct {
		name, v string
		dst     *time.Time
	}{{"from", from, &r.From}, {"to", to, &r.To}} {
		if p.v == "" {
			continue
		}
		d, err := time.Parse(time.DateOnly, p.v)
		if err != nil {
			return r, apperr.Errorf(series.ErrInvalidDate, "%s %q must be a date, YYYY-MM-DD", p.name, clip(p.v))
		}
		*p.dst = d
	}
	if !r.From.IsZero() && !r.To.IsZero() && r.From.After(r.To) {
		return r, apperr.Errorf(series.ErrInvalidDate, "from %s is after to %s", from, to)
	}
	return r, nil
}

// findInvoices serves GET /v1/invoices?number= (scope read): the seller's
// invoices with that number, compared case-insensitively (one, or one per
// financial year for a format without {FY}; none is an empty list). A key
// restricted to some series gets 403 series_forbidden for an invoice of
// another series.
func (s *Server) findInvoices(c echo.Context) error {
	ctx := c.Request().Context()
	p, err := s.authorize(c, scopeReadBit)
	if err != nil {
		return err
	}
	number := strings.TrimSpace(c.QueryParam("number"))
	if number == "" || len(number) > 16 {
		return apperr.Errorf(errBadNumber, "number is required: an invoice number such as CH1/26-27/00042 (at most 16 characters)")
	}
	invs, err := invoice.FindByNumber(ctx, s.pool, p.seller.ID, number)
	if err != nil {
		return err
	}
	out := invoiceListJSON{Invoices: make([]invoiceJSON, 0, len(invs))}
	for _, inv := range invs {
		if err := p.checkSeries(inv.SeriesCode); err != nil {
			return err
		}
		out.Invoices = append(out.Invoices, renderInvoice(inv))
	}
	return writeJSON(c, http.StatusOK, out)
}

// Cursors are opaque to clients: base64url of "s" and the last serial seen.
func encodeCursor(serial int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("s" + strconv.FormatInt(serial, 10)))
}

func decodeCursor(v string) (int64, error) {
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || len(b) < 2 || b[0] != 's' {
		return 0, errBadCursor
	}
	n, err := strconv.ParseInt(string(b[1:]), 10, 64)
	if err != nil || n < 1 || encodeCursor(n) != v {
		return 0, errBadCursor
	}
	return n, nil
}

// invoiceID resolves an invoice id path parameter of p's seller to the
// database's id: "CH1-2026-7" (series code, financial year, serial; see
// invoiceKey), or the all-digit database id the API answered before.
// Anything else, and an id of no invoice of the seller, is
// invoice.ErrNotFound; an invoice of a series p is restricted from is
// ErrSeriesForbidden; it fails otherwise only on a database error.
func (s *Server) invoiceID(ctx context.Context, p principal, v string) (int64, error) {
	sellerID := p.seller.ID
	if id, err := strconv.ParseInt(v, 10, 64); err == nil {
		if id < 1 || strconv.FormatInt(id, 10) != v {
			return 0, invoice.ErrNotFound
		}
		if p.series != nil {
			inv, err := invoice.Get(ctx, s.pool, sellerID, id)
			if err != nil {
				return 0, err
			}
			if err := p.checkSeries(inv.SeriesCode); err != nil {
				return 0, err
			}
		}
		return id, nil
	}
	i := strings.LastIndexByte(v, '-')
	if i < 0 {
		return 0, invoice.ErrNotFound
	}
	j := strings.LastIndexByte(v[:i], '-')
	if j < 1 {
		return 0, invoice.ErrNotFound
	}
	fy, ferr := strconv.Atoi(v[j+1 : i])
	serial, serr := strconv.ParseInt(v[i+1:], 10, 64)
	if ferr != nil || serr != nil || !series.FY(fy).Valid() || serial < 1 ||
		strconv.Itoa(fy) != v[j+1:i] || strconv.FormatInt(serial, 10) != v[i+1:] {
		return 0, invoice.ErrNotFound
	}
	sr, err := s.seriesOf(ctx, p, v[:j])
	if errors.Is(err, series.ErrNotFound) {
		return 0, invoice.ErrNotFound
	}
	if err != nil {
		return 0, err
	}
	return invoice.IDBySerial(ctx, s.pool, sellerID, sr.ID, series.FY(fy), serial)
}

// getInvoice serves GET /v1/invoices/{id} (scope read).
func (s *Server) getInvoice(c echo.Context) error {
	p, err := s.authorize(c, scopeReadBit)
	if err != nil {
		return err
	}
	id, err := s.invoiceID(c.Request().Context(), p, c.Param("id"))
	if err != nil {
		return err
	}
	inv, err := invoice.Get(c.Request().Context(), s.pool, p.seller.ID, id)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, renderInvoice(inv))
}

// cancelInvoice serves POST /v1/invoices/{id}/cancel (scope issue). With
// an Idempotency-Key, a retry of a cancel whose answer was lost is
// answered with the first answer's bytes (Idempotent-Replayed: true).
func (s *Server) cancelInvoice(c echo.Context) error {
	p, err := s.authorize(c, scopeIssueBit)
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
	req := invoice.CancelRequest{ID: id, Reason: strings.TrimSpace(b.Reason), IdempotencyKey: key}
	if key != "" {
		// Both forms of an id name one invoice: hash its internal id.
		req.RequestHash = requestHash(http.MethodPost, "/v1/invoices/"+strconv.FormatInt(id, 10)+"/cancel", body)
	}
	inv, replayed, err := invoice.CancelOnce(c.Request().Context(), s.pool, p.seller, req, s.now(), s.opt)
	if err != nil {
		return err
	}
	if replayed {
		c.Response().Header().Set(headerReplayed, "true")
	} else {
		s.metrics.Cancelled(string(inv.DocType))
	}
	return writeJSON(c, http.StatusOK, cancelAnswer(p, inv))
}

// cancelAnswer is the body of a cancel's answer: the whole invoice for a
// key that may read it, otherwise only what confirms the cancellation
// (id, number, status, cancelled_at), so that an issue-only key cannot
// read invoices by cancelling them.
func cancelAnswer(p principal, inv invoice.Invoice) any {
	full := renderInvoice(inv)
	if p.scopes.has(scopeReadBit) {
		return full
	}
	return cancelledJSON{ID: full.ID, Number: full.Number, Status: full.Status, CancelledAt: full.CancelledAt}
}

// clip returns s cut to at most 40 bytes (on a character boundary) with
// "…" appended when it was longer: for echoing what a client sent.
func clip(s string) string { return clipTo(s, 40) }

// clipTo returns s cut to at most n bytes on a character boundary, with
// "…" appended when it was longer.
func clipTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// fyParam reads a fy query parameter ("2026-27"); empty means the current
// financial year in IST. It fails with series.ErrInvalidDate.
func (s *Server) fyParam(v string) (series.FY, error) {
	if v == "" {
		return series.FYAt(s.now()), nil
	}
	return series.ParseFY(v)
}
