// Package offline is the device side of offline terminals
// (docs/offline.md): a point-of-sale terminal that holds the lease of a
// series numbers its own invoices while the network is down, keeps them
// in a durable journal, and uploads them for the server to verify.
//
// A Terminal computes every amount and chain hash with the server's own
// code (document.NumberOffline), so an honest upload is always accepted.
// Issue returns an invoice number only once the invoice is fsynced to the
// journal; a power cut at any instant loses only an invoice nobody was
// told about, and never reuses or skips a serial.
//
//	l, _ := cl.Lease(ctx, "T07", "till-7")            // online, once
//	t, _ := offline.Create("/var/lib/pos/t07.journal", l, nil)
//	r, _ := t.IssueKeyed(saleID, client.IssueRequest{Items: items}) // print r.Number
//	go t.Run(ctx, cl, 30*time.Second, log)            // uploads when it can
//	_, _ = t.End(ctx, cl)                             // hand the series back
//
// IssueKeyed with the point-of-sale's sale id returns the journaled
// invoice again (Replayed) for a sale rung up again after a crash, so it is
// reprinted, never numbered twice. End journals that it is ending before it
// asks the server, and until it learns the outcome Issue fails with
// ErrEndPending; a clock a day behind the lease makes Issue fail with
// ErrClockBehind rather than guess the date. An upload refused because
// the lease was ended by force and settled makes the terminal stop for
// good (ErrEnded; Sync fails with a *NotUploadedError listing the printed
// records the server never got); while a resume of the lease has not said
// so, Issue fails with ErrLeaseInDoubt. Sync halves its batches when they
// are too large for the server (its body limit, or its rate limit), and
// voids a cancellation the server refuses because its month was locked
// (RefusedCancels), so that everything else still uploads. A lease
// reserves two financial years, each with its position given when the
// lease is taken; a clock in any other year makes Issue fail with
// ErrYearNotLeased.
package offline
