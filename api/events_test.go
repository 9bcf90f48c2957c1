package api

import (
	"encoding/json"
	"net/http"
	"testing"
)

// GET /v1/events is the webhooks' log, as README and the OpenAPI say: a
// seller without a webhook gets an empty list however many invoices it
// issues, and from the moment a webhook subscribes each change of its
// type is recorded (not the ones before).
func TestEventsAreTheWebhooksLog(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.WebhookAllowPrivate = true })
	events := func() []string {
		t.Helper()
		r := e.do("GET", "/v1/events", e.read, "")
		e.wantStatus(r, http.StatusOK)
		var l struct {
			Events []struct {
				ID string `json:"id"`
			} `json:"events"`
		}
		if err := json.Unmarshal(r.body, &l); err != nil {
			t.Fatal(err)
		}
		ids := []string{}
		for _, ev := range l.Events {
			ids = append(ids, ev.ID)
		}
		return ids
	}
	e.mustIssue("CH1", "")
	if got := events(); len(got) != 0 {
		t.Fatalf("a seller without webhooks has events %v", got)
	}
	e.wantStatus(e.do("POST", "/v1/webhooks", e.all, `{"url":"http://127.0.0.1:9/hook","events":["invoice.issued"]}`), http.StatusCreated)
	second := e.mustIssue("CH1", "")
	if got := events(); len(got) != 1 || got[0] != second.ID+".issued" {
		t.Fatalf("after a webhook subscribed: events %v, want only %s.issued", got, second.ID)
	}
}
