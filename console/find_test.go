package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/apikey"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/series"
)

// issueIn issues one invoice dated date (YYYY-MM-DD) in series s of f's
// seller and returns it.
func issueIn(t *testing.T, f *fixture, s gst.Series, date string) document.Invoice {
	t.Helper()
	d, _ := time.Parse(time.DateOnly, date)
	req := document.Request{InvoiceDate: d, Items: []document.ItemInput{
		{Description: "Cutting chai", HSN: "0902", Quantity: "1", UnitPrice: "20", GSTRate: "5"}}}
	draft, err := document.Prepare(req, f.seller, s, start, document.Policy{BackdateDays: 400})
	if err != nil {
		t.Fatal(err)
	}
	inv, err := invoice.Issue(t.Context(), f.pool, f.seller, s, draft, start, series.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

// The top bar finds an invoice by its number in every series and year:
// one invoice opens its row on its series-year page, a number a format
// without the year repeats lists each, and a number searched on another
// series' page says where it is. Before, only a series-year page searched,
// and CH1/26-27/00001 searched on the DEMO page said "no invoice".
func TestFindInvoiceAcrossSeries(t *testing.T) {
	t.Parallel()
	f := setup(t)
	demo := testfactory.Series(t, f.pool, f.seller, &testfactory.SeriesOpts{Code: "DEMO", Format: "D{SEQ:4}"})
	old := issueIn(t, f, demo, "2026-03-20") // D0001 of 2025-26
	issueIn(t, f, demo, "2026-11-20")        // D0001 of 2026-27
	c := client(t)
	startSession(t, f, c, f.read)

	if p := get(t, c, f.url+"/console/"); !strings.Contains(p.body, `action="/console/find"`) {
		t.Fatalf("the top bar has no search: %.600s", p.body)
	}
	p := get(t, c, f.url+"/console/find?number="+url.QueryEscape("ch1/26-27/00003 "))
	if want := "/console/series/CH1/2026-27?number=CH1%2F26-27%2F00003"; p.status != http.StatusSeeOther || p.location != want {
		t.Fatalf("find CH1/26-27/00003: %d to %q, want %q", p.status, p.location, want)
	}
	if p := get(t, c, f.url+p.location); !strings.Contains(p.body, `data-number="CH1/26-27/00003"`) {
		t.Fatalf("the found row is not shown: %.300s", p.body)
	}
	p = get(t, c, f.url+"/console/find?number=D0001")
	if p.status != http.StatusOK || !strings.Contains(p.body, "2 invoices are numbered D0001") ||
		!strings.Contains(p.body, `href="/console/series/DEMO/2025-26?number=D0001"`) || !strings.Contains(p.body, "dated "+old.InvoiceDate.Format("2 Jan 2006")) {
		t.Fatalf("find D0001 (two years): %d %.1500s", p.status, p.body)
	}
	p = get(t, c, f.url+"/console/find?number=CH1/26-27/00099")
	if p.status != http.StatusNotFound || !strings.Contains(p.body, "No invoice numbered CH1/26-27/00099 in any series or year") {
		t.Fatalf("find a number not issued: %d %.300s", p.status, p.body)
	}
	for _, bad := range []string{"", "%20", strings.Repeat("A", 17)} {
		if p := get(t, c, f.url+"/console/find?number="+bad); p.status != http.StatusUnprocessableEntity || !strings.Contains(p.body, "Type an invoice number") {
			t.Errorf("find %q: %d %.300s", bad, p.status, p.body)
		}
	}
	// On the DEMO page, a CH1 number is found where it is.
	p = get(t, c, f.url+"/console/series/DEMO/2026-27?number="+url.QueryEscape("CH1/26-27/00001"))
	if !strings.Contains(p.body, "No invoice numbered CH1/26-27/00001 in DEMO 2026-27. It is in") ||
		!strings.Contains(p.body, `href="/console/series/CH1/2026-27?number=CH1%2f26-27%2f00001"`) {
		i := max(strings.Index(p.body, `id="no-rows"`), 0)
		t.Fatalf("a CH1 number on the DEMO page: %d %.400s", p.status, p.body[i:])
	}

	// A key without read neither sees the search nor may use it.
	issueOnly, err := apikey.Create(t.Context(), f.pool, f.seller.ID, []string{apikey.ScopeIssue})
	if err != nil {
		t.Fatal(err)
	}
	o := client(t)
	startSession(t, f, o, issueOnly)
	if p := get(t, o, f.url+"/console/find?number=CH1/26-27/00003"); p.status != http.StatusForbidden || strings.Contains(p.body, `action="/console/find"`) {
		t.Errorf("issue-only key: find answered %d (search form shown: %v)", p.status, strings.Contains(p.body, `action="/console/find"`))
	}
}
