package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/invoice"
	"github.com/labstack/echo/v4"
)

// Webhooks: registration (scope manage), the event log (scope read). The
// events are written by the invoice transactions themselves (see
// invoice/events_store.go); Deliverer sends them.

// Limits of webhooks.
const (
	maxWebhooksPerSeller = 16
	maxWebhookURL        = 2048
	// eventRetention is how long events are kept for GET /v1/events.
	eventRetention = 30 * 24 * time.Hour
	maxEventsLimit = 1000
)

var (
	errInvalidWebhook   = apperr.New(apperr.Invalid, "invalid_webhook", "the webhook is not valid")
	errWebhookForbidden = apperr.New(apperr.Invalid, "webhook_url_forbidden", "the webhook URL resolves to an address the server may not call")
	errWebhookNotFound  = apperr.New(apperr.NotFound, "webhook_not_found", "webhook not found")
	errTooManyWebhooks  = apperr.New(apperr.Conflict, "too_many_webhooks", "the seller has the most webhooks allowed")
	errBadAfter         = apperr.New(apperr.Invalid, "invalid_cursor", "after is not the id of an event kept by this server")
)

// webhookBody is the JSON body of POST /v1/webhooks.
type webhookBody struct {
	URL    string   `json:"url"`
	Events []string `json:"events"`
}

type webhookJSON struct {
	ID        string   `json:"id"`
	URL       string   `json:"url"`
	Events    []string `json:"events"`
	CreatedAt string   `json:"created_at"`
	Secret    string   `json:"secret,omitempty"` // only in the answer to its creation
}

type webhookListJSON struct {
	Webhooks []webhookJSON `json:"webhooks"`
}

// eventJSON is an event, as delivered and as listed.
type eventJSON struct {
	ID        string        `json:"id"`
	Type      string        `json:"type"`
	CreatedAt string        `json:"created_at"`
	Data      eventDataJSON `json:"data"`
}

type eventDataJSON struct {
	Invoice invoiceJSON `json:"invoice"`
}

type eventListJSON struct {
	Events []eventJSON `json:"events"`
}

// createWebhook serves POST /v1/webhooks (scope manage).
func (s *Server) createWebhook(c echo.Context) error {
	ctx := c.Request().Context()
	p, err := s.authorize(c, apikey.CanManage)
	if err != nil {
		return err
	}
	body, err := readJSON(c.Response(), c.Request(), s.bodyLimit(smallBodyMax))
	if err != nil {
		return err
	}
	var b webhookBody
	if err := decodeStrict(body, &b, errInvalidWebhook, 8); err != nil {
		if errors.Is(err, errTooManyElements) {
			err = apperr.Errorf(errInvalidWebhook, "events holds at most the 2 event types")
		}
		return err
	}
	events, err := checkEvents(b.Events)
	if err != nil {
		return err
	}
	u, err := checkWebhookURL(ctx, b.URL, s.webhookAllowPrivate)
	if err != nil {
		return err
	}
	secret := make([]byte, 32)
	rand.Read(secret)
	w, err := createWebhookRow(ctx, s.pool, p.Seller.ID, u, events, "whsec_"+hex.EncodeToString(secret))
	if err != nil {
		return err
	}
	out := renderWebhook(w)
	out.Secret = w.secret
	return writeJSON(c, http.StatusCreated, out)
}

// listWebhooks serves GET /v1/webhooks (scope manage): secrets are not
// shown.
func (s *Server) listWebhooks(c echo.Context) error {
	p, err := s.authorize(c, apikey.CanManage)
	if err != nil {
		return err
	}
	ws, err := listWebhookRows(c.Request().Context(), s.pool, p.Seller.ID)
	if err != nil {
		return err
	}
	out := webhookListJSON{Webhooks: make([]webhookJSON, len(ws))}
	for i, w := range ws {
		out.Webhooks[i] = renderWebhook(w)
	}
	return writeJSON(c, http.StatusOK, out)
}

// deleteWebhook serves DELETE /v1/webhooks/{id} (scope manage): the
// webhook gets no new events, and its pending deliveries are dropped.
func (s *Server) deleteWebhook(c echo.Context) error {
	p, err := s.authorize(c, apikey.CanManage)
	if err != nil {
		return err
	}
	if err := deleteWebhookRow(c.Request().Context(), s.pool, p.Seller.ID, c.Param("id")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// listEvents serves GET /v1/events?after=&limit= (scope read): the
// seller's events kept (30 days), oldest first, after the event named.
// Events cover every series of the seller, so a key restricted to some
// series gets 403 series_forbidden.
func (s *Server) listEvents(c echo.Context) error {
	ctx := c.Request().Context()
	p, err := s.authorize(c, apikey.CanRead)
	if err != nil {
		return err
	}
	if err := p.CheckAllSeries(); err != nil {
		return err
	}
	q := c.QueryParams()
	limit := defaultListLimit
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxEventsLimit {
			return errBadLimit
		}
		limit = n
	}
	var after int64
	if v := q.Get("after"); v != "" {
		key, typ, ok := parseEventID(v)
		if !ok {
			return errBadAfter
		}
		id, err := s.invoiceID(ctx, p, key)
		if errors.Is(err, invoice.ErrNotFound) {
			return errBadAfter
		}
		if err != nil {
			return err
		}
		if after, err = eventRowID(ctx, s.pool, p.Seller.ID, id, typ); err != nil {
			return err
		}
	}
	evs, err := listEventRows(ctx, s.pool, p.Seller.ID, after, limit)
	if err != nil {
		return err
	}
	out := eventListJSON{Events: make([]eventJSON, len(evs))}
	for i, ev := range evs {
		out.Events[i] = renderEvent(ev, s.publicURL)
	}
	return writeJSON(c, http.StatusOK, out)
}

// eventRow is an event with its invoice.
type eventRow struct {
	id        int64
	typ       string
	createdAt time.Time
	invoice   document.Invoice
}

// eventSuffix is the end of an event id per type: "CH1-2026-7.issued".
var eventSuffix = map[string]string{invoice.EventIssued: "issued", invoice.EventCancelled: "cancelled"}

// eventID returns the public id of an event: its invoice's id and what
// happened to it. It is unique per seller (an invoice is issued once and
// cancelled at most once) and, unlike the database's id, tells nothing
// about other sellers.
func eventID(typ string, inv document.Invoice) string {
	return invoiceKey(inv) + "." + eventSuffix[typ]
}

// parseEventID splits an event id into its invoice id and type.
func parseEventID(v string) (key, typ string, ok bool) {
	i := strings.LastIndexByte(v, '.')
	if i < 1 {
		return "", "", false
	}
	for t, suf := range eventSuffix {
		if v[i+1:] == suf {
			return v[:i], t, true
		}
	}
	return "", "", false
}

// renderEvent renders ev. An invoice.issued event shows the invoice as
// issued (its answer then), even if it was cancelled since; an
// invoice.cancelled one shows it cancelled.
func renderEvent(ev eventRow, publicURL string) eventJSON {
	inv := ev.invoice
	if ev.typ == invoice.EventIssued {
		inv = asIssued(inv)
	}
	return eventJSON{ID: eventID(ev.typ, ev.invoice), Type: ev.typ, CreatedAt: document.Timestamp(ev.createdAt),
		Data: eventDataJSON{Invoice: renderInvoice(inv, publicURL)}}
}

// checkEvents returns the event types asked for, sorted and without
// repeats; none or an unknown one is errInvalidWebhook.
func checkEvents(in []string) ([]string, error) {
	if len(in) == 0 {
		return nil, apperr.Errorf(errInvalidWebhook, "events must list one or both of invoice.issued, invoice.cancelled")
	}
	var out []string
	for _, e := range in {
		if _, ok := eventSuffix[e]; !ok {
			return nil, apperr.Errorf(errInvalidWebhook, "unknown event type %q: use invoice.issued or invoice.cancelled", clip(e))
		}
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	slices.Sort(out)
	return out, nil
}

// checkWebhookURL returns raw as a webhook URL: absolute http or https,
// no user info, no fragment, at most maxWebhookURL bytes, and, unless
// allowPrivate, a host that resolves only to public addresses
// (errWebhookForbidden otherwise; deliveries check again when they
// connect, see publicOnly).
func checkWebhookURL(ctx context.Context, raw string, allowPrivate bool) (string, error) {
	if len(raw) > maxWebhookURL {
		return "", apperr.Errorf(errInvalidWebhook, "url is longer than %d bytes", maxWebhookURL)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Fragment != "" || u.Opaque != "" {
		return "", apperr.Errorf(errInvalidWebhook, "url must be an absolute http or https URL without user info or fragment")
	}
	if allowPrivate {
		return u.String(), nil
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(rctx, "ip", u.Hostname())
	if err != nil || len(addrs) == 0 {
		return "", apperr.Errorf(errInvalidWebhook, "url's host %q does not resolve", clip(u.Hostname()))
	}
	for _, a := range addrs {
		if !publicAddr(a) {
			return "", apperr.Errorf(errWebhookForbidden, "url's host resolves to %s, a loopback, private or reserved address; "+
				"a server for tests or on-premises receivers allows them with serve --webhook-allow-private (INVOICED_WEBHOOK_ALLOW_PRIVATE=1)", a.Unmap())
		}
	}
	return u.String(), nil
}

// publicAddr reports whether a may be called by webhook deliveries: an
// address outside every range of IANA's IPv4 and IPv6 special-purpose
// address registries that is not globally reachable (blockedV4,
// blockedV6, with the globally reachable ranges inside them in
// reachableInside). IPv6 is public only inside 2000::/3 (the rest is
// reserved, unique-local, link-local, site-local, multicast or an
// IPv4-compatible form) or as NAT64 64:ff9b::/96; the forms that carry an
// IPv4 address (mapped ::ffff:0:0/96, NAT64, 6to4 2002::/16) are judged by
// the address they carry. Test: TestPublicAddr, case by case.
func publicAddr(a netip.Addr) bool {
	a = a.WithZone("")
	if !a.IsValid() {
		return false
	}
	if a.Is4In6() {
		a = a.Unmap()
	}
	if a.Is4() {
		return !inAny(a, blockedV4) || inAny(a, reachableInside)
	}
	b := a.As16()
	switch {
	case nat64.Contains(a):
		return publicAddr(netip.AddrFrom4([4]byte(b[12:16])))
	case sixToFour.Contains(a):
		return publicAddr(netip.AddrFrom4([4]byte(b[2:6])))
	case !globalUnicast.Contains(a):
		return false
	}
	return !inAny(a, blockedV6) || inAny(a, reachableInside)
}

// inAny reports whether a lies in one of prefixes.
func inAny(a netip.Addr, prefixes []netip.Prefix) bool {
	for _, p := range prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// The ranges publicAddr judges by, from IANA's special-purpose address
// registries (iana-ipv4-special-registry, iana-ipv6-special-registry).
var (
	nat64         = netip.MustParsePrefix("64:ff9b::/96") // RFC 6052: the last 32 bits are an IPv4 address
	sixToFour     = netip.MustParsePrefix("2002::/16")    // RFC 3056: bits 16–47 are an IPv4 address
	globalUnicast = netip.MustParsePrefix("2000::/3")
	blockedV4     = prefixes(
		"0.0.0.0/8",       // "this network"
		"10.0.0.0/8",      // private
		"100.64.0.0/10",   // shared address space (CGNAT)
		"127.0.0.0/8",     // loopback
		"169.254.0.0/16",  // link-local
		"172.16.0.0/12",   // private
		"192.0.0.0/24",    // IETF protocol assignments (dummy, NAT64 discovery, …)
		"192.0.2.0/24",    // documentation TEST-NET-1
		"192.88.99.0/24",  // 6to4 relay anycast (deprecated)
		"192.168.0.0/16",  // private
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // documentation TEST-NET-2
		"203.0.113.0/24",  // documentation TEST-NET-3
		"224.0.0.0/4",     // multicast
		"240.0.0.0/4",     // reserved, and 255.255.255.255 limited broadcast
	)
	blockedV6 = prefixes(
		"2001::/23",     // IETF protocol assignments: Teredo, benchmarking, ORCHID, …
		"2001:db8::/32", // documentation
		"3fff::/20",     // documentation
	)
	// reachableInside are the ranges the registries mark globally
	// reachable inside a blocked one.
	reachableInside = prefixes(
		"192.0.0.9/32", "192.0.0.10/32", // PCP and TURN anycast
		"2001:1::1/128", "2001:1::2/128", // PCP and TURN anycast
		"2001:3::/32",     // AMT
		"2001:4:112::/48", // AS112-v6
		"2001:20::/28",    // ORCHIDv2
		"2001:30::/28",    // DRIP
	)
)

// prefixes parses ps, which must be valid.
func prefixes(ps ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ps))
	for i, p := range ps {
		out[i] = netip.MustParsePrefix(p)
	}
	return out
}

func renderWebhook(w webhookRow) webhookJSON {
	return webhookJSON{ID: w.publicID, URL: w.url, Events: w.events, CreatedAt: document.Timestamp(w.createdAt)}
}
