package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/invoiced/invoiced/apikey"
)

// batchItemJSON returns an item of a batch: issueJSON(date) with key.
func batchItemJSON(key, date string) string {
	return `{"idempotency_key":"` + key + `",` + strings.TrimPrefix(issueJSON(date), "{")
}

// badItemJSON returns an item refused for its content (quantity -1).
func badItemJSON(key string) string {
	return `{"idempotency_key":"` + key + `","items":[{"description":"Chai","hsn":"0902","quantity":"-1","unit_price":"10.00","gst_rate":"5"}]}`
}

func batchJSON(items []string) string { return `{"invoices":[` + strings.Join(items, ",") + `]}` }

type batchOut struct {
	Results []struct {
		Status   int         `json:"status"`
		Replayed bool        `json:"replayed"`
		Invoice  *invoiceOut `json:"invoice"`
		Error    *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	} `json:"results"`
}

func (e *env) batch(r resp) batchOut {
	e.t.Helper()
	e.wantStatus(r, http.StatusOK)
	var out batchOut
	if err := json.Unmarshal(r.body, &out); err != nil {
		e.t.Fatalf("decode batch %.300s: %v", r.body, err)
	}
	return out
}

// invoiceCount returns how many invoices the series CH1 holds and its
// highest serial.
func (e *env) invoiceCount() (n, top int64) {
	e.t.Helper()
	err := e.pool.QueryRow(e.t.Context(), `SELECT count(*), coalesce(max(serial), 0) FROM invoices i JOIN series s ON s.id = i.series_id AND s.seller_id = $1
		WHERE s.code = 'CH1' AND i.seller_id = $1`, e.seller.ID).Scan(&n, &top)
	if err != nil {
		e.t.Fatal(err)
	}
	return n, top
}

// A batch with refused items in it: the valid items take serials 1..n in
// request order, each refused item is answered alone and takes no number,
// and the same batch sent again replays every issued item, byte for byte.
func TestBatchIssuesValidItemsInOrderAndReplays(t *testing.T) {
	t.Parallel()
	for _, plain := range []bool{false, true} {
		t.Run(map[bool]string{false: "pool", true: "plain"}[plain], func(t *testing.T) {
			t.Parallel()
			var opts []func(*Config)
			if plain {
				opts = append(opts, plainCommitter(t))
			}
			e := setup(t, opts...)
			var items []string
			bad := map[int]bool{3: true, 7: true, 11: true}
			for i := range 12 {
				if bad[i] {
					items = append(items, badItemJSON(fmt.Sprintf("k%d", i)))
				} else {
					items = append(items, batchItemJSON(fmt.Sprintf("k%d", i), ""))
				}
			}
			first := e.do("POST", "/v1/series/CH1/invoices/batch", e.issue, batchJSON(items))
			out := e.batch(first)
			if len(out.Results) != len(items) {
				t.Fatalf("%d results for %d items", len(out.Results), len(items))
			}
			want := int64(1)
			for i, r := range out.Results {
				if bad[i] {
					if r.Status != http.StatusUnprocessableEntity || r.Error == nil || r.Error.Code != "invalid_invoice" || r.Invoice != nil {
						t.Fatalf("item %d: %+v, want a 422 invalid_invoice", i, r)
					}
					continue
				}
				if r.Status != http.StatusCreated || r.Replayed || r.Invoice == nil || r.Error != nil {
					t.Fatalf("item %d: %+v, want 201", i, r)
				}
				if r.Invoice.Serial != want {
					t.Fatalf("item %d has serial %d, want %d (request order, no gaps)", i, r.Invoice.Serial, want)
				}
				want++
			}
			if n, top := e.invoiceCount(); n != 9 || top != 9 {
				t.Fatalf("%d invoices up to serial %d, want 9 up to 9", n, top)
			}
			again := e.batch(e.do("POST", "/v1/series/CH1/invoices/batch", e.issue, batchJSON(items)))
			for i, r := range again.Results {
				if bad[i] {
					if r.Status != http.StatusUnprocessableEntity {
						t.Fatalf("retried item %d: %+v", i, r)
					}
					continue
				}
				if r.Status != http.StatusCreated || !r.Replayed || *r.Invoice != *out.Results[i].Invoice {
					t.Fatalf("retried item %d: %+v, want a replay of %+v", i, r, out.Results[i].Invoice)
				}
			}
			if n, _ := e.invoiceCount(); n != 9 {
				t.Fatalf("the replayed batch issued: %d invoices", n)
			}
			// The next invoice follows without a gap.
			if inv := e.mustIssue("CH1", ""); inv.Serial != 10 {
				t.Fatalf("next serial %d, want 10", inv.Serial)
			}
			// An item's key is bound to its body: another body is
			// key_reused for that item alone.
			items[0] = batchItemJSON("k0", "2026-11-28")
			items = append(items, batchItemJSON("fresh", ""))
			mixed := e.batch(e.do("POST", "/v1/series/CH1/invoices/batch", e.issue, batchJSON(items)))
			if r := mixed.Results[0]; r.Status != http.StatusUnprocessableEntity || r.Error.Code != "idempotency_key_reused" {
				t.Fatalf("item 0 with another body: %+v", r)
			}
			if r := mixed.Results[1]; !r.Replayed {
				t.Fatalf("item 1: %+v, want a replay", r)
			}
			if r := mixed.Results[12]; r.Status != http.StatusCreated || r.Replayed || r.Invoice.Serial != 11 {
				t.Fatalf("fresh item: %+v, want serial 11", r)
			}
		})
	}
}

// While single requests keep issuing into the same series, a batch's
// items still take consecutive serials (one transaction, one hold of the
// counter row), and the series stays gap-free.
func TestBatchIsConsecutiveAmongConcurrentSingles(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const size = 500
	bodyOf := func(b int) string {
		items := make([]string, size)
		for i := range items {
			items[i] = batchItemJSON(fmt.Sprintf("b%d-%d", b, i), "")
		}
		return batchJSON(items)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	singles := 0
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				r := e.do("POST", "/v1/series/CH1/invoices", e.issue, issueJSON(""))
				if r.status != http.StatusCreated {
					t.Errorf("single: %d %s", r.status, r.body)
					return
				}
				mu.Lock()
				singles++
				mu.Unlock()
			}
		})
	}
	var batches []batchOut
	for b := range 3 {
		batches = append(batches, e.batch(e.do("POST", "/v1/series/CH1/invoices/batch", e.issue, bodyOf(b))))
	}
	close(stop)
	wg.Wait()
	for b, out := range batches {
		first := out.Results[0].Invoice.Serial
		for i, r := range out.Results {
			if r.Status != http.StatusCreated || r.Replayed || r.Invoice.Serial != first+int64(i) {
				t.Fatalf("batch %d item %d: status %d serial %d, want serial %d", b, i, r.Status, r.Invoice.Serial, first+int64(i))
			}
		}
	}
	if n, top := e.invoiceCount(); n != int64(3*size+singles) || top != n {
		t.Fatalf("%d invoices up to serial %d, want %d without gaps", n, top, 3*size+singles)
	}
}

// A malformed envelope is refused whole, with no number taken.
func TestBatchEnvelopeIsRefusedWhole(t *testing.T) {
	t.Parallel()
	e := setup(t)
	many := make([]string, maxBatchInvoices+1)
	for i := range many {
		many[i] = batchItemJSON(fmt.Sprintf("m%d", i), "")
	}
	good := batchItemJSON("g", "")
	for name, body := range map[string]string{
		"array":         `[` + good + `]`,
		"string":        `"invoices"`,
		"no invoices":   `{}`,
		"null invoices": `{"invoices":null}`,
		"empty":         `{"invoices":[]}`,
		"too many":      batchJSON(many),
		"item no key":   batchJSON([]string{good, issueJSON("")}),
		"item key null": batchJSON([]string{good, `{"idempotency_key":null,` + strings.TrimPrefix(issueJSON(""), "{")}),
		"item key num":  batchJSON([]string{good, `{"idempotency_key":7,` + strings.TrimPrefix(issueJSON(""), "{")}),
		"item key ctrl": batchJSON([]string{good, batchItemJSON(`a\u0001b`, "")}),
		"item key long": batchJSON([]string{good, batchItemJSON(strings.Repeat("k", 256), "")}),
		"item array":    batchJSON([]string{good, `[]`}),
		"same key":      batchJSON([]string{good, good}),
	} {
		r := e.do("POST", "/v1/series/CH1/invoices/batch", e.issue, body)
		if r.status != http.StatusUnprocessableEntity {
			t.Errorf("%s: status %d, want 422; %s", name, r.status, r.body)
			continue
		}
		e.wantError(r, http.StatusUnprocessableEntity, "invalid_batch")
	}
	e.wantError(e.do("POST", "/v1/series/CH1/invoices/batch", e.issue, `{"invoices":[`), http.StatusBadRequest, "malformed_json")
	e.wantError(e.do("POST", "/v1/series/CH1/invoices/batch", e.issue, `{"invoices":[],"x":1}`), http.StatusBadRequest, "unknown_field")
	e.wantError(e.do("POST", "/v1/series/CH1/invoices/batch", e.read, batchJSON([]string{good})), http.StatusForbidden, "forbidden")
	e.wantError(e.do("POST", "/v1/series/NOPE/invoices/batch", e.issue, batchJSON([]string{good})), http.StatusNotFound, "series_not_found")
	if n, _ := e.invoiceCount(); n != 0 {
		t.Fatalf("refused batches issued %d invoices", n)
	}
	// An item's own fields are judged alone.
	out := e.batch(e.do("POST", "/v1/series/CH1/invoices/batch", e.issue,
		batchJSON([]string{good, `{"idempotency_key":"u","nope":1}`, `{"idempotency_key":"v","items":[{"quantity":2}]}`})))
	if out.Results[0].Status != 201 || out.Results[1].Error.Code != "unknown_field" || out.Results[2].Status != 422 {
		t.Fatalf("item results: %+v", out.Results)
	}
}

// TestBatchItemsAreCheckedAsSingleInvoices: a batch is held to what the
// single route checks: the key's series (403 for the whole request), a
// note's original and the body limit; a refused item takes no number.
func TestBatchItemsAreCheckedAsSingleInvoices(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	e.createSeries("CH2", "invoice", "CH2/{FY}/{SEQ:5}")
	term, err := apikey.CreateForSeries(ctx, e.pool, e.seller.ID, []string{apikey.ScopeIssue, apikey.ScopeRead}, []string{"CH2"})
	if err != nil {
		t.Fatal(err)
	}
	e.wantError(e.do("POST", "/v1/series/CH1/invoices/batch", term, batchJSON([]string{batchItemJSON("t1", "")})), http.StatusForbidden, "series_forbidden")
	if n, _ := e.invoiceCount(); n != 0 {
		t.Fatalf("a forbidden batch issued %d invoices", n)
	}

	e.createSeries("CN", "credit_note", "CN/{FY}/{SEQ:4}")
	item := `"items":[{"description":"Refund","hsn":"0902","quantity":"1","unit_price":"10","gst_rate":"5"}]`
	out := e.batch(e.do("POST", "/v1/series/CN/invoices/batch", e.issue, batchJSON([]string{
		`{"idempotency_key":"n1","original":{"number":"XX/99/1","invoice_date":"2026-11-20"},` + item + `}`,
	})))
	if len(out.Results) != 1 || out.Results[0].Status != 422 || out.Results[0].Error.Code != "original_not_found" {
		t.Fatalf("a note naming no original: %+v", out.Results)
	}
	var notes int
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM invoices i JOIN series s ON s.id = i.series_id AND s.seller_id = $1
		WHERE s.code = 'CN' AND i.seller_id = $1`, e.seller.ID).Scan(&notes); err != nil || notes != 0 {
		t.Fatalf("the refused note left %d invoices (%v)", notes, err)
	}

	big := batchJSON([]string{`{"idempotency_key":"b1","buyer":{"name":"` + strings.Repeat("x", batchBodyMax) + `"},` + item + `}`})
	e.wantError(e.do("POST", "/v1/series/CH1/invoices/batch", e.issue, big), http.StatusRequestEntityTooLarge, "body_too_large")
}
