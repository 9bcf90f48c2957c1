package series_test

import (
	"context"
	"fmt"
	"time"

	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5/pgxpool"
)

func ExampleParseFormat() {
	f, err := series.ParseFormat("ch1/{fy}/{seq:5}")
	if err != nil {
		panic(err)
	}
	n, _ := f.Render(2026, 42)
	fmt.Println(f, f.Capacity(), n)
	_, err = series.ParseFormat("{SEQ:5}")
	fmt.Println(err)
	// Output:
	// CH1/{FY}/{SEQ:5} 99999 CH1/26-27/00042
	// format {SEQ:5} renders numbers starting with '0', such as 00001; a number must start with A-Z or 1-9
}

func ExampleFYAt() {
	before := time.Date(2026, 3, 31, 18, 29, 59, 0, time.UTC) // 23:59:59 IST
	after := time.Date(2026, 3, 31, 18, 30, 0, 0, time.UTC)   // 00:00 IST, 1 April
	fmt.Println(series.FYAt(before), series.FYAt(after), series.FYAt(after).Short())
	// Output: 2025-26 2026-27 26-27
}

func ExampleParseGSTIN() {
	g, err := series.ParseGSTIN("27aapfu0939f1zv")
	fmt.Println(g, g.StateCode(), err)
	_, err = series.ParseGSTIN("01AABCE2207R1Z5")
	fmt.Println(err)
	// Output:
	// 27AAPFU0939F1ZV 27 <nil>
	// GSTIN 01AABCE2207R1Z5: check character should be V, not 5
}

func ExampleOverlap() {
	a, _ := series.ParseFormat("A{SEQ}")
	b, _ := series.ParseFormat("A1{SEQ}")
	c, _ := series.ParseFormat("B{SEQ}")
	fmt.Println(series.Overlap(a, b))
	fmt.Println(series.Overlap(a, c))
	// Output:
	// A11 true
	//  false
}

// ExampleNextN takes an invoice number inside the caller's own transaction.
// The number is taken last, right before the insert and COMMIT: the counter
// row stays locked until the transaction ends, and a rollback returns the
// number.
func ExampleNextN() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://localhost/invoiced")
	if err != nil {
		panic(err)
	}
	defer pool.Close()
	seller, err := series.SellerByGSTIN(ctx, pool, "27AAPFU0939F1ZV")
	if err != nil {
		panic(err)
	}
	s, err := series.Get(ctx, pool, seller.ID, "CH1")
	if err != nil {
		panic(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		panic(err)
	}
	defer tx.Rollback(ctx)
	// ... the caller's own work in tx ...
	today := series.DateIST(time.Now())
	b, err := series.NextN(ctx, tx, s, today, time.Now(), 1, series.Options{LockTimeout: 3 * time.Second})
	if err != nil {
		panic(err) // ErrDateOutOfOrder, ErrExhausted, ErrLockTimeout, ...
	}
	if _, err := tx.Exec(ctx, `INSERT INTO my_invoices (number) VALUES ($1)`, b.Number(0)); err != nil {
		panic(err)
	}
	if err := tx.Commit(ctx); err != nil {
		panic(err)
	}
}
