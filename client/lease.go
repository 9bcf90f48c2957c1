package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
)

// Offline terminals (docs/offline.md): the lease of a series to a device,
// the device's uploads, and the end of a lease. Package client/offline
// builds a terminal on these.

// CodeNotContinuation is the code of an upload that does not continue the
// series; the *ContinuationError says where the series stands.
const (
	CodeNotContinuation = "not_continuation"
	CodeSeriesLeased    = "series_leased"
	CodeLeaseHeld       = "lease_held"
	CodeLeaseNotHeld    = "lease_not_held"
	// CodeLeaseNotFound (404): the Lease-Id is no lease of the series.
	CodeLeaseNotFound    = "lease_not_found"
	CodeLeaseNotUploaded = "lease_not_uploaded"
	// CodeInvalidLease (422): a lease request breaks a rule (a bad device
	// id, fy, serial or reason, a year the lease does not reserve).
	CodeInvalidLease = "invalid_lease"
	// CodeLeaseEndSuperseded (409): the device's end carried an
	// EndEpoch older than the lease's (the device resumed after sending
	// it); nothing ended.
	CodeLeaseEndSuperseded = "lease_end_superseded"
	// CodeLeaseYearsUndeclared: settling a lease that spans several
	// financial years needs Declared, one serial per year.
	CodeLeaseYearsUndeclared = "lease_years_undeclared"
	// Refusals of an upload outside the lease's time or scope.
	CodeYearBeforeLease   = "year_before_lease"
	CodeYearAfterLease    = "year_after_lease"
	CodeIssuedBeforeLease = "issued_before_lease"
	CodeInvoiceNotLeased  = "invoice_not_leased"
	// CodeDeclaredTooLow (422): a settlement declared, for a year, fewer
	// serials than the device uploaded or reported there.
	CodeDeclaredTooLow = "declared_too_low"
)

// LeaseRequest is the body of a lease.
type LeaseRequest struct {
	DeviceID string `json:"device_id"`
}

// Position is where a series-year stands: the next serial, the number of
// chain records and the last record's hash (hex; "" for none).
type Position struct {
	FY          string `json:"fy"`
	Serial      int64  `json:"serial"`
	ChainLength int64  `json:"chain_length"`
	ChainHead   string `json:"chain_head"`
	// LastIssuedAt is the last invoice's issue time ("" when none): a
	// terminal never issues before it, whatever its clock says.
	LastIssuedAt string `json:"last_issued_at,omitempty"`
}

// Lease is a series leased to a device.
type Lease struct {
	LeaseID     string    `json:"lease_id"`
	DeviceID    string    `json:"device_id"`
	Series      string    `json:"series"`
	LeasedAt    string    `json:"leased_at"`
	SellerGSTIN string    `json:"seller_gstin,omitempty"` // when leased: what the device numbers with
	DocType     string    `json:"doc_type,omitempty"`
	Format      string    `json:"format,omitempty"`
	Next        *Position `json:"next,omitempty"` // where the device continues (when leased)
	// Years (when leased): where the device continues in each financial
	// year the lease reserves (Next is the first); it numbers in no other.
	// A lease from a server without it reserves Next's year alone.
	Years []Position `json:"years,omitempty"`
	// NotBefore (when leased): the earliest issue time the device may
	// use, the later of the server's time at the lease and the series'
	// last issue time in any year.
	NotBefore string `json:"not_before,omitempty"`
	// EndEpoch counts the device's resumes (ResumeLease); the device's
	// end carries it (EndLeaseRequest.EndEpoch).
	EndEpoch        int64  `json:"end_epoch,omitempty"`
	EndedAt         string `json:"ended_at,omitempty"`
	EndKind         string `json:"end_kind,omitempty"` // EndByDevice or EndForced
	EndReason       string `json:"end_reason,omitempty"`
	EndFY           string `json:"end_fy,omitempty"`
	EndSerial       int64  `json:"end_serial,omitempty"`
	SettledAt       string `json:"settled_at,omitempty"`
	SettleReason    string `json:"settle_reason,omitempty"`
	DeclaredThrough int64  `json:"declared_through,omitempty"`
	// EndYears: a forced end's last uploaded serial per financial year
	// since the lease's start; Declared: a settlement's last serial per
	// year the device may have issued.
	EndYears []YearSerial `json:"end_years,omitempty"`
	Declared []YearSerial `json:"declared,omitempty"`
	// LastContactAt: the device's last upload, resume or end request the
	// server accepted; Reported: the last serial the device reported in
	// an end request (a settlement may declare no less).
	LastContactAt string      `json:"last_contact_at,omitempty"`
	Reported      *YearSerial `json:"reported,omitempty"`
}

// Lease end kinds, the values of Lease.EndKind (the server's
// lease.EndByDevice and lease.EndForced).
const (
	EndByDevice = "device"
	EndForced   = "forced"
)

// YearSerial is a serial of one financial year ("2026-27").
type YearSerial struct {
	FY      string `json:"fy"`
	Through int64  `json:"through"`
}

// DeviceInvoice is an invoice a device numbered offline, as uploaded.
type DeviceInvoice struct {
	Serial        int64       `json:"serial"`
	Number        string      `json:"number"`
	InvoiceDate   string      `json:"invoice_date"`
	IssuedAt      string      `json:"issued_at"`
	Buyer         *Buyer      `json:"buyer,omitempty"`
	ShipTo        *ShipTo     `json:"ship_to,omitempty"`
	PlaceOfSupply string      `json:"place_of_supply,omitempty"`
	Items         []ItemInput `json:"items"`
	Original      *Original   `json:"original,omitempty"`
	Totals        Totals      `json:"totals"`
	ChainHash     string      `json:"chain_hash"`
}

// DeviceInvoices is the body of an upload.
type DeviceInvoices struct {
	Invoices []DeviceInvoice `json:"invoices"`
}

// DeviceCancel is a cancellation a device made offline, as uploaded: the
// invoice (FY, Serial, Number), the cancel record's chain Position and
// hash, the time and the reason.
type DeviceCancel struct {
	FY          string `json:"fy"`
	Position    int64  `json:"position"`
	Serial      int64  `json:"serial"`
	Number      string `json:"number"`
	CancelledAt string `json:"cancelled_at"`
	Reason      string `json:"reason"`
	ChainHash   string `json:"chain_hash"`
}

// DeviceCancels is the body of a cancel upload.
type DeviceCancels struct {
	Cancels []DeviceCancel `json:"cancels"`
}

// UploadResult is the answer to an upload.
type UploadResult struct {
	Stored   int      `json:"stored"`
	Replayed int      `json:"replayed"`
	Next     Position `json:"next"`
}

// EndLeaseRequest is the body of DELETE /v1/series/{code}/lease: FY and
// LastSerial (and EndEpoch) for the device's own end; Force with Reason for
// a lost device; Declared (one serial for each of the two years the lease
// reserves) with Reason to settle a forced end. DeclaredThrough alone, which
// older clients sent for a lease of one year, is refused 422
// lease_years_undeclared.
type EndLeaseRequest struct {
	FY         string `json:"fy,omitempty"`
	LastSerial *int64 `json:"last_serial,omitempty"`
	// EndEpoch (the device's end): the lease's end epoch when the end
	// was asked; a stale one is refused 409 lease_end_superseded. nil:
	// not checked.
	EndEpoch        *int64       `json:"end_epoch,omitempty"`
	Force           bool         `json:"force,omitempty"`
	Reason          string       `json:"reason,omitempty"`
	DeclaredThrough *int64       `json:"declared_through,omitempty"`
	Declared        []YearSerial `json:"declared,omitempty"`
}

// ContinuationError is a 409 not_continuation: the upload did not continue
// the series, which stands at Expected.
type ContinuationError struct {
	Err      *Error
	Expected Position
}

// Error returns the answer's error text.
func (e *ContinuationError) Error() string { return e.Err.Error() }

// Unwrap returns the *Error.
func (e *ContinuationError) Unwrap() error { return e.Err }

// Lease leases series code to deviceID (POST /v1/series/{code}/lease,
// scope manage), retrying safely with one Idempotency-Key (a new one, or
// IdempotencyKey's): an attempt whose answer was lost is answered again,
// the same lease, while the device has not been in touch with the server.
// It fails with an *Error: 409 lease_held when the series is held, 422
// invalid_lease, 404; when the outcome stays unknown (no answer before
// ctx ended), IsOutcomeUnknown is true and OutcomeKey gives the key to
// ask again with.
func (cl *Client) Lease(ctx context.Context, code, deviceID string, opts ...CallOption) (Lease, error) {
	body, err := json.Marshal(LeaseRequest{DeviceID: deviceID})
	if err != nil {
		return Lease{}, err
	}
	c := &call{method: http.MethodPost, path: "/v1/series/" + url.PathEscape(code) + "/lease", body: body, mutating: true,
		accept: "application/json", key: NewIdempotencyKey()}
	for _, o := range opts {
		o(c)
	}
	a, err := cl.do(ctx, c)
	if err != nil {
		return Lease{}, err
	}
	var l Lease
	return l, decode(a.body, &l)
}

// UploadDeviceInvoices uploads invoices numbered offline under lease
// leaseID (POST /v1/series/{code}/device-invoices, scope issue). An upload
// is idempotent (what is stored already is replayed), so it is retried
// like a read. It fails with a *ContinuationError (409 not_continuation)
// when the serials do not continue the series, and with an *Error for
// other refusals (422 naming the first bad invoice and field, 409
// lease_not_held, 404 lease_not_found).
func (cl *Client) UploadDeviceInvoices(ctx context.Context, code, leaseID string, invs []DeviceInvoice) (UploadResult, error) {
	return cl.upload(ctx, code, "/device-invoices", leaseID, DeviceInvoices{Invoices: invs})
}

// UploadDeviceCancels uploads cancellations made offline under lease
// leaseID (POST /v1/series/{code}/device-cancels, scope issue), in chain
// order, after the invoices they cancel. Like UploadDeviceInvoices it is
// idempotent and retried like a read, and fails with a
// *ContinuationError (409 not_continuation: a position does not continue
// the chain) or an *Error (422 naming the first bad cancellation and
// field, 409 lease_not_held, 404 lease_not_found).
func (cl *Client) UploadDeviceCancels(ctx context.Context, code, leaseID string, cs []DeviceCancel) (UploadResult, error) {
	return cl.upload(ctx, code, "/device-cancels", leaseID, DeviceCancels{Cancels: cs})
}

// upload posts v to the series' route and reads the answer of an upload.
func (cl *Client) upload(ctx context.Context, code, route, leaseID string, v any) (UploadResult, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return UploadResult{}, err
	}
	a, err := cl.do(ctx, &call{method: http.MethodPost, path: "/v1/series/" + url.PathEscape(code) + route,
		body: body, accept: "application/json", lease: leaseID})
	var e *Error
	if errors.As(err, &e) && e.Code == CodeNotContinuation {
		var b struct {
			Expected Position `json:"expected"`
		}
		_ = json.Unmarshal(e.body, &b)
		return UploadResult{}, &ContinuationError{Err: e, Expected: b.Expected}
	}
	if err != nil {
		return UploadResult{}, err
	}
	var r UploadResult
	return r, decode(a.body, &r)
}

// EndLease ends or settles the lease of series code
// (DELETE /v1/series/{code}/lease): with leaseID (scope issue) the device
// ends its own lease with req.FY and req.LastSerial, refused with 409
// lease_not_uploaded until every serial up to it is uploaded; with leaseID
// "" (scope manage) req.Force and req.Reason end a lost device's lease,
// and req.Declared and req.Reason settle it (422 declared_too_low below
// what the server knows the device numbered). It returns the lease. The
// device's end is idempotent: after a lost answer the retry gets the same
// 200; a 409 lease_not_held means the lease ended otherwise (by force). A
// 503 commit_outcome_unknown or no answer leaves the outcome open
// (IsOutcomeUnknown): a device learns it with ResumeLease.
func (cl *Client) EndLease(ctx context.Context, code, leaseID string, req EndLeaseRequest) (Lease, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return Lease{}, err
	}
	a, err := cl.do(ctx, &call{method: http.MethodDelete, path: "/v1/series/" + url.PathEscape(code) + "/lease",
		body: body, mutating: true, accept: "application/json", lease: leaseID})
	if err != nil {
		return Lease{}, err
	}
	var l Lease
	return l, decode(a.body, &l)
}

// GetLease reads a lease of series code (GET /v1/series/{code}/lease): with
// leaseID (scope issue) that lease as it stands (held, ended or settled),
// with leaseID "" (scope read) the lease holding the series, whose LeaseID
// is "" unless the key has scope manage (the id is the device's
// credential). It fails with
// an *Error: 404 lease_not_found.
func (cl *Client) GetLease(ctx context.Context, code, leaseID string) (Lease, error) {
	a, err := cl.do(ctx, &call{method: http.MethodGet, path: "/v1/series/" + url.PathEscape(code) + "/lease",
		accept: "application/json", lease: leaseID})
	if err != nil {
		return Lease{}, err
	}
	var l Lease
	return l, decode(a.body, &l)
}

// ResumeLease is the device's resume of lease leaseID of series code
// (POST /v1/series/{code}/lease/resume, scope issue) after an end whose
// outcome it could not learn. It returns the lease as it stands: in force
// (EndedAt ""), with a new EndEpoch, so that no end the device sent
// before can commit any more (it is refused 409 lease_end_superseded);
// or ended, unchanged. It fails with an *Error: 404 lease_not_found. A
// resume repeated after a lost answer is harmless: it moves the epoch on
// again.
func (cl *Client) ResumeLease(ctx context.Context, code, leaseID string) (Lease, error) {
	a, err := cl.do(ctx, &call{method: http.MethodPost, path: "/v1/series/" + url.PathEscape(code) + "/lease/resume",
		mutating: true, accept: "application/json", lease: leaseID})
	if err != nil {
		return Lease{}, err
	}
	var l Lease
	return l, decode(a.body, &l)
}
