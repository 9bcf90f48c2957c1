package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/document"
)

// A receipt link resolves in both forms: the routed id issued now and the
// 26-character id issued before it, which keeps working forever.
func TestReceiptLinksOfBothForms(t *testing.T) {
	t.Parallel()
	e := setup(t)
	routed := e.mustIssue("CH1", "2026-11-29")
	if route, ok := document.ParsePublicID(routed.PublicID); !ok || route.SellerID != e.seller.ID {
		t.Fatalf("issued public id %q is not routed to seller %d", routed.PublicID, e.seller.ID)
	}
	old := e.mustIssue("CH1", "2026-11-29")
	const legacy = "k7vq2mzx3ahd4n5rbtcw6yepsg"
	if _, err := e.pool.Exec(t.Context(), `UPDATE invoices SET public_id = $1 WHERE number = $2`, legacy, old.Number); err != nil {
		t.Fatal(err)
	}
	for id, number := range map[string]string{routed.PublicID: routed.Number, legacy: old.Number} {
		page := e.do("GET", "/r/"+id, "", "")
		e.wantStatus(page, http.StatusOK)
		if !strings.Contains(string(page.body), `<strong class="num" id="number">`+number+"</strong>") {
			t.Fatalf("/r/%s does not show %s:\n%s", id, number, page.body)
		}
	}
	// The API names the legacy id as stored.
	r := e.do("GET", "/v1/invoices/"+old.ID, e.read, "")
	e.wantStatus(r, http.StatusOK)
	if !strings.Contains(string(r.body), `"public_id":"`+legacy+`","receipt_url":"/r/`+legacy+`"`) {
		t.Fatalf("legacy invoice renders %s", r.body)
	}
	// The same time and random bits under another seller's id are no link.
	_, random, _ := strings.Cut(routed.PublicID, "-")
	other := document.NewPublicID(e.seller.ID+1, testNow)
	e.wantStatus(e.do("GET", "/r/"+routed.PublicID[:10]+other[10:strings.IndexByte(other, '-')+1]+random, "", ""), http.StatusNotFound)
}

// A malformed id is a 404 page without a lookup, so it spends none of the
// address's failure tokens; a well-formed unknown id of either form is
// looked up and spends one.
func TestMalformedReceiptIDsAreNotLookedUp(t *testing.T) {
	t.Parallel()
	const burst = 10
	e := setup(t, func(c *Config) { c.FailureBurst = burst }) // the clock stands still: no refill
	routed := e.mustIssue("CH1", "2026-11-29").PublicID
	malformed := []string{"nope", strings.ToUpper(routed), "8" + routed[1:], routed + "0", strings.Replace(routed, "-", "_", 1),
		strings.Replace(routed, "-", "", 1), routed[:len(routed)-1] + "u",
		strings.Repeat("a", 25), strings.Repeat("A", 26), strings.Repeat("8", 26)}
	for range 5 {
		for _, id := range malformed {
			r := e.do("GET", "/r/"+id, "", "")
			if r.status != http.StatusNotFound || !strings.Contains(string(r.body), "Receipt not found") {
				t.Fatalf("malformed %q: %d %s", id, r.status, r.body)
			}
		}
	}
	statuses := map[int]int{}
	for i := range 2 * burst {
		id := strings.Repeat("a", 26)
		if i%2 == 1 {
			id = document.NewPublicID(e.seller.ID, testNow)
		}
		statuses[e.do("GET", "/r/"+id, "", "").status]++
	}
	if statuses[http.StatusNotFound] != burst || statuses[http.StatusTooManyRequests] != burst {
		t.Fatalf("%d unknown well-formed ids after %d malformed ones: %v; want %d not found, then rate limited",
			2*burst, 5*len(malformed), statuses, burst)
	}
}
