package client

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/url"
	"strconv"
)

// Healthz reports whether the process is alive (GET /healthz).
func (cl *Client) Healthz(ctx context.Context) (Status, error) {
	var s Status
	return s, cl.getJSON(ctx, "/healthz", &s)
}

// Readyz reports whether the server reaches its database (GET /readyz).
// A server that is not ready answers 503, retried until ctx ends.
func (cl *Client) Readyz(ctx context.Context) (Status, error) {
	var s Status
	return s, cl.getJSON(ctx, "/readyz", &s)
}

// OpenAPI returns the server's OpenAPI document (GET /openapi.yaml).
func (cl *Client) OpenAPI(ctx context.Context) ([]byte, error) {
	a, err := cl.do(ctx, &call{method: http.MethodGet, path: "/openapi.yaml"})
	return a.body, err
}

// DebugStats returns the group-commit counters of the process that
// answers (GET /debug/stats; 404 unless it runs with --stats).
func (cl *Client) DebugStats(ctx context.Context) (Stats, error) {
	var s Stats
	return s, cl.getJSON(ctx, "/debug/stats", &s)
}

// Metrics returns the Prometheus text of the process that answers
// (GET /metrics).
func (cl *Client) Metrics(ctx context.Context) ([]byte, error) {
	a, err := cl.do(ctx, &call{method: http.MethodGet, path: "/metrics", accept: "text/plain"})
	return a.body, err
}

// CreateSeries creates a numbering series (POST /v1/series, scope manage).
// It fails with an *Error: 409 duplicate_series or overlapping_format, 422
// for invalid values. The route takes no Idempotency-Key: after an attempt
// without an answer, a retry that gets 409 duplicate_series returns an
// error for which IsOutcomeUnknown is true (the series may be this call's).
func (cl *Client) CreateSeries(ctx context.Context, req SeriesRequest) (Series, error) {
	var s Series
	return s, cl.createJSON(ctx, "/v1/series", req, &s)
}

// ListSeries returns the seller's series (GET /v1/series, scope read).
func (cl *Client) ListSeries(ctx context.Context) ([]Series, error) {
	var l SeriesList
	if err := cl.getJSON(ctx, "/v1/series", &l); err != nil {
		return nil, err
	}
	return l.Series, nil
}

// IssueInvoice issues an invoice with the next number of series code
// (POST /v1/series/{code}/invoices, scope issue), retrying safely with one
// Idempotency-Key. The invoice's Replayed is true when the answer replayed
// an earlier attempt. It fails with an *Error for a refusal (422 invalid
// values or date, 409 date_out_of_order or series_exhausted, 404, 401,
// 403), or, when ctx ends first, with an error for which IsOutcomeUnknown
// tells whether an attempt may have issued it.
func (cl *Client) IssueInvoice(ctx context.Context, code string, req IssueRequest, opts ...CallOption) (Invoice, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return Invoice{}, err
	}
	return cl.mutateInvoice(ctx, "/v1/series/"+url.PathEscape(code)+"/invoices", body, opts)
}

// CancelInvoice cancels invoice id ("CH1-2026-7") with a reason
// (POST /v1/invoices/{id}/cancel, scope issue), retrying safely with one
// Idempotency-Key. A key without the read scope gets only ID, Number,
// Status and CancelledAt. It fails like IssueInvoice; 409
// already_cancelled means someone else (or a call with another key)
// cancelled it.
func (cl *Client) CancelInvoice(ctx context.Context, id, reason string, opts ...CallOption) (Invoice, error) {
	body, err := json.Marshal(CancelRequest{Reason: reason})
	if err != nil {
		return Invoice{}, err
	}
	return cl.mutateInvoice(ctx, "/v1/invoices/"+url.PathEscape(id)+"/cancel", body, opts)
}

func (cl *Client) mutateInvoice(ctx context.Context, path string, body []byte, opts []CallOption) (Invoice, error) {
	c := &call{method: http.MethodPost, path: path, body: body, mutating: true, accept: "application/json"}
	for _, o := range opts {
		o(c)
	}
	if c.key == "" {
		c.key = NewIdempotencyKey()
	}
	a, err := cl.do(ctx, c)
	if err != nil {
		return Invoice{}, err
	}
	var inv Invoice
	if err := decode(a.body, &inv); err != nil {
		return Invoice{}, err
	}
	inv.Replayed = a.header.Get("Idempotent-Replayed") == "true"
	return inv, nil
}

// GetInvoice returns invoice id ("CH1-2026-7") (GET /v1/invoices/{id},
// scope read); 404 invoice_not_found when the seller has none such.
func (cl *Client) GetInvoice(ctx context.Context, id string) (Invoice, error) {
	var inv Invoice
	return inv, cl.getJSON(ctx, "/v1/invoices/"+url.PathEscape(id), &inv)
}

// ListOptions selects invoices of a series.
type ListOptions struct {
	FY    string // "2026-27"; "" for the year of From (or To), else the current one in IST
	From  string // "2026-11-01": only invoices dated on or after it; "" for no bound
	To    string // only invoices dated on or before it; "" for no bound
	Limit int    // page size, 1 to 1000; 0 for the server's default (100)
}

// FindInvoices returns the seller's invoices numbered number, compared
// case-insensitively (GET /v1/invoices?number=, scope read): none, one,
// or one per financial year for a format without {FY}, newest first.
func (cl *Client) FindInvoices(ctx context.Context, number string) ([]Invoice, error) {
	var l InvoiceList
	if err := cl.getJSON(ctx, "/v1/invoices?"+url.Values{"number": {number}}.Encode(), &l); err != nil {
		return nil, err
	}
	return l.Invoices, nil
}

// ListInvoicesPage returns one page of series code's invoices in serial
// order (GET /v1/series/{code}/invoices, scope read); cursor is "" for the
// first page, then the previous page's NextCursor.
func (cl *Client) ListInvoicesPage(ctx context.Context, code string, opt ListOptions, cursor string) (InvoiceList, error) {
	q := url.Values{}
	if opt.FY != "" {
		q.Set("fy", opt.FY)
	}
	if opt.From != "" {
		q.Set("from", opt.From)
	}
	if opt.To != "" {
		q.Set("to", opt.To)
	}
	if opt.Limit > 0 {
		q.Set("limit", strconv.Itoa(opt.Limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	path := "/v1/series/" + url.PathEscape(code) + "/invoices"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var l InvoiceList
	return l, cl.getJSON(ctx, path, &l)
}

// ListInvoices iterates over the pages of series code's invoices, in
// serial order, fetching each page when the loop reaches it. A page that
// fails (after retries) is yielded as its error and ends the iteration.
func (cl *Client) ListInvoices(ctx context.Context, code string, opt ListOptions) iter.Seq2[InvoiceList, error] {
	return func(yield func(InvoiceList, error) bool) {
		cursor := ""
		for {
			page, err := cl.ListInvoicesPage(ctx, code, opt, cursor)
			if err != nil {
				yield(InvoiceList{}, err)
				return
			}
			if !yield(page, nil) || page.NextCursor == nil {
				return
			}
			cursor = *page.NextCursor
		}
	}
}

// AuditFormat is the format of an audit download.
type AuditFormat string

// Audit formats.
const (
	AuditJSON AuditFormat = "json"
	AuditCSV  AuditFormat = "csv"
	AuditXLSX AuditFormat = "xlsx"
)

// Audit returns the serial audit of series code in financial year fy
// ("" for the current one) (GET /v1/series/{code}/audit, scope read).
func (cl *Client) Audit(ctx context.Context, code, fy string) (Audit, error) {
	b, err := cl.AuditFile(ctx, code, fy, AuditJSON)
	if err != nil {
		return Audit{}, err
	}
	var a Audit
	return a, decode(b, &a)
}

// AuditFile downloads the serial audit in format f: the file's bytes
// (CSV with a BOM, XLSX or JSON). It fails with 429 too_many_exports
// retried until ctx ends, or an *Error.
func (cl *Client) AuditFile(ctx context.Context, code, fy string, f AuditFormat) ([]byte, error) {
	q := url.Values{"format": {string(f)}}
	if fy != "" {
		q.Set("fy", fy)
	}
	a, err := cl.do(ctx, &call{method: http.MethodGet, path: "/v1/series/" + url.PathEscape(code) + "/audit?" + q.Encode()})
	return a.body, err
}

// GSTR1DocIssue returns GSTR-1 Table 13 for return period fp ("112026",
// "042026-062026" or "2026-27-Q1") (GET /v1/reports/gstr1/doc-issue,
// scope read).
func (cl *Client) GSTR1DocIssue(ctx context.Context, fp string) (DocIssue, error) {
	var d DocIssue
	return d, cl.getJSON(ctx, "/v1/reports/gstr1/doc-issue?"+url.Values{"fp": {fp}}.Encode(), &d)
}

// LockPeriod locks month fp ("112026") after its GSTR-1 was filed (POST
// /v1/periods/{fp}/lock, scope manage): no invoice dated in it may then be
// issued or cancelled. Locking a locked month returns the existing lock.
// It fails with an *Error: 422 period_not_ended for a month not yet over
// in IST, 422 for a malformed fp, 401, 403. Locking is idempotent, so it
// is retried like a read.
func (cl *Client) LockPeriod(ctx context.Context, fp string) (PeriodLock, error) {
	a, err := cl.do(ctx, &call{method: http.MethodPost, path: "/v1/periods/" + url.PathEscape(fp) + "/lock"})
	if err != nil {
		return PeriodLock{}, err
	}
	var l PeriodLock
	return l, decode(a.body, &l)
}

// ListPeriods returns the seller's locked months and their history (GET
// /v1/periods, scope read).
func (cl *Client) ListPeriods(ctx context.Context) (Periods, error) {
	var p Periods
	return p, cl.getJSON(ctx, "/v1/periods", &p)
}

// Receipt returns the printable receipt page (HTML) of an invoice's
// public id (GET /r/{public_id}, no key).
func (cl *Client) Receipt(ctx context.Context, publicID string) ([]byte, error) {
	a, err := cl.do(ctx, &call{method: http.MethodGet, path: "/r/" + url.PathEscape(publicID), accept: "text/html"})
	return a.body, err
}
