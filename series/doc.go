// Package series keeps gap-free invoice numbers in the database: the
// numbering series of a seller (package sellers), and one counter row per
// series and financial year. The vocabulary it stores (financial years,
// GSTINs, document types, number formats, gst.Seller and gst.Series) is
// package gst's.
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
//   - The lease guard's refusal: a series leased to an offline device
//     (package lease) is numbered by that device alone; a counter write
//     of a transaction that does not name the lease fails with
//     [ErrLeased] ([IsLeased]).
//   - Settlements' declarations of serials a lost device may have printed
//     ([Declaration], [DeclarationsOf], sealed by a [Seal]), which the
//     chain holds beside the invoices; package lease writes them.
//
// SQL lives in the *_store.go files; its errors are translated at the
// store's edge into this package's sentinels (errors.go).
package series
