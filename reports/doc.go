// Package reports produces what an accountant asks of invoiced: the serial
// audit of a series-year (WriteAudit, as CSV, JSON or XLSX), GSTR-1
// Table 13 "documents issued" (DocIssue) and the verification of the
// tamper-evident chains (Verify).
//
// Every report reads one snapshot, in a read-only REPEATABLE READ
// transaction, and streams rows from the database, so memory stays flat
// whatever the size of a series. docs/reports.md describes the formats and
// docs/chain.md the chain's canonical form and what Verify checks.
package reports
