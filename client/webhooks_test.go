package client

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/webhook"
)

// TestWebhookRoundTrip: a webhook created shows its secret once, is
// listed without it, and is gone after DeleteWebhook (a second delete is
// 404).
func TestWebhookRoundTrip(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := fastClient(e.url, e.all)
	ctx := t.Context()
	w, err := c.CreateWebhook(ctx, WebhookRequest{URL: "http://127.0.0.1:9/hooks", Events: []string{EventInvoiceIssued}})
	if err != nil {
		t.Fatalf("CreateWebhook: %v", err)
	}
	if !strings.HasPrefix(w.ID, "wh_") || !strings.HasPrefix(w.Secret, "whsec_") || w.URL != "http://127.0.0.1:9/hooks" ||
		!slices.Equal(w.Events, []string{EventInvoiceIssued}) || w.CreatedAt.IsZero() {
		t.Fatalf("created %+v", w)
	}
	ws, err := c.ListWebhooks(ctx)
	if err != nil || len(ws) != 1 || ws[0].ID != w.ID || ws[0].Secret != "" || ws[0].URL != w.URL {
		t.Fatalf("ListWebhooks: %+v, %v; want %s without its secret", ws, err, w.ID)
	}
	if err := c.DeleteWebhook(ctx, w.ID); err != nil {
		t.Fatalf("DeleteWebhook: %v", err)
	}
	if ws, err := c.ListWebhooks(ctx); err != nil || len(ws) != 0 {
		t.Fatalf("after delete: %+v, %v", ws, err)
	}
	var ce *Error
	if err := c.DeleteWebhook(ctx, w.ID); !errors.As(err, &ce) || ce.Status != 404 {
		t.Fatalf("second delete: %v, want 404", err)
	}
	if _, err := c.CreateWebhook(ctx, WebhookRequest{URL: "http://127.0.0.1:9/", Events: []string{"invoice.paid"}}); !errors.As(err, &ce) || ce.Status != 422 {
		t.Fatalf("unknown event type: %v, want 422", err)
	}
}

// TestListEventsPages: five issues and a cancel give six events, oldest
// first, each naming its invoice; ListEvents pages through them two at a
// time, each page after the last id of the one before.
func TestListEventsPages(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := fastClient(e.url, e.all)
	ctx := t.Context()
	if _, err := c.CreateWebhook(ctx, WebhookRequest{URL: "http://127.0.0.1:9/", Events: []string{EventInvoiceIssued, EventInvoiceCancelled}}); err != nil {
		t.Fatal(err)
	}
	res, err := c.IssueBatch(ctx, "CH1", batch(5))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, r := range res.Results {
		want = append(want, r.Invoice.ID+".issued")
	}
	cancelled := res.Results[1].Invoice.ID
	if _, err := c.CancelInvoice(ctx, cancelled, "wrong buyer"); err != nil {
		t.Fatal(err)
	}
	want = append(want, cancelled+".cancelled")

	var got []string
	pages := 0
	for page, err := range c.ListEvents(ctx, EventOptions{Limit: 2}) {
		if err != nil {
			t.Fatalf("ListEvents: %v", err)
		}
		pages++
		if len(page.Events) > 2 {
			t.Fatalf("page of %d events, limit 2", len(page.Events))
		}
		for _, ev := range page.Events {
			got = append(got, ev.ID)
			id, typ, _ := strings.Cut(ev.ID, ".")
			if ev.Type != "invoice."+typ || ev.Data.Invoice.ID != id || ev.CreatedAt.IsZero() {
				t.Fatalf("event %+v", ev)
			}
			if typ == "cancelled" && (ev.Data.Invoice.Status != "cancelled" || ev.Data.Invoice.CancelReason != "wrong buyer") {
				t.Fatalf("cancel event carries %+v", ev.Data.Invoice)
			}
		}
	}
	if !slices.Equal(got, want) || pages != 3 {
		t.Fatalf("events %v in %d pages, want %v in 3", got, pages, want)
	}
	rest, err := c.ListEventsPage(ctx, EventOptions{After: want[3]})
	if err != nil || len(rest.Events) != 2 || rest.Events[0].ID != want[4] {
		t.Fatalf("after %s: %+v, %v", want[3], rest, err)
	}
}

// TestVerifyWebhook: a signature made by webhook.Sign is accepted; a
// tampered body, another secret and an old timestamp are refused.
func TestVerifyWebhook(t *testing.T) {
	t.Parallel()
	const secret = "whsec_0123abcd"
	body := []byte(`{"id":"CH1-2026-7.issued","type":"invoice.issued"}`)
	now := webhook.Sign(secret, body, time.Now())
	if err := VerifyWebhook(secret, now, body, 5*time.Minute); err != nil {
		t.Fatalf("fresh signature refused: %v", err)
	}
	tampered := []byte(strings.Replace(string(body), "CH1-2026-7", "CH1-2026-8", 1))
	for name, c := range map[string]struct {
		secret, header string
		body           []byte
		want           error
	}{
		"tampered body": {secret, now, tampered, ErrSignatureMismatch},
		"other secret":  {"whsec_other", now, body, ErrSignatureMismatch},
		"old":           {secret, webhook.Sign(secret, body, time.Now().Add(-10*time.Minute)), body, ErrSignatureTooOld},
		"future":        {secret, webhook.Sign(secret, body, time.Now().Add(10*time.Minute)), body, ErrSignatureTooOld},
		"malformed":     {secret, "v1=zz", body, ErrSignatureMalformed},
	} {
		if err := VerifyWebhook(c.secret, c.header, c.body, 5*time.Minute); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
}
