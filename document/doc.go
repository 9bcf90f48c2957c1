// Package document is the GST invoice as a document, computed without a
// database: the request and its validation ([Prepare], [PrepareContent]),
// items, totals and their amounts in paise ([Money], [ParseMoney]), the
// issued [Invoice], the tamper-evident chain record and its hash
// ([Record], [IssueRecord], [CancelRecord]; docs/chain.md), invoice keys
// and public ids ([KeyOf], [NewPublicID]), return periods ([Month]), and
// offline numbering ([NumberOffline], [CancelOffline]; docs/offline.md).
//
// The server (package invoice) and an offline till (client/offline) call
// the same functions, so both compute the same amounts and hashes. It
// imports no database package: linking it does not link pgx.
package document
