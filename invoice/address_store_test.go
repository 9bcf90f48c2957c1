package invoice_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/internal/dbtest"
	"github.com/invoiced/invoiced/internal/testfactory"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/series"
)

// TestAddressesStoredOnEveryPath: the buyer's address and the address of
// delivery (Rule 46(d), (e)) are stored by every way of writing an
// invoice (a transaction of its own, in the ordinary and the routed form;
// a predicted batch, pipelined and delegated) and read back as issued, and
// the chain, which seals them (version 2), verifies.
func TestAddressesStoredOnEveryPath(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := t.Context()
	clock := func() time.Time { return now }
	ship := &document.ShipTo{Name: "Godown, Hoskote", Address: document.Address{Line1: "Plot 7, KIADB", Line2: "Hoskote", City: "Bengaluru Rural", PIN: "562114", State: "29"}}
	draft := func(key string, withShip bool) document.Draft {
		buyer := testfactory.Buyer
		buyer.Address = testfactory.BuyerAddress()
		req := &document.Request{Buyer: &buyer, PlaceOfSupply: "29", Items: []document.ItemInput{testfactory.Chai("2", "10.00", "5")}}
		if withShip {
			req.ShipTo = ship
		}
		return testfactory.Draft(t, f.seller, f.s, now, &testfactory.DraftOpts{Request: req, Key: key})
	}
	var issued []document.Invoice
	// The ordinary form and the routed one (on Citus, where only the
	// routed form runs, that one twice).
	for _, opt := range []series.Options{{Routed: dbtest.Citus(t)}, {Routed: true}} {
		for _, withShip := range []bool{false, true} {
			inv, err := invoice.Issue(ctx, f.pool, f.seller, f.s, draft("", withShip), now, opt)
			if err != nil {
				t.Fatal(err)
			}
			issued = append(issued, inv)
		}
	}
	pipelined, delegated := predicting(t, f, clock), delegating(t, f, clock)
	for j, c := range []*invoice.Committer{pipelined, delegated} {
		for i, withShip := range []bool{false, true, true} {
			r := c.Issue(ctx, invoice.IssueRequest{Seller: f.seller, Series: f.s, Draft: draft(fmt.Sprintf("k%d-%d", j, i), withShip)})
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			issued = append(issued, r.Invoice)
		}
	}
	if pipelined.Stats().Predicted == 0 || delegated.Stats().Delegated == 0 {
		t.Fatalf("stats: pipelined %+v, delegated %+v; want a predicted and a delegated batch", pipelined.Stats(), delegated.Stats())
	}
	for _, inv := range issued {
		got, err := invoice.Get(ctx, f.pool, f.seller.ID, inv.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := testfactory.BuyerAddress()
		want.State = "29" // from the GSTIN
		if got.Buyer == nil || !reflect.DeepEqual(got.Buyer.Address, want) || !reflect.DeepEqual(got.ShipTo, inv.ShipTo) {
			t.Fatalf("serial %d stored buyer %+v, delivery %+v; issued %+v, %+v", inv.Serial, got.Buyer, got.ShipTo, inv.Buyer, inv.ShipTo)
		}
		if inv.ShipTo != nil && *got.ShipTo != *ship {
			t.Fatalf("serial %d stored delivery %+v, want %+v", inv.Serial, got.ShipTo, ship)
		}
	}
	verifyChains(t, f)
}
