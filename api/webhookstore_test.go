package api

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/testfactory"
)

// Workers claiming at once (of one process or several) share the due
// deliveries of many sellers: while its lease lasts each delivery is
// claimed by exactly one of them, and together they claim every one,
// though each claim takes at most a few sellers' deliveries (on Citus each
// seller's claim is a statement on that seller's shard alone).
func TestDeliveryClaimsShareEverySellerOnce(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.WebhookAllowPrivate = true })
	const sellers, each = 6, 9
	keys := []string{e.all}
	for i := 1; i < sellers; i++ {
		first14 := fmt.Sprintf("27AAPFU%04dF1Z", i)
		check, err := gst.CheckChar(first14)
		if err != nil {
			t.Fatal(err)
		}
		s := testfactory.Seller(t, e.pool, &testfactory.SellerOpts{GSTIN: first14 + string(check)})
		testfactory.Series(t, e.pool, s, nil)
		keys = append(keys, mustKey(t, e.pool, s.ID, apikey.ScopeIssue, apikey.ScopeRead, apikey.ScopeManage))
	}
	for _, k := range keys {
		e.wantStatus(e.do("POST", "/v1/webhooks", k, `{"url":"http://127.0.0.1:9/never","events":["invoice.issued"]}`), 201)
		for i := range each {
			e.wantStatus(e.do("POST", "/v1/series/CH1/invoices", k, issueJSON(""), "Idempotency-Key", fmt.Sprint(i)), 201)
		}
	}

	type key struct{ seller, event, webhook int64 }
	var mu sync.Mutex
	claimed := map[key]int{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				ds, err := claimDeliveries(context.Background(), e.pool, 4, time.Hour)
				if err != nil {
					t.Error(err)
					return
				}
				if len(ds) == 0 {
					return
				}
				mu.Lock()
				for _, d := range ds {
					if d.ev.invoice.SellerID != d.sellerID {
						t.Errorf("delivery of seller %d carries an invoice of seller %d", d.sellerID, d.ev.invoice.SellerID)
					}
					claimed[key{d.sellerID, d.eventID, d.webhookID}]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	perSeller := map[int64]int{}
	for k, n := range claimed {
		if n != 1 {
			t.Errorf("delivery %+v claimed %d times within its lease", k, n)
		}
		perSeller[k.seller]++
	}
	if len(claimed) != sellers*each || len(perSeller) != sellers {
		t.Fatalf("claimed %d deliveries of %d sellers, want %d of %d", len(claimed), len(perSeller), sellers*each, sellers)
	}
	var due int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM webhook_deliveries WHERE next_at <= now()`).Scan(&due); err != nil || due != 0 {
		t.Fatalf("%d deliveries still due after the claims (%v)", due, err)
	}
}
