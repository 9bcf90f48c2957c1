package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// bigInvoices issues n invoices of 250 lines each (about 52 KB of JSON
// an answer) in CH1 through the batch route.
func (e *env) bigInvoices(n int) {
	e.t.Helper()
	line := `{"description":"Darjeeling first flush, 250 g tin, lot 2026-11","hsn":"0902","quantity":"1","unit_price":"10.00","gst_rate":"5"}`
	items := strings.Repeat(line+",", 249) + line
	var b strings.Builder
	b.WriteString(`{"invoices":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"idempotency_key":"big-%d","items":[%s]}`, i, items)
	}
	b.WriteString(`]}`)
	r := e.do("POST", "/v1/series/CH1/invoices/batch", e.issue, b.String())
	e.wantStatus(r, http.StatusOK)
	if strings.Count(string(r.body), `"status":201`) != n {
		e.t.Fatalf("batch: %.300s", r.body)
	}
}

// A list page stops at 4 MiB of invoices, whatever limit asked for, and
// says where to go on: the pages together hold every invoice once, in
// serial order.
func TestListPagesStopAtTheirBytes(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.WebhookAllowPrivate = true })
	e.registerWebhook("http://127.0.0.1:9/hook", "invoice.issued")
	const n = 100 // 5.2 MB of answers
	e.bigInvoices(n)

	var serials []int64
	cursor := ""
	for pages := 0; ; pages++ {
		r := e.do("GET", "/v1/series/CH1/invoices?limit=1000"+cursor, e.read, "")
		e.wantStatus(r, http.StatusOK)
		if len(r.body) > listPageBytes+200<<10 {
			t.Fatalf("a page of %d bytes, more than the bound and an invoice", len(r.body))
		}
		var page struct {
			Invoices   []invoiceOut `json:"invoices"`
			NextCursor *string      `json:"next_cursor"`
		}
		if err := json.Unmarshal(r.body, &page); err != nil {
			t.Fatal(err)
		}
		for _, inv := range page.Invoices {
			serials = append(serials, inv.Serial)
		}
		if page.NextCursor == nil {
			if pages == 0 {
				t.Fatalf("all the %d invoices came in one page of %d bytes", len(page.Invoices), len(r.body))
			}
			break
		}
		cursor = "&cursor=" + *page.NextCursor
	}
	for i, s := range serials {
		if s != int64(i+1) {
			t.Fatalf("the pages list serials %v, want 1..%d once each", serials, n)
		}
	}
	if len(serials) != n {
		t.Fatalf("the pages list %d invoices, want %d", len(serials), n)
	}

	// The events go by pages of 4 MiB too, next_after naming the last
	// event while more follow.
	var events []string
	after := ""
	for {
		r := e.do("GET", "/v1/events?limit=1000"+after, e.read, "")
		e.wantStatus(r, http.StatusOK)
		if len(r.body) > listPageBytes+200<<10 {
			t.Fatalf("a page of events of %d bytes", len(r.body))
		}
		var page eventListJSON
		if err := json.Unmarshal(r.body, &page); err != nil {
			t.Fatal(err)
		}
		for _, ev := range page.Events {
			events = append(events, ev.ID)
		}
		if page.NextAfter == nil {
			break
		}
		if *page.NextAfter != page.Events[len(page.Events)-1].ID {
			t.Fatalf("next_after %s, the page ends at %s", *page.NextAfter, page.Events[len(page.Events)-1].ID)
		}
		after = "&after=" + *page.NextAfter
	}
	if len(events) != n || events[0] != "CH1-2026-1.issued" || events[n-1] != fmt.Sprintf("CH1-2026-%d.issued", n) {
		t.Fatalf("the pages list events %v, want CH1-2026-1..%d.issued", events, n)
	}
	if e.srv.bytes.Held() != 0 {
		t.Fatalf("%d bytes still held after the lists", e.srv.bytes.Held())
	}
}

// A page counts to its limit as before: limit invoices and a cursor when
// there are more, none on the last page.
func TestListPageLimitAndCursor(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for range 5 {
		e.mustIssue("CH1", "")
	}
	r := e.do("GET", "/v1/series/CH1/invoices?limit=2", e.read, "")
	e.wantStatus(r, http.StatusOK)
	var page invoiceListJSON
	if err := json.Unmarshal(r.body, &page); err != nil || len(page.Invoices) != 2 || page.NextCursor == nil {
		t.Fatalf("page %s: %v", r.body, err)
	}
	r = e.do("GET", "/v1/series/CH1/invoices?limit=3&cursor="+*page.NextCursor, e.read, "")
	if err := json.Unmarshal(r.body, &page); err != nil || len(page.Invoices) != 3 || page.NextCursor != nil || page.Invoices[0].Serial != 3 {
		t.Fatalf("last page %s: %v", r.body, err)
	}
}

// A list waits for a free slot, up to its wait, and is then refused with
// 429 too_many_reads; a slot given back lets a waiting list in at once.
func TestListSlotsWaitThenRefuse(t *testing.T) {
	t.Parallel()
	slots := newListSlots(2, 1)
	slots.wait = 200 * time.Millisecond
	ctx := t.Context()
	held, err := slots.acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	other, err := slots.acquire(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if _, err := slots.acquire(ctx, 3); !errors.Is(err, errTooManyReads) || time.Since(began) < slots.wait {
		t.Fatalf("all slots taken: %v after %v, want too_many_reads after %v", err, time.Since(began), slots.wait)
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		held()
	}()
	began = time.Now()
	again, err := slots.acquire(ctx, 1)
	if err != nil || time.Since(began) >= slots.wait {
		t.Fatalf("a slot given back: %v after %v", err, time.Since(began))
	}
	held() // a second call gives nothing back
	again()
	other()
	if slots.total != 0 || len(slots.perSeller) != 0 {
		t.Fatalf("slots left taken: %d, %v", slots.total, slots.perSeller)
	}
	if _, err := slots.acquire(ctx, 1); errors.Is(err, errTooManyReads) {
		t.Fatal("refused with every slot free")
	}
}

// The lists take a list slot of the expensive-read budget: with the
// seller's slots held, a list waits, then gets 429 too_many_reads; another
// seller's list is not affected, and once a slot is free the list answers.
func TestListsTakeAListSlot(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.MaxListReadsPerSeller = 1 })
	e.mustIssue("CH1", "")
	release, err := e.srv.ExpensiveRead(t.Context(), ClassAPIList, e.seller.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/v1/series/CH1/invoices", "/v1/events"} {
		began := time.Now()
		e.wantError(e.do("GET", path, e.read, ""), http.StatusTooManyRequests, "too_many_reads")
		if took := time.Since(began); took < listSlotWait {
			t.Errorf("GET %s refused after %v, before waiting %v", path, took, listSlotWait)
		}
	}
	release()
	e.wantStatus(e.do("GET", "/v1/series/CH1/invoices", e.read, ""), http.StatusOK)
}
