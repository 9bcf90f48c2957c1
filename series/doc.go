// Package series keeps gap-free invoice numbers in the database: the
// numbering series of a seller (package sellers), and one counter row per
// series and financial year. The vocabulary it stores (financial years, GSTINs, document
// types, number formats, gst.Seller and gst.Series) is package gst's.
//
// The counter row is locked and advanced inside the transaction that inserts
// the invoices it numbers ([Next], [NextN], [NextMany]), so a rollback
// returns the numbers and the next transaction takes them again: committed
// serials of a series-year are always exactly 1..N. The row lock lasts until
// that transaction ends, so one series has one writer at a time and its
// throughput is capped by how long the lock is held, COMMIT included. Take
// the number as the last step before COMMIT, and take k numbers at once
// ([NextN]) when issuing k invoices together. A caller that predicts where
// the rows stand ([Predict]) advances them in the same round trip as its
// inserts ([QueueAdvance], [QueueAdvanceChains]); a wrong prediction takes
// nothing ([ErrMoved]).
//
// What it holds besides the counters:
//   - Series: [CreateSeries] (its code checked by [ParseCode]; no two
//     series of one seller may render the same number in the same year,
//     gst.Overlap), [Get], [GetByID], [List].
//   - Leases to offline devices (docs/offline.md): [TakeLease],
//     [ResumeLease], [EndLeaseByDevice], [ForceEndLease], [SettleLease],
//     [SettleLeaseYears], [EndLease] for an [EndRequest] as a client sends
//     it, the guard [CheckLease] that refuses online
//     numbering of a leased series, and the reads [GetLease],
//     [HolderLease], [Leases], [SellerLeases].
//
// SQL lives in the *_store.go files; its errors are translated at the
// store's edge into this package's sentinels (errors.go, lease.go).
package series
