package document_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/testfactory"
)

var (
	seller = gst.Seller{ID: 1, GSTIN: "27AAPFU0939F1ZV", Name: "Pune Chai Co", StateCode: "27"}
	// 2026-11-29 08:50 IST
	now = time.Date(2026, 11, 29, 3, 20, 0, 0, time.UTC)
)

func mustSeries(t testing.TB, docType, format string) gst.Series {
	t.Helper()
	f, err := gst.ParseFormat(format)
	if err != nil {
		t.Fatal(err)
	}
	dt, err := gst.ParseDocType(docType)
	if err != nil {
		t.Fatal(err)
	}
	return gst.Series{ID: 1, SellerID: 1, Code: "CH1", DocType: dt, Format: f}
}

// chai returns a line of masala chai.
var chai = testfactory.Chai

func TestPrepareComputesTotals(t *testing.T) {
	t.Parallel()
	s := mustSeries(t, "invoice", "CH1/{FY}/{SEQ:5}")
	for _, c := range []struct {
		name                             string
		pos                              string
		items                            []document.ItemInput
		taxable, cgst, sgst, igst, total string
	}{
		{"intra-state splits CGST and SGST", "", []document.ItemInput{chai("2", "10.00", "5")}, "20.00", "0.50", "0.50", "0.00", "21.00"},
		{"inter-state is IGST", "29", []document.ItemInput{chai("2", "10.00", "5")}, "20.00", "0.00", "0.00", "1.00", "21.00"},
		// 3 × 0.35 = 1.05 taxable; 5% → 0.0525 → halves 0.02625 → 0.03 each (half-up)
		{"half-up to the paisa per line", "", []document.ItemInput{chai("3", "0.35", "5")}, "1.05", "0.03", "0.03", "0.00", "1.11"},
		// 0.333 × 1.5 = 0.4995 → 0.50
		{"taxable rounds half-up", "", []document.ItemInput{chai("0.333", "1.5", "0")}, "0.50", "0.00", "0.00", "0.00", "0.50"},
		{"sums lines", "", []document.ItemInput{chai("1", "100", "18"), chai("2", "50.50", "12")}, "201.00", "15.06", "15.06", "0.00", "231.12"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := document.Prepare(document.Request{PlaceOfSupply: c.pos, Items: c.items}, seller, s, now, document.Policy{})
			if err != nil {
				t.Fatal(err)
			}
			got := []string{d.Totals.Taxable.StringFixed(2), d.Totals.CGST.StringFixed(2), d.Totals.SGST.StringFixed(2), d.Totals.IGST.StringFixed(2), d.Totals.Total.StringFixed(2)}
			want := []string{c.taxable, c.cgst, c.sgst, c.igst, c.total}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("totals %v, want %v", got, want)
			}
			if !d.InvoiceDate.Equal(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)) {
				t.Fatalf("default date %v, want today in IST", d.InvoiceDate)
			}
		})
	}
}

func TestPrepareRefusesBadInput(t *testing.T) {
	t.Parallel()
	s := mustSeries(t, "invoice", "CH1/{FY}/{SEQ:5}")
	cn := mustSeries(t, "credit_note", "CN/{FY}/{SEQ:5}")
	day := func(s string) time.Time { d, _ := time.Parse(time.DateOnly, s); return d }
	ok := []document.ItemInput{chai("1", "10", "5")}
	many := make([]document.ItemInput, document.MaxItems+1)
	for i := range many {
		many[i] = chai("1", "1", "5")
	}
	for _, c := range []struct {
		name string
		s    gst.Series
		req  document.Request
		p    document.Policy
		want error
		msg  string
	}{
		{"no items", s, document.Request{}, document.Policy{}, document.ErrInvalid, "at least one item"},
		{"too many items", s, document.Request{Items: many}, document.Policy{}, document.ErrInvalid, "at most 250"},
		{"zero quantity", s, document.Request{Items: []document.ItemInput{chai("0", "1", "5")}}, document.Policy{}, document.ErrInvalid, "items[0].quantity"},
		{"negative quantity", s, document.Request{Items: []document.ItemInput{chai("-1", "1", "5")}}, document.Policy{}, document.ErrInvalid, "quantity"},
		{"exponent", s, document.Request{Items: []document.ItemInput{chai("1e3", "1", "5")}}, document.Policy{}, document.ErrInvalid, "decimal string"},
		{"30 decimals", s, document.Request{Items: []document.ItemInput{chai("1", "0.123456789012345678901234567890", "5")}}, document.Policy{}, document.ErrInvalid, "decimal places"},
		{"not a GST rate", s, document.Request{Items: []document.ItemInput{chai("1", "1", "7")}}, document.Policy{}, document.ErrInvalid, "gst_rate"},
		{"bad HSN", s, document.Request{Items: []document.ItemInput{{Description: "x", HSN: "09 2", Quantity: "1", UnitPrice: "1", GSTRate: "5"}}}, document.Policy{}, document.ErrInvalid, "hsn"},
		{"empty description", s, document.Request{Items: []document.ItemInput{{HSN: "0902", Quantity: "1", UnitPrice: "1", GSTRate: "5"}}}, document.Policy{}, document.ErrInvalid, "description"},
		{"bad place of supply", s, document.Request{PlaceOfSupply: "40", Items: ok}, document.Policy{}, document.ErrInvalid, "place_of_supply"},
		{"bad buyer GSTIN", s, document.Request{Buyer: &document.Buyer{GSTIN: "01AABCE2207R1Z5", Name: "X"}, Items: ok}, document.Policy{}, gst.ErrInvalidGSTIN, "buyer.gstin"},
		{"future date", s, document.Request{InvoiceDate: day("2026-11-30"), Items: ok}, document.Policy{}, gst.ErrInvalidDate, "future"},
		{"too far back", s, document.Request{InvoiceDate: day("2026-11-26"), Items: ok}, document.Policy{BackdateDays: 2}, gst.ErrInvalidDate, "more than 2 days"},
		{"note without original", cn, document.Request{Items: ok}, document.Policy{}, document.ErrInvalid, "original"},
		{"buyer is the seller", s, document.Request{Buyer: &document.Buyer{GSTIN: "27aapfu0939f1zv", Name: "Self"}, Items: ok}, document.Policy{}, document.ErrInvalid, "seller's own GSTIN"},
		{"external original, reason of spaces", cn, document.Request{Items: ok, Original: &document.Original{Number: "OLD/1", InvoiceDate: day("2026-11-01"), ExternalReason: "   "}}, document.Policy{}, document.ErrInvalid, "original.reason"},
		{"external original, control characters", cn, document.Request{Items: ok, Original: &document.Original{Number: "OLD/1", InvoiceDate: day("2026-11-01"), ExternalReason: "Tally\x00"}}, document.Policy{}, document.ErrInvalid, "original.reason"},
		{"original on an invoice", s, document.Request{Items: ok, Original: &document.Original{Number: "CH1/26-27/00001", InvoiceDate: day("2026-11-01")}}, document.Policy{}, document.ErrInvalid, "original"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := document.Prepare(c.req, seller, c.s, now, c.p)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("got %v, want %v containing %q", err, c.want, c.msg)
			}
		})
	}
	// Backdating within the policy is fine.
	if _, err := document.Prepare(document.Request{InvoiceDate: day("2026-11-27"), Items: ok}, seller, s, now, document.Policy{BackdateDays: 2}); err != nil {
		t.Fatalf("within backdate window: %v", err)
	}
	if _, err := document.Prepare(document.Request{Items: ok, Original: &document.Original{Number: "ch1/26-27/00001", InvoiceDate: day("2026-11-01")}}, seller, cn, now, document.Policy{}); err != nil {
		t.Fatalf("credit note with original: %v", err)
	}
}

func TestCanonicalRecord(t *testing.T) {
	t.Parallel()
	inv := document.Invoice{
		SeriesCode: "CH1", DocType: "invoice", FY: 2026, Serial: 1, Number: "CH1/26-27/00001",
		InvoiceDate: time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC), IssuedAt: now, PlaceOfSupply: "27",
	}
	d, err := document.Prepare(document.Request{Items: []document.ItemInput{chai("2", "10.00", "5")}}, seller, mustSeries(t, "invoice", "CH1/{FY}/{SEQ:5}"), now, document.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	inv.Items = d.Items
	r := document.IssueRecord("27AAPFU0939F1ZV", inv, 1, nil)
	want := "v=1&gstin=27AAPFU0939F1ZV&fy=2026-27&series=CH1&doc_type=invoice&position=1&kind=issue&serial=1" +
		"&number=CH1%2F26-27%2F00001&invoice_date=2026-11-29&issued_at=2026-11-29T03%3A20%3A00.000000Z" +
		"&recorded_at=2026-11-29T03%3A20%3A00.000000Z&buyer_gstin=&buyer_name=&place_of_supply=27&original_number=&original_date=" +
		"&items=Masala%2520chai%2C0902%2C2%2C10%2C5%2C20.00%2C0.50%2C0.50%2C0.00%2C21.00" +
		"&taxable=0.00&cgst=0.00&sgst=0.00&igst=0.00&total=0.00&reason=&prev="
	if got := r.Canonical(); got != want {
		t.Fatalf("canonical form\n got %s\nwant %s", got, want)
	}
	inv.CancelReason = "wrong buyer & amount = ₹5"
	c := document.CancelRecord("27AAPFU0939F1ZV", inv, 2, r.Hash())
	if !strings.Contains(c.Canonical(), "kind=cancel") || !strings.Contains(c.Canonical(), "reason=wrong%20buyer%20%26%20amount%20%3D%20%E2%82%B95") {
		t.Fatalf("cancel record not escaped as documented: %s", c.Canonical())
	}
	if string(c.Hash()) == string(r.Hash()) {
		t.Fatal("distinct records hash alike")
	}
	// Every stored field is sealed: changing a line item changes the hash.
	edited := inv
	edited.Items = append([]document.Item(nil), inv.Items...)
	edited.Items[0].Description = "Masala chai (large)"
	if string(document.IssueRecord("27AAPFU0939F1ZV", edited, 1, nil).Hash()) == string(r.Hash()) {
		t.Fatal("an edited item does not change the hash")
	}
}

// TestFastIssueHashMatchesTheRecord: the hash computed under the counter
// lock from the draft's precomputed content equals the documented
// canonical record's, for awkward content.
func TestFastIssueHashMatchesTheRecord(t *testing.T) {
	t.Parallel()
	cn := mustSeries(t, "credit_note", "CN/{FY}/{SEQ:5}")
	day, _ := time.Parse(time.DateOnly, "2026-11-02")
	for i, req := range []document.Request{
		{Items: []document.ItemInput{chai("1", "10", "5")}, Original: &document.Original{Number: "CH1/26-27/00001", InvoiceDate: day}},
		{Buyer: &document.Buyer{GSTIN: "29AAGCB7383J1Z4", Name: "Bangalore & Sons = ₹ \"Traders\"",
			Address: &document.Address{Line1: "1, Ring Rd; Gate %2", City: "Bengaluru", PIN: "560001"}},
			ShipTo:        &document.ShipTo{Address: document.Address{Line1: "Dock & Co", Line2: "a,b", City: "Hosūr", PIN: "635109", State: "33"}},
			PlaceOfSupply: "29",
			Original:      &document.Original{Number: "X1", InvoiceDate: day},
			Items:         []document.ItemInput{chai("0.333", "1.5", "18"), {Description: "a,b;c%d", HSN: "99887766", Quantity: "12.5", UnitPrice: "0.0001", GSTRate: "0.25"}}},
	} {
		d, err := document.Prepare(req, seller, cn, now, document.Policy{})
		if err != nil {
			t.Fatal(err)
		}
		inv := document.Invoice{SeriesCode: "CN", DocType: cn.DocType, FY: 2026, Serial: int64(i + 7), Number: fmt.Sprintf("CN/26-27/%05d", i+7),
			InvoiceDate: d.InvoiceDate, IssuedAt: now, Buyer: d.Buyer, ShipTo: d.ShipTo, PlaceOfSupply: d.PlaceOfSupply, Original: d.Original, Items: d.Items, Totals: d.Totals}
		prev := []byte("previous hash of 32 bytes exactly")[:32]
		want := document.IssueRecord("27AAPFU0939F1ZV", inv, 9, prev).Hash()
		if got := document.FastIssueHash("27AAPFU0939F1ZV", &inv, 9, prev, &d); string(got) != string(want) {
			t.Fatalf("case %d: fast hash %x, canonical record hash %x", i, got, want)
		}
	}
}

// TestRefusalEchoCutsBetweenCharacters: a refusal echoes at most 40 bytes
// of the bad value, cut before a character that byte 40 would split, so
// the message never holds half a character (%q showed it as "\xc3").
func TestRefusalEchoCutsBetweenCharacters(t *testing.T) {
	t.Parallel()
	s := mustSeries(t, "invoice", "CH1/{FY}/{SEQ:5}")
	long := strings.Repeat("a", 39) + "é and more" // é is bytes 40 and 41
	want := `"` + strings.Repeat("a", 39) + `…"`
	for name, req := range map[string]document.Request{
		"place_of_supply": {PlaceOfSupply: long, Items: []document.ItemInput{chai("1", "10", "5")}},
		"quantity":        {Items: []document.ItemInput{chai(long, "10", "5")}},
	} {
		_, err := document.Prepare(req, seller, s, now, document.Policy{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want the value echoed as %s", name, err, want)
		}
	}
}
