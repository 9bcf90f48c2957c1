// Package invoice issues, reads and cancels GST invoices numbered by package
// series. Amounts are computed here, on the server, from decimal strings;
// every issue and every cancellation is a record in the series-year's
// tamper-evident hash chain (see docs/chain.md), appended under the same
// counter lock and in the same transaction as the invoice itself.
//
// IssueTx numbers a whole batch of validated drafts with one counter update,
// so a caller that gathers concurrent requests pays one lock hold and one
// COMMIT for all of them.
package invoice
