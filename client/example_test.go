package client_test

import (
	"context"
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
