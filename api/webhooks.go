package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/db"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/webhook/outbox"
	"github.com/jackc/pgx/v5"
	"github.com/labstack/echo/v4"
)

// Webhooks: registration (scopes manage and read), listing and deletion
// (scope manage), the event log (scope read), and
// the JSON of an event. The events are written by the invoice
// transactions themselves (see invoice/events_store.go); the webhooks and
// events are stored, and the events delivered, by package
// webhook/outbox.

// Limits of webhooks.
const (
	maxWebhookURL  = 2048
	maxEventsLimit = 1000
)

var (
	errInvalidWebhook   = apperr.New(apperr.Invalid, "invalid_webhook", "the webhook is not valid")
	errWebhookForbidden = apperr.New(apperr.Invalid, "webhook_url_forbidden", "the webhook URL resolves to an address the server may not call")
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

// createWebhook serves POST /v1/webhooks (scopes manage and read: the
// webhook receives every new invoice of the seller in full, buyer and
// amounts, so a key that may not read invoices may not register one).
func (s *Server) createWebhook(c echo.Context) error {
	ctx := c.Request().Context()
	p, err := s.authorize(c, apikey.CanManage|apikey.CanRead)
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
			err = apperr.Errorf(errInvalidWebhook, "events holds at most the %d event types", len(eventSuffix))
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
	w, err := outbox.CreateWebhook(ctx, s.pool, p.Seller.ID, u, events, "whsec_"+hex.EncodeToString(secret))
	if err != nil {
		return err
	}
	out := renderWebhook(w)
	out.Secret = w.Secret
	return writeJSON(c, http.StatusCreated, out)
}

// listWebhooks serves GET /v1/webhooks (scope manage): secrets are not
// shown.
func (s *Server) listWebhooks(c echo.Context) error {
	p, err := s.authorize(c, apikey.CanManage)
	if err != nil {
		return err
	}
	ws, err := outbox.ListWebhooks(c.Request().Context(), s.pool, p.Seller.ID)
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
	if err := outbox.DeleteWebhook(c.Request().Context(), s.pool, p.Seller.ID, c.Param("id")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// listEvents serves GET /v1/events?after=&limit= (scope read): the
// seller's events kept (30 days), oldest first, after the event named, a
// page at a time: at most limit events and at most listPageBytes of them
// (pages.go), with next_after naming the page's last event when more
// follow now (null when the page ends the log for now). Events cover every
// series of the seller, so a key restricted to some series gets 403
// series_forbidden.
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
		after, err = outbox.LookupEvent(ctx, s.pool, p.Seller.ID, id, typ)
		if errors.Is(err, outbox.ErrEventNotFound) {
			return errBadAfter
		}
		if err != nil {
			return err
		}
	}
	page := newJSONPage(ctx, `{"events":[`, limit)
	var last string // the id of the page's last event
	err = db.ReadTx(ctx, s.pool, func(tx pgx.Tx) error {
		return readPage(page, func(n int) (got int, err error) {
			err = outbox.EachEvent(ctx, tx, p.Seller.ID, after, n, func(ev outbox.Event) error {
				got++
				item := renderEvent(ev, s.publicURL)
				if err := page.add(item); err != nil {
					return err
				}
				after, last = ev.ID, item.ID
				return nil
			})
			return got, err
		})
	})
	if err != nil {
		return err
	}
	next := "null"
	if page.more {
		next = `"` + last + `"`
	}
	return s.sendPage(c, page.finish(`],"next_after":`+next+`}`))
}

// eventSuffix is the end of an event id per type: "CH1-2026-7.issued".
var eventSuffix = map[string]string{invoice.EventIssued: "issued", invoice.EventCancelled: "cancelled",
	invoice.EventEInvoiceRegistered: "e_invoice_registered", invoice.EventEInvoiceFailed: "e_invoice_failed",
	invoice.EventEInvoiceCancelled: "e_invoice_cancelled"}

// eventTypesText lists the event types for messages.
var eventTypesText = strings.Join(invoice.EventTypes(), ", ")

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
// invoice.cancelled one shows it cancelled; an e-invoice event shows it
// as it is now.
func renderEvent(ev outbox.Event, publicURL string) eventJSON {
	inv := ev.Invoice
	if ev.Type == invoice.EventIssued {
		inv = asIssued(inv)
	}
	return eventJSON{ID: eventID(ev.Type, ev.Invoice), Type: ev.Type, CreatedAt: document.Timestamp(ev.CreatedAt),
		Data: eventDataJSON{Invoice: renderInvoice(inv, publicURL)}}
}

// EventBody returns the function that gives a webhook delivery its body
// (outbox.DelivererConfig.Body): the event as GET /v1/events lists it,
// with receipt_url absolute under publicURL as in answers (Config.PublicURL;
// "" keeps it a path). The function fails only when the event cannot be
// encoded.
func EventBody(publicURL string) func(outbox.Event) ([]byte, error) {
	return func(ev outbox.Event) ([]byte, error) { return json.Marshal(renderEvent(ev, publicURL)) }
}

// checkEvents returns the event types asked for, sorted and without
// repeats; none or an unknown one is errInvalidWebhook.
func checkEvents(in []string) ([]string, error) {
	if len(in) == 0 {
		return nil, apperr.Errorf(errInvalidWebhook, "events must list one or more of %s", eventTypesText)
	}
	var out []string
	for _, e := range in {
		if _, ok := eventSuffix[e]; !ok {
			return nil, apperr.Errorf(errInvalidWebhook, "unknown event type %q: use %s", clip(e), eventTypesText)
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
// connect, see outbox.PublicAddr).
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
		if !outbox.PublicAddr(a) {
			return "", apperr.Errorf(errWebhookForbidden, "url's host resolves to %s, a loopback, private or reserved address; "+
				"a server for tests or on-premises receivers allows them with serve --webhook-allow-private (INVOICED_WEBHOOK_ALLOW_PRIVATE=1)", a.Unmap())
		}
	}
	return u.String(), nil
}

func renderWebhook(w outbox.Webhook) webhookJSON {
	return webhookJSON{ID: w.PublicID, URL: w.URL, Events: w.Events, CreatedAt: document.Timestamp(w.CreatedAt)}
}
