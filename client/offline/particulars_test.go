package offline_test

import (
	"errors"
	"testing"
	"time"

	"github.com/invoiced/invoiced/client"
	"github.com/invoiced/invoiced/client/offline"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
)

// TestTillKeepsRule46: the till refuses, numbering nothing, a sale to a
// registered buyer without the buyer's address (Rule 46(d)) or one of
// ₹50,000 or more to an unregistered buyer without the addresses (46(e));
// an invoice with them is uploaded with both addresses, which the server
// stores and seals (the chain verifies), and a retry of its sale under
// its key with another address of delivery is another sale.
func TestTillKeepsRule46(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := t.Context()
	clk := &clock{time.Date(2026, 11, 29, 9, 0, 0, 0, gst.IST)}
	term := e.terminal(t, "till-7", clk)
	b2b := sale(0)
	b2b.Buyer, b2b.PlaceOfSupply = &client.Buyer{GSTIN: "29AAGCB7383J1Z4", Name: "Bengaluru Traders"}, "29"
	if _, err := term.Issue(b2b); !errors.Is(err, document.ErrParticularsMissing) {
		t.Fatalf("a registered buyer without an address: %v", err)
	}
	large := client.IssueRequest{Items: []client.ItemInput{{Description: "Espresso machine", HSN: "8419", Quantity: "1", UnitPrice: "60000.00", GSTRate: "18"}}}
	if _, err := term.Issue(large); !errors.Is(err, document.ErrParticularsMissing) {
		t.Fatalf("₹60,000 to an unregistered buyer without addresses: %v", err)
	}
	b2b.Buyer.Address = &client.Address{Line1: "14 Residency Road", City: "Bengaluru", PIN: "560025"}
	b2b.ShipTo = &client.ShipTo{Name: "Godown", Address: client.Address{Line1: "Plot 7, KIADB", City: "Hoskote", PIN: "562114", State: "29"}}
	r, err := term.IssueKeyed("sale-1", b2b)
	if err != nil || r.Serial != 1 {
		t.Fatalf("the complete sale: %+v, %v (the refused ones must take no number)", r, err)
	}
	other := b2b
	other.ShipTo = &client.ShipTo{Address: client.Address{Line1: "Elsewhere", City: "Mysuru", PIN: "570001", State: "29"}}
	if _, err := term.IssueKeyed("sale-1", other); !errors.Is(err, offline.ErrKeyReused) {
		t.Fatalf("the key's sale with another address of delivery: %v", err)
	}
	if n, err := term.Sync(ctx, e.all); err != nil || n != 1 {
		t.Fatalf("sync: %d, %v", n, err)
	}
	inv, err := e.all.GetInvoice(ctx, "T07-2026-1")
	if err != nil || inv.Buyer == nil || inv.Buyer.Address == nil || inv.Buyer.Address.State != "29" || inv.ShipTo == nil || inv.ShipTo.Address.City != "Hoskote" {
		t.Fatalf("stored: %+v, %v", inv, err)
	}
	e.verify(t)
}
