package api

import (
	"encoding/hex"
	"errors"
	"net/http"
	"slices"

	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/lease"
	"github.com/labstack/echo/v4"
)

// Offline terminals (docs/offline.md): a series leased to one device, its
// resumption, and the end of a lease. The device's uploads are in
// lease_uploads.go and lease_cancels.go.

const headerLeaseID = "Lease-Id"

// leaseRoutes registers the routes of offline terminals.
func (s *Server) leaseRoutes(e *echo.Echo) {
	s.route(e, http.MethodPost, "/v1/series/:code/lease", ClassDevice, apikey.CanManage, s.takeLease)
	// Scope issue with the device's Lease-Id; read (getLease) or manage
	// (endLease) without.
	s.route(e, http.MethodGet, "/v1/series/:code/lease", ClassDevice, 0, s.getLease)
	s.route(e, http.MethodDelete, "/v1/series/:code/lease", ClassDevice, 0, s.endLease)
	s.route(e, http.MethodPost, "/v1/series/:code/lease/resume", ClassDevice, apikey.CanIssue, s.resumeLease)
	s.route(e, http.MethodPost, "/v1/series/:code/device-invoices", ClassDevice, apikey.CanIssue, s.uploadOffline)
	s.route(e, http.MethodPost, "/v1/series/:code/device-cancels", ClassDevice, apikey.CanIssue, s.uploadOfflineCancels)
}

var errNoLeaseID = apperr.New(apperr.Malformed, "missing_lease_id", "send the lease's id in the Lease-Id header")

// positionJSON is where a series-year stands: the next serial to issue and
// the chain after the last record.
type positionJSON struct {
	FY          string `json:"fy"`
	Serial      int64  `json:"serial"`
	ChainLength int64  `json:"chain_length"`
	ChainHead   string `json:"chain_head"`
	// LastIssuedAt is the last invoice's issue time; "" when none.
	LastIssuedAt string `json:"last_issued_at,omitempty"`
}

func renderPosition(p lease.Position) positionJSON {
	out := positionJSON{FY: p.FY.String(), Serial: p.Serial, ChainLength: p.ChainLength, ChainHead: hex.EncodeToString(p.ChainHead)}
	if !p.LastIssuedAt.IsZero() {
		out.LastIssuedAt = document.Timestamp(p.LastIssuedAt)
	}
	return out
}

// leaseJSON is a lease as the API shows it.
type leaseJSON struct {
	// LeaseID is the device's credential: "" (omitted) on the holder read
	// without Lease-Id by a key without scope manage.
	LeaseID  string `json:"lease_id,omitempty"`
	DeviceID string `json:"device_id"`
	Series   string `json:"series"`
	LeasedAt string `json:"leased_at"`
	// The device numbers with these, given when the lease is taken.
	SellerGSTIN string        `json:"seller_gstin,omitempty"`
	DocType     string        `json:"doc_type,omitempty"`
	Format      string        `json:"format,omitempty"`
	Next        *positionJSON `json:"next,omitempty"`
	// NotBefore (when leased): the device never issues before it.
	NotBefore string `json:"not_before,omitempty"`
	// EndEpoch counts the device's resumes (POST …/lease/resume); the
	// device's end carries it. Omitted while 0.
	EndEpoch        int64  `json:"end_epoch,omitempty"`
	EndedAt         string `json:"ended_at,omitempty"`
	EndKind         string `json:"end_kind,omitempty"`
	EndReason       string `json:"end_reason,omitempty"`
	EndFY           string `json:"end_fy,omitempty"`
	EndSerial       int64  `json:"end_serial,omitempty"`
	SettledAt       string `json:"settled_at,omitempty"`
	SettleReason    string `json:"settle_reason,omitempty"`
	DeclaredThrough int64  `json:"declared_through,omitempty"`
	// EndYears: a forced end's last uploaded serial per year the lease
	// reserves; DeclaredYears: a settlement's last serial per year.
	EndYears      []yearSerialJSON `json:"end_years,omitempty"`
	DeclaredYears []yearSerialJSON `json:"declared,omitempty"`
	// Years (when leased): where the device continues in each year the
	// lease reserves; it numbers in no other.
	Years []positionJSON `json:"years,omitempty"`
	// LastContactAt: the device's last upload, resume or end request the
	// server accepted; Reported: the last serial the device reported in
	// an end request (a settlement may declare no less).
	LastContactAt string          `json:"last_contact_at,omitempty"`
	Reported      *yearSerialJSON `json:"reported,omitempty"`
}

// yearSerialJSON is a serial of one financial year.
type yearSerialJSON struct {
	FY      string `json:"fy"`
	Through int64  `json:"through"`
}

// renderYears returns m in year order.
func renderYears(m map[gst.FY]int64) []yearSerialJSON {
	if len(m) == 0 {
		return nil
	}
	ys := make([]gst.FY, 0, len(m))
	for y := range m {
		ys = append(ys, y)
	}
	slices.Sort(ys)
	out := make([]yearSerialJSON, len(ys))
	for i, y := range ys {
		out[i] = yearSerialJSON{FY: y.String(), Through: m[y]}
	}
	return out
}

func renderLease(l lease.Lease, code string) leaseJSON {
	out := leaseJSON{LeaseID: l.ID, DeviceID: l.DeviceID, Series: code, LeasedAt: document.Timestamp(l.LeasedAt), EndEpoch: l.EndEpoch}
	if l.EndedAt != nil {
		out.EndedAt, out.EndKind, out.EndReason = document.Timestamp(*l.EndedAt), l.EndKind, l.EndReason
		out.EndFY, out.EndSerial = l.EndFY.String(), l.EndSerial
	}
	if l.SettledAt != nil {
		out.SettledAt, out.SettleReason, out.DeclaredThrough = document.Timestamp(*l.SettledAt), l.SettleReason, l.DeclaredThrough
	}
	out.EndYears, out.DeclaredYears = renderYears(l.EndYears), renderYears(l.DeclaredYears)
	if l.LastContactAt != nil {
		out.LastContactAt = document.Timestamp(*l.LastContactAt)
	}
	if l.ReportedSerial > 0 {
		out.Reported = &yearSerialJSON{FY: l.ReportedFY.String(), Through: l.ReportedSerial}
	}
	return out
}

type leaseBody struct {
	DeviceID string `json:"device_id"`
}

// takeLease serves POST /v1/series/{code}/lease (scope manage): 201 with
// the lease and where the device continues in each year it reserves; 409
// lease_held when the series is held. With an Idempotency-Key, the same
// request again answers the same lease (200, Idempotent-Replayed: true)
// while its device has not been in touch (lease.TakeLeaseKeyed).
func (s *Server) takeLease(c echo.Context) error {
	p, err := s.authorize(c, apikey.CanManage)
	if err != nil {
		return err
	}
	key, err := idempotencyKey(c.Request().Header)
	if err != nil {
		return err
	}
	body, err := readJSON(c.Response(), c.Request(), s.bodyLimit(smallBodyMax))
	if err != nil {
		return err
	}
	var b leaseBody
	if err := decodeStrict(body, &b, lease.ErrInvalidLease, 0); err != nil {
		return err
	}
	ctx := c.Request().Context()
	sr, err := s.seriesOf(ctx, p, c.Param("code"))
	if err != nil {
		return err
	}
	l, replayed, err := lease.TakeLeaseKeyed(ctx, s.pool, sr, b.DeviceID, key, "key "+apikey.Tag+p.Prefix, s.now())
	if err != nil {
		return err
	}
	out := renderLease(l, sr.Code)
	next := renderPosition(l.Next)
	out.Next = &next
	for _, y := range l.Start {
		out.Years = append(out.Years, renderPosition(y))
	}
	out.SellerGSTIN, out.DocType, out.Format = string(p.Seller.GSTIN), string(sr.DocType), sr.Format.String()
	out.NotBefore = document.Timestamp(l.NotBefore)
	if replayed {
		c.Response().Header().Set(headerReplayed, "true")
		return writeJSON(c, http.StatusOK, out)
	}
	return writeJSON(c, http.StatusCreated, out)
}

// getLease serves GET /v1/series/{code}/lease: with a Lease-Id header
// (scope issue) that lease as it stands, held, ended or settled, so that a
// device whose end went unanswered learns whether it ended; without it
// (scope read) the lease holding the series, 404 lease_not_found when
// none does. The holder's lease_id is the device's credential (its
// uploads and its own end): without Lease-Id it is shown only to a key
// with scope manage, which may take and force-end leases anyway.
func (s *Server) getLease(c echo.Context) error {
	leaseID := c.Request().Header.Get(headerLeaseID)
	need := apikey.CanRead
	if leaseID != "" {
		need = apikey.CanIssue
	}
	p, err := s.authorize(c, need)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	sr, err := s.seriesOf(ctx, p, c.Param("code"))
	if err != nil {
		return err
	}
	var l lease.Lease
	if leaseID != "" {
		l, err = lease.GetLease(ctx, s.pool, sr, leaseID)
	} else {
		l, err = lease.HolderLease(ctx, s.pool, sr)
	}
	if err != nil {
		return err
	}
	out := renderLease(l, sr.Code)
	if leaseID == "" && !p.Scopes.Has(apikey.CanManage) {
		out.LeaseID = ""
	}
	return writeJSON(c, http.StatusOK, out)
}

// holderRequest authorises a request of a lease's holder (scope issue,
// header Lease-Id) on the series of its path and returns the key's
// principal, the series and the lease id. It fails with the errors of
// authorisation and of seriesOf, and errNoLeaseID without the header.
func (s *Server) holderRequest(c echo.Context) (apikey.Principal, gst.Series, string, error) {
	p, err := s.authorize(c, apikey.CanIssue)
	if err != nil {
		return apikey.Principal{}, gst.Series{}, "", err
	}
	leaseID := c.Request().Header.Get(headerLeaseID)
	if leaseID == "" {
		return apikey.Principal{}, gst.Series{}, "", errNoLeaseID
	}
	sr, err := s.seriesOf(c.Request().Context(), p, c.Param("code"))
	if err != nil {
		return apikey.Principal{}, gst.Series{}, "", err
	}
	return p, sr, leaseID, nil
}

// resumeLease serves POST /v1/series/{code}/lease/resume (scope issue,
// header Lease-Id): the device, which asked to end its lease and could not
// learn the outcome, asks to sell on. 200 with the lease as it stands:
// in force (no ended_at), its end_epoch moved on, so that no end the
// device sent before can commit any more; ended, unchanged.
func (s *Server) resumeLease(c echo.Context) error {
	_, sr, leaseID, err := s.holderRequest(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	l, err := lease.ResumeLease(ctx, s.pool, sr, leaseID, s.now())
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, renderLease(l, sr.Code))
}

// endLeaseBody is the JSON body of DELETE /v1/series/{code}/lease.
type endLeaseBody struct {
	FY         string `json:"fy"`
	LastSerial *int64 `json:"last_serial"`
	// EndEpoch (the device's end, optional): the lease's end_epoch when
	// the device asked; refused 409 lease_end_superseded when stale.
	EndEpoch        *int64           `json:"end_epoch"`
	Force           bool             `json:"force"`
	Reason          string           `json:"reason"`
	DeclaredThrough *int64           `json:"declared_through"`
	Declared        []yearSerialJSON `json:"declared"`
}

// endLease serves DELETE /v1/series/{code}/lease; which end the body asks
// for is lease.EndLease's decision (EndRequest.Kind). With a Lease-Id header
// the device ends its lease (scope issue) with fy and last_serial: refused
// (409 lease_not_uploaded) until everything up to last_serial is stored.
// Without it, scope manage: "force": true with a reason ends the lease of
// a lost device, recording the last serial uploaded; "declared" (a serial
// for each year the lease reserves) with a reason settles a lease ended by
// force ("declared_through" alone is refused, lease_years_undeclared). 200 with
// the lease; the device's end is idempotent (the same fy and last_serial
// again answer the ended lease).
func (s *Server) endLease(c echo.Context) error {
	leaseID := c.Request().Header.Get(headerLeaseID)
	need := apikey.CanManage
	if leaseID != "" {
		need = apikey.CanIssue
	}
	p, err := s.authorize(c, need)
	if err != nil {
		return err
	}
	body, err := readJSON(c.Response(), c.Request(), s.bodyLimit(smallBodyMax))
	if err != nil {
		return err
	}
	var b endLeaseBody
	if err := decodeStrict(body, &b, lease.ErrInvalidLease, maxDeclaredYears); err != nil {
		if errors.Is(err, errTooManyElements) {
			err = apperr.Errorf(lease.ErrInvalidLease, "declared holds more than %d years", maxDeclaredYears)
		}
		return err
	}
	ctx := c.Request().Context()
	sr, err := s.seriesOf(ctx, p, c.Param("code"))
	if err != nil {
		return err
	}
	r := lease.EndRequest{LeaseID: leaseID, FY: b.FY, LastSerial: b.LastSerial, EndEpoch: b.EndEpoch, Force: b.Force,
		DeclaredThrough: b.DeclaredThrough, Reason: b.Reason, Seal: invoice.DeclarationSeal(p.Seller.GSTIN)}
	if b.Declared != nil {
		r.Declared = make([]lease.YearSerial, len(b.Declared))
		for i, d := range b.Declared {
			r.Declared[i] = lease.YearSerial(d)
		}
	}
	l, err := lease.EndLease(ctx, s.pool, sr, r, "key "+apikey.Tag+p.Prefix, s.now())
	if err != nil {
		return err
	}
	out := renderLease(l, sr.Code)
	if leaseID == "" && !p.Scopes.Has(apikey.CanManage) {
		out.LeaseID = ""
	}
	return writeJSON(c, http.StatusOK, out)
}

// maxDeclaredYears bounds a settlement's declared years: every financial
// year the series package numbers.
const maxDeclaredYears = int(gst.MaxFY - gst.MinFY + 1)
