package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// chaiWorth returns an items member of one line of taxable value price.
func chaiWorth(price string) string {
	return `"items":[{"description":"Masala chai","hsn":"0902","quantity":"1","unit_price":"` + price + `","gst_rate":"5"}]`
}

// pune is an unregistered buyer's address in Maharashtra, the seller's
// state; hoskote an address of delivery in Karnataka.
const (
	pune    = `"address":{"line1":"3 FC Road","line2":"Shivajinagar","city":"Pune","pin":"411004","state":"27"}`
	hoskote = `"ship_to":{"name":"Asha, site office","address":{"line1":"Plot 7, KIADB","city":"Hoskote","pin":"562114","state":"29"}}`
)

// TestRule46ParticularsOverHTTP: a B2B invoice without buyer.address is
// 422 particulars_missing naming buyer.address and Rule 46(d), and takes
// no number; with it the answer, the receipt and the audit exports show
// the address and its state (from the GSTIN). An unregistered ₹60,000
// invoice without the buyer's address and the address of delivery is 422
// naming them and Rule 46(e); with them it is issued and printed; a ₹100
// one needs nothing. The batch route judges each item alike.
func TestRule46ParticularsOverHTTP(t *testing.T) {
	t.Parallel()
	e := setup(t)
	issue := func(body string) resp {
		return e.do("POST", "/v1/series/CH1/invoices", e.all, body)
	}
	refused := func(r resp, want ...string) {
		t.Helper()
		e.wantError(r, http.StatusUnprocessableEntity, "particulars_missing")
		for _, w := range want {
			if !strings.Contains(string(r.body), w) {
				t.Fatalf("refusal %s does not say %q", r.body, w)
			}
		}
	}

	refused(issue(`{"buyer":{"gstin":"`+buyerGSTIN+`","name":"Bengaluru Traders"},"place_of_supply":"29",`+chaiWorth("100")+`}`),
		"buyer.address is required for a registered buyer", "Rule 46(d)")
	b2b := issue(`{"buyer":{"gstin":"` + buyerGSTIN + `","name":"Bengaluru Traders",` + buyerAddress + `},"place_of_supply":"29",` + chaiWorth("100") + `}`)
	e.wantStatus(b2b, http.StatusCreated)
	if inv := e.invoice(b2b); inv.Serial != 1 {
		t.Fatalf("the refused invoice took a number: the next is serial %d", inv.Serial)
	}
	if !strings.Contains(string(b2b.body), `"address":{"line1":"14 Residency Road","city":"Bengaluru","pin":"560025","state":"29"}`) {
		t.Fatalf("answer without the buyer's address and its state: %s", b2b.body)
	}

	refused(issue(`{`+chaiWorth("60000")+`}`), "buyer.name, buyer.address and ship_to are required", "Rule 46(e)", "₹60000.00")
	refused(issue(`{"buyer":{"name":"Asha",`+pune+`},`+chaiWorth("60000")+`}`), "ship_to is required", "Rule 46(e)")
	b2cLarge := issue(`{"buyer":{"name":"Asha",` + pune + `},` + hoskote + `,` + chaiWorth("60000") + `}`)
	e.wantStatus(b2cLarge, http.StatusCreated)
	if !strings.Contains(string(b2cLarge.body), `"ship_to":{"name":"Asha, site office","address":{"line1":"Plot 7, KIADB","city":"Hoskote","pin":"562114","state":"29"}}`) {
		t.Fatalf("answer without the address of delivery: %s", b2cLarge.body)
	}
	e.wantStatus(issue(`{`+chaiWorth("100")+`}`), http.StatusCreated)

	// The receipt prints both addresses with their states.
	for _, c := range []struct {
		r    resp
		want []string
	}{
		{b2b, []string{"Bill to", "14 Residency Road", `Bengaluru</bdi> <span class="num">560025</span>`, "State: 29-Karnataka", `GSTIN <span class="num">` + buyerGSTIN}},
		{b2cLarge, []string{"Bill to", "3 FC Road", "Shivajinagar", `Pune</bdi> <span class="num">411004</span>`, "State: 27-Maharashtra", "Ship to", "Asha, site office", "Plot 7, KIADB", `Hoskote</bdi> <span class="num">562114</span>`, "State: 29-Karnataka"}},
	} {
		for _, paper := range []string{"", "?paper=80mm"} {
			page := e.do("GET", "/r/"+e.invoice(c.r).PublicID+paper, "", "")
			e.wantStatus(page, http.StatusOK)
			for _, w := range c.want {
				if !strings.Contains(string(page.body), w) {
					t.Fatalf("receipt %s%s lacks %q", e.invoice(c.r).Number, paper, w)
				}
			}
		}
	}

	// The audit exports carry them.
	csv := e.do("GET", "/v1/series/CH1/audit?fy=2026-27&format=csv", e.all, "")
	e.wantStatus(csv, http.StatusOK)
	for _, w := range []string{"14 Residency Road, Bengaluru 560025, 29-Karnataka", `"Asha, site office, Plot 7, KIADB, Hoskote 562114, 29-Karnataka"`} {
		if !strings.Contains(string(csv.body), w) {
			t.Fatalf("CSV audit lacks %q:\n%s", w, csv.body)
		}
	}
	var doc struct {
		Rows []struct {
			Serial       int64          `json:"serial"`
			BuyerAddress map[string]any `json:"buyer_address"`
			ShipTo       map[string]any `json:"ship_to"`
		} `json:"rows"`
	}
	js := e.do("GET", "/v1/series/CH1/audit?fy=2026-27&format=json", e.all, "")
	e.wantStatus(js, http.StatusOK)
	if err := json.Unmarshal(js.body, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Rows) != 3 || doc.Rows[0].BuyerAddress["state"] != "29" || doc.Rows[1].ShipTo["city"] != "Hoskote" || doc.Rows[2].BuyerAddress != nil {
		t.Fatalf("JSON audit rows: %s", js.body)
	}

	// The batch route: each item judged alone.
	var batch struct {
		Results []struct {
			Status int `json:"status"`
			Error  *struct {
				Code, Message string
			} `json:"error"`
		} `json:"results"`
	}
	items := []string{
		`{"idempotency_key":"b1","buyer":{"gstin":"` + buyerGSTIN + `","name":"B"},"place_of_supply":"29",` + chaiWorth("100") + `}`,
		`{"idempotency_key":"b2","buyer":{"gstin":"` + buyerGSTIN + `","name":"B",` + buyerAddress + `},"place_of_supply":"29",` + chaiWorth("100") + `}`,
		`{"idempotency_key":"b3",` + chaiWorth("60000") + `}`,
		`{"idempotency_key":"b4","buyer":{"name":"Asha",` + pune + `},` + hoskote + `,` + chaiWorth("60000") + `}`,
		`{"idempotency_key":"b5",` + chaiWorth("100") + `}`,
	}
	r := e.do("POST", "/v1/series/CH1/invoices/batch", e.all, `{"invoices":[`+strings.Join(items, ",")+`]}`)
	e.wantStatus(r, http.StatusOK)
	if err := json.Unmarshal(r.body, &batch); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, res := range batch.Results {
		s := fmt.Sprint(res.Status)
		if res.Error != nil {
			s += " " + res.Error.Code
		}
		got = append(got, s)
	}
	if want := "422 particulars_missing,201,422 particulars_missing,201,201"; strings.Join(got, ",") != want {
		t.Fatalf("batch results %s, want %s:\n%s", strings.Join(got, ","), want, r.body)
	}
}

// TestBuyerDetailsWarn: under serve --buyer-details warn an invoice that
// lacks the particulars is issued, with a Warning header naming the
// field and the rule; a complete one gets no warning.
func TestBuyerDetailsWarn(t *testing.T) {
	t.Parallel()
	e := setup(t, func(c *Config) { c.BuyerDetails = WarnBuyerDetails })
	r := e.do("POST", "/v1/series/CH1/invoices", e.all, `{"buyer":{"gstin":"`+buyerGSTIN+`","name":"B"},"place_of_supply":"29",`+chaiWorth("100")+`}`)
	e.wantStatus(r, http.StatusCreated)
	if w := r.header.Get("Warning"); !strings.HasPrefix(w, `299 invoiced "CH1/26-27/00001: buyer.address is required`) || !strings.Contains(w, "Rule 46(d)") {
		t.Fatalf("Warning %q", w)
	}
	r = e.do("POST", "/v1/series/CH1/invoices/batch", e.all, `{"invoices":[{"idempotency_key":"k1",`+chaiWorth("60000")+`},{"idempotency_key":"k2",`+chaiWorth("10")+`}]}`)
	e.wantStatus(r, http.StatusOK)
	if w := r.header.Values("Warning"); len(w) != 1 || !strings.Contains(w[0], "CH1/26-27/00002: buyer.name, buyer.address and ship_to are required") {
		t.Fatalf("batch Warning %q", w)
	}
	r = e.do("POST", "/v1/series/CH1/invoices", e.all, issueJSON(""))
	e.wantStatus(r, http.StatusCreated)
	if w := r.header.Get("Warning"); w != "" {
		t.Fatalf("a complete invoice is warned: %q", w)
	}
}
