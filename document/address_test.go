package document_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
)

// bengaluru is a complete address in Karnataka, the state of the
// registered test buyer's GSTIN (29AAGCB7383J1Z4), its state left for the
// GSTIN to give.
func bengaluru() *document.Address {
	return &document.Address{Line1: "14 Residency Road", City: "Bengaluru", PIN: "560025"}
}

// TestRule46Particulars: CGST Rule 46 asks a tax invoice for (d) a
// registered buyer's address, always; (e) an unregistered buyer's name
// and address and the address of delivery when the taxable value is
// ₹50,000 or more; (f) nothing more below that. A request that lacks one
// is refused with ErrParticularsMissing naming every missing field and
// the rule; one that has them is prepared.
func TestRule46Particulars(t *testing.T) {
	t.Parallel()
	inv := mustSeries(t, "invoice", "CH1/{FY}/{SEQ:5}")
	cn := mustSeries(t, "credit_note", "CN/{FY}/{SEQ:5}")
	day := now.Truncate(24 * 60 * 60 * 1e9)
	worth := func(price string) []document.ItemInput { return []document.ItemInput{chai("1", price, "18")} }
	ship := &document.ShipTo{Address: document.Address{Line1: "Plot 7, KIADB", City: "Hoskote", PIN: "562114", State: "29"}}
	for _, c := range []struct {
		name string
		s    gst.Series
		req  document.Request
		want string // "" accepted, else in the ErrParticularsMissing message
	}{
		{name: "registered buyer without address", req: document.Request{Buyer: &document.Buyer{GSTIN: "29AAGCB7383J1Z4", Name: "Bangalore Traders"}, PlaceOfSupply: "29", Items: worth("100")},
			want: "buyer.address is required for a registered buyer (buyer.gstin 29AAGCB7383J1Z4): CGST Rule 46(d)"},
		{name: "registered buyer with address", req: document.Request{Buyer: &document.Buyer{GSTIN: "29AAGCB7383J1Z4", Name: "Bangalore Traders", Address: bengaluru()}, PlaceOfSupply: "29", Items: worth("100")}},
		{name: "registered buyer of ₹60,000 needs no delivery address", req: document.Request{Buyer: &document.Buyer{GSTIN: "29AAGCB7383J1Z4", Name: "Bangalore Traders", Address: bengaluru()}, PlaceOfSupply: "29", Items: worth("60000")}},
		{name: "unregistered ₹100 without anything", req: document.Request{Items: worth("100")}},
		{name: "unregistered ₹49,999.99", req: document.Request{Items: worth("49999.99")}},
		{name: "unregistered ₹50,000 without anything", req: document.Request{Items: worth("50000")},
			want: "buyer.name, buyer.address and ship_to are required: CGST Rule 46(e) asks an invoice of ₹50,000 or more (this one: ₹50000.00)"},
		{name: "unregistered ₹60,000 with a name only", req: document.Request{Buyer: &document.Buyer{Name: "Asha"}, Items: worth("60000")},
			want: "buyer.address and ship_to are required"},
		{name: "unregistered ₹60,000 without delivery address", req: document.Request{Buyer: &document.Buyer{Name: "Asha", Address: &document.Address{Line1: "3 FC Road", City: "Pune", PIN: "411004", State: "27"}}, Items: worth("60000")},
			want: "ship_to is required"},
		{name: "unregistered ₹60,000 complete", req: document.Request{Buyer: &document.Buyer{Name: "Asha", Address: &document.Address{Line1: "3 FC Road", City: "Pune", PIN: "411004", State: "27"}}, ShipTo: ship, Items: worth("60000")}},
		{name: "credit note to an unregistered buyer of ₹60,000", s: cn, req: document.Request{Items: worth("60000"), Original: &document.Original{Number: "CH1/26-27/00001", InvoiceDate: day}}},
		{name: "credit note to a registered buyer without address", s: cn, req: document.Request{Buyer: &document.Buyer{GSTIN: "29AAGCB7383J1Z4", Name: "B"}, PlaceOfSupply: "29", Items: worth("10"), Original: &document.Original{Number: "CH1/26-27/00001", InvoiceDate: day}},
			want: "buyer.address is required"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := c.s
			if s.Code == "" {
				s = inv
			}
			d, err := document.Prepare(c.req, seller, s, now, document.Policy{})
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (!errors.Is(err, document.ErrParticularsMissing) || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("got %v; want particulars_missing containing %q", err, c.want)
			case c.want != "":
				// PrepareContent leaves the judgement to its caller (the
				// API may accept with a warning), and CheckParticulars
				// gives the same refusal.
				d, err := document.PrepareContent(c.req, seller, s, now)
				if err != nil {
					t.Fatalf("PrepareContent: %v", err)
				}
				if err := document.CheckParticulars(&d, s.DocType); !errors.Is(err, document.ErrParticularsMissing) {
					t.Fatalf("CheckParticulars: %v", err)
				}
			case c.req.Buyer != nil && c.req.Buyer.GSTIN != "" && d.Buyer.Address.State != "29":
				t.Fatalf("the registered buyer's state is %q; want 29, from the GSTIN", d.Buyer.Address.State)
			}
		})
	}
}

// TestAddressRefusals: an address, when given, has its line, its city, a
// PIN (none only abroad, state 96) and a state code; a registered buyer's
// state is its GSTIN's. Each refusal names the part.
func TestAddressRefusals(t *testing.T) {
	t.Parallel()
	s := mustSeries(t, "invoice", "CH1/{FY}/{SEQ:5}")
	ok := []document.ItemInput{chai("1", "10", "5")}
	at := func(a document.Address) document.Request {
		return document.Request{Buyer: &document.Buyer{Name: "Asha", Address: &a}, Items: ok}
	}
	registered := func(a document.Address) document.Request {
		return document.Request{Buyer: &document.Buyer{GSTIN: "29AAGCB7383J1Z4", Name: "B", Address: &a}, PlaceOfSupply: "29", Items: ok}
	}
	full := document.Address{Line1: "3 FC Road", City: "Pune", PIN: "411004", State: "27"}
	with := func(f func(*document.Address)) document.Address { a := full; f(&a); return a }
	for _, c := range []struct {
		name string
		req  document.Request
		msg  string
	}{
		{"no line1", at(with(func(a *document.Address) { a.Line1 = "  " })), "buyer.address.line1 must not be empty"},
		{"no city", at(with(func(a *document.Address) { a.City = "" })), "buyer.address.city must not be empty"},
		{"no PIN", at(with(func(a *document.Address) { a.PIN = "" })), "buyer.address.pin is required"},
		{"PIN of five digits", at(with(func(a *document.Address) { a.PIN = "41100" })), "buyer.address.pin \"41100\" is not a PIN code"},
		{"PIN starting with 0", at(with(func(a *document.Address) { a.PIN = "011004" })), "is not a PIN code"},
		{"unregistered without state", at(with(func(a *document.Address) { a.State = "" })), "buyer.address.state is required"},
		{"state not a code", at(with(func(a *document.Address) { a.State = "MH" })), "buyer.address.state \"MH\" is not a GST state code"},
		{"line too long", at(with(func(a *document.Address) { a.Line2 = strings.Repeat("ā", 101) })), "buyer.address.line2 has 101 characters; at most 100"},
		{"control character", at(with(func(a *document.Address) { a.City = "Pune\u202e" })), "buyer.address.city holds"},
		{"registered in another state", registered(full), "buyer.address.state 27 is not the state of the buyer's GSTIN (29)"},
		{"delivery without address", document.Request{ShipTo: &document.ShipTo{Name: "Dock"}, Items: ok}, "ship_to.address is required"},
		{"delivery without state", document.Request{ShipTo: &document.ShipTo{Address: with(func(a *document.Address) { a.State = "" })}, Items: ok}, "ship_to.address.state is required"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := document.Prepare(c.req, seller, s, now, document.Policy{})
			if !errors.Is(err, document.ErrInvalid) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("got %v; want invalid_invoice containing %q", err, c.msg)
			}
		})
	}
	abroad := with(func(a *document.Address) { a.PIN, a.State, a.City = "", "96", "Dubai" })
	d, err := document.Prepare(at(abroad), seller, s, now, document.Policy{})
	if err != nil || d.Buyer.Address.PIN != "" {
		t.Fatalf("an address abroad without PIN: %v", err)
	}
	trimmed := with(func(a *document.Address) { a.Line1, a.PIN = "  3 FC Road ", " 411004" })
	if d, err := document.Prepare(at(trimmed), seller, s, now, document.Policy{}); err != nil || *d.Buyer.Address != full {
		t.Fatalf("address parts are not trimmed: %v %+v", err, d.Buyer)
	}
}

// TestChainSealsAddresses: an invoice without addresses is recorded in
// version 1, exactly as before; one with either address in version 2,
// whose hash changes with any part of either, and with their removal.
func TestChainSealsAddresses(t *testing.T) {
	t.Parallel()
	s := mustSeries(t, "invoice", "CH1/{FY}/{SEQ:5}")
	d, err := document.Prepare(document.Request{
		Buyer:         &document.Buyer{GSTIN: "29AAGCB7383J1Z4", Name: "Bangalore Traders", Address: bengaluru()},
		ShipTo:        &document.ShipTo{Name: "Godown", Address: document.Address{Line1: "Plot 7", City: "Hoskote", PIN: "562114", State: "29"}},
		PlaceOfSupply: "29", Items: []document.ItemInput{chai("2", "10.00", "5")},
	}, seller, s, now, document.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	inv := document.Invoice{SeriesCode: "CH1", DocType: s.DocType, FY: 2026, Serial: 1, Number: "CH1/26-27/00001",
		InvoiceDate: d.InvoiceDate, IssuedAt: now, Buyer: d.Buyer, ShipTo: d.ShipTo, PlaceOfSupply: d.PlaceOfSupply, Items: d.Items, Totals: d.Totals}
	sealed := document.IssueRecord(string(seller.GSTIN), inv, 1, nil)
	if sealed.Version() != document.ChainVersionAddresses || !strings.HasPrefix(sealed.Canonical(), "v=2&") {
		t.Fatalf("an invoice with addresses is recorded as %s", sealed.Canonical())
	}
	for name, edit := range map[string]func(*document.Invoice){
		"buyer's PIN": func(i *document.Invoice) {
			a := *i.Buyer.Address
			a.PIN = "560001"
			b := *i.Buyer
			b.Address = &a
			i.Buyer = &b
		},
		"buyer's address gone": func(i *document.Invoice) { b := *i.Buyer; b.Address = nil; i.Buyer = &b },
		"delivery name":        func(i *document.Invoice) { st := *i.ShipTo; st.Name = "Other"; i.ShipTo = &st },
		"delivery line2":       func(i *document.Invoice) { st := *i.ShipTo; st.Address.Line2 = "x"; i.ShipTo = &st },
		"delivery gone":        func(i *document.Invoice) { i.ShipTo = nil },
		"both gone":            func(i *document.Invoice) { b := *i.Buyer; b.Address = nil; i.Buyer = &b; i.ShipTo = nil },
	} {
		edited := inv
		edit(&edited)
		if string(document.IssueRecord(string(seller.GSTIN), edited, 1, nil).Hash()) == string(sealed.Hash()) {
			t.Errorf("editing the %s leaves the hash as it was", name)
		}
	}
	bare := inv
	bare.Buyer, bare.ShipTo = &document.Buyer{GSTIN: "29AAGCB7383J1Z4", Name: "Bangalore Traders"}, nil
	if r := document.IssueRecord(string(seller.GSTIN), bare, 1, nil); r.Version() != document.ChainVersion1 || strings.Contains(r.Canonical(), "address") || strings.Contains(r.Canonical(), "ship_to") {
		t.Fatalf("an invoice without addresses is not recorded in version 1: %s", r.Canonical())
	}
}
