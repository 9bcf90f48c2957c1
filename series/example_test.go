package series_test

import (
	"context"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/sellers"
	"github.com/invoiced/invoiced/series"
	"github.com/jackc/pgx/v5/pgxpool"
	"time"
)

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
	seller, err := sellers.ByGSTIN(ctx, pool, "27AAPFU0939F1ZV")
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
	today := gst.DateIST(time.Now())
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
