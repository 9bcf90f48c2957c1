package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/invoiced/invoiced/client"
)

// Issue one invoice; retries (lost answers, 503, 429, a key in progress)
// reuse one Idempotency-Key, so the sale is numbered once.
func Example() {
	c := client.New("http://127.0.0.1:8080", "ik_…")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	inv, err := c.IssueInvoice(ctx, "CH1", client.IssueRequest{
		Items: []client.ItemInput{{Description: "Masala chai", HSN: "0902", Quantity: "2", UnitPrice: "10.00", GSTRate: "5"}},
	})
	switch {
	case client.IsOutcomeUnknown(err):
		// Keep the key; retrying with it later returns this sale's invoice.
		log.Printf("unknown, retry later with key %s", client.OutcomeKey(err))
	case err != nil:
		log.Print(err) // a *client.Error: fix the request
	default:
		fmt.Println(inv.Number)
	}
}

// Issue an invoice to a registered buyer: CGST Rule 46(d) asks for its
// address (the state comes from the GSTIN); a sale of ₹50,000 or more to
// an unregistered buyer needs the buyer's name and address and a ShipTo
// (46(e)). Without them the server answers 422 particulars_missing.
func Example_registeredBuyer() {
	c := client.New("http://127.0.0.1:8080", "ik_…")
	inv, err := c.IssueInvoice(context.Background(), "CH1", client.IssueRequest{
		Buyer: &client.Buyer{GSTIN: "29AAGCB7383J1Z4", Name: "Bangalore Traders",
			Address: &client.Address{Line1: "14 Residency Road", City: "Bengaluru", PIN: "560025"}},
		ShipTo: &client.ShipTo{Name: "Bangalore Traders, godown",
			Address: client.Address{Line1: "Plot 7, KIADB", City: "Hoskote", PIN: "562114", State: "29"}},
		PlaceOfSupply: "29",
		Items:         []client.ItemInput{{Description: "Masala chai, 25 kg", HSN: "0902", Quantity: "4", UnitPrice: "5200.00", GSTRate: "5"}},
	})
	var ce *client.Error
	switch {
	case errors.As(err, &ce) && ce.Code == client.CodeParticularsMissing:
		log.Print(ce.Message) // names the missing field and the rule
	case err != nil:
		log.Print(err)
	default:
		fmt.Println(inv.Number, inv.Buyer.Address.State) // CH1/26-27/00001 29
	}
}
