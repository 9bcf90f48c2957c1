package client

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/invoiced/invoiced/webhook"
)

// CreateWebhook registers a webhook (POST /v1/webhooks, scopes manage and
// read: its deliveries carry whole invoices). The
// answer is the only one with the signing Secret. It fails with an
// *Error: 422 for an invalid URL or event type, 422
// webhook_url_forbidden for a URL that resolves to a private address
// (unless the server allows them), 401, 403. The route takes no
// Idempotency-Key: after an attempt without an answer, a retry that gets
// 409 returns an error for which IsOutcomeUnknown is true.
func (cl *Client) CreateWebhook(ctx context.Context, req WebhookRequest) (Webhook, error) {
	var w Webhook
	return w, cl.createJSON(ctx, "/v1/webhooks", req, &w)
}

// ListWebhooks returns the seller's webhooks, oldest first, without
// their secrets (GET /v1/webhooks, scope manage).
func (cl *Client) ListWebhooks(ctx context.Context) ([]Webhook, error) {
	var l WebhookList
	if err := cl.getJSON(ctx, "/v1/webhooks", &l); err != nil {
		return nil, err
	}
	return l.Webhooks, nil
}

// DeleteWebhook deletes webhook id ("wh_…") and drops its pending
// deliveries (DELETE /v1/webhooks/{id}, scope manage). Deleting is
// idempotent, so it is retried like a read; it fails with an *Error 404
// when there is no such webhook, which after a lost answer may mean an
// earlier attempt deleted it: either way it is gone.
func (cl *Client) DeleteWebhook(ctx context.Context, id string) error {
	_, err := cl.do(ctx, &call{method: http.MethodDelete, path: "/v1/webhooks/" + url.PathEscape(id)})
	return err
}

// EventOptions selects events.
type EventOptions struct {
	After string // an event id: only later events; "" from the oldest kept
	Limit int    // page size, 1 to 1000; 0 for the server's default (100)
}

// ListEventsPage returns one page of the events recorded for the seller's
// webhooks in the last 30 days, oldest first (GET /v1/events, scope read),
// after opt.After: an event is recorded only while a webhook subscribes to
// its type, so a seller without webhooks gets none (ListInvoices reads
// invoices). It fails with an *Error 422 invalid_cursor when After names
// no event kept.
func (cl *Client) ListEventsPage(ctx context.Context, opt EventOptions) (EventList, error) {
	q := url.Values{}
	if opt.After != "" {
		q.Set("after", opt.After)
	}
	if opt.Limit > 0 {
		q.Set("limit", strconv.Itoa(opt.Limit))
	}
	path := "/v1/events"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var l EventList
	return l, cl.getJSON(ctx, path, &l)
}

// ListEvents iterates over the pages of the seller's events after
// opt.After, oldest first, fetching each page when the loop reaches it
// with After set to the last event of the page before. It ends after an
// empty page, or a page whose NextAfter is nil that holds fewer events
// than the page size (a page stops at 4 MiB, so a short one may have more
// after it: the server says so with NextAfter); a page that fails (after
// retries) is yielded as its error and ends the iteration.
func (cl *Client) ListEvents(ctx context.Context, opt EventOptions) iter.Seq2[EventList, error] {
	return func(yield func(EventList, error) bool) {
		size := opt.Limit
		if size <= 0 {
			size = 100 // the server's default
		}
		for {
			page, err := cl.ListEventsPage(ctx, opt)
			if err != nil {
				yield(EventList{}, err)
				return
			}
			if len(page.Events) == 0 {
				return
			}
			if !yield(page, nil) || page.NextAfter == nil && len(page.Events) < size {
				return
			}
			opt.After = page.Events[len(page.Events)-1].ID
		}
	}
}

// WebhookSignatureHeader is the header that carries a delivery's
// signature.
const WebhookSignatureHeader = webhook.SignatureHeader

// Errors of VerifyWebhook; match them with errors.Is.
var (
	ErrSignatureMalformed = webhook.ErrMalformed // not "t=<unix>,v1=<hex>"
	ErrSignatureTooOld    = webhook.ErrTooOld    // timestamp further than tolerance from now
	ErrSignatureMismatch  = webhook.ErrMismatch  // no v1 matches body and secret
)

// VerifyWebhook checks a delivery: header is its Invoiced-Signature value,
// body its raw bytes (verify before decoding), secret the webhook's. It
// returns nil when a v1 signature matches and the timestamp lies within
// tolerance of now (5 minutes is usual; 0 skips the time check), and
// ErrSignatureMalformed, ErrSignatureTooOld or ErrSignatureMismatch
// otherwise.
func VerifyWebhook(secret, header string, body []byte, tolerance time.Duration) error {
	return webhook.VerifySignature(secret, header, body, tolerance, time.Now())
}
