package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// IssueBatch issues up to 500 invoices of series code in one request
// (POST /v1/series/{code}/invoices/batch, scope issue). Each item carries
// its own idempotency key: IssueBatch writes a new one into every item of
// items whose IdempotencyKey is empty, before the first attempt, so that
// every retry sends the same keys and bytes and a caller can send items
// again to learn an unknown outcome.
//
// The whole request is retried on the answers IssueInvoice retries (no
// answer, 5xx, 429, 409 idempotency_key_in_progress) and also when an
// item's result is one of those: every item is idempotent, so a retry
// replays the issued ones. An item refused with a 4xx is a result
// (BatchResult.Err), not an error. It returns one result per item, in
// order, each Invoice's Replayed set as the result says. It fails with an
// *Error for a refusal of the whole request (422 invalid_batch, 404, 401,
// 403), or, when ctx ends first, with an error for which IsOutcomeUnknown
// tells whether an attempt may have issued items; when ctx ends while
// items still had a retryable result, the last results come with it.
func (cl *Client) IssueBatch(ctx context.Context, code string, items []BatchItem) (BatchResults, error) {
	for i := range items {
		if items[i].IdempotencyKey == "" {
			items[i].IdempotencyKey = NewIdempotencyKey()
		}
	}
	body, err := json.Marshal(BatchRequest{Invoices: items})
	if err != nil {
		return BatchResults{}, err
	}
	c := &call{method: http.MethodPost, path: "/v1/series/" + url.PathEscape(code) + "/invoices/batch",
		body: body, mutating: true, accept: "application/json"}
	for attempt := 1; ; attempt++ {
		a, err := cl.do(ctx, c)
		if err != nil {
			return BatchResults{}, err
		}
		var r BatchResults
		if err := decode(a.body, &r); err != nil {
			return BatchResults{}, err
		}
		if len(r.Results) != len(items) {
			return BatchResults{}, fmt.Errorf("invoiced: batch of %d items answered with %d results", len(items), len(r.Results))
		}
		var pending *Error // an item's result that is retried
		unknown := false   // some pending item may have been issued
		for i := range r.Results {
			res := &r.Results[i]
			if res.Invoice != nil {
				res.Invoice.Replayed = res.Replayed
			}
			if e := res.Err(); e != nil && retryable(e) {
				pending = e
				unknown = unknown || mayHaveTakenEffect(e)
			}
		}
		if pending == nil {
			return r, nil
		}
		t := time.NewTimer(cl.backoff(attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			errs := []error{ctx.Err(), pending}
			if unknown {
				return r, &outcomeError{errs: errs}
			}
			return r, errors.Join(errs...)
		case <-t.C:
		}
	}
}
