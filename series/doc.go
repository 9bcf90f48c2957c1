// Package series keeps gap-free invoice numbers: sellers (GST registrations),
// their numbering series, and one counter row per series and financial year.
//
// The counter row is locked and advanced inside the transaction that inserts
// the invoices it numbers ([Next], [NextN]), so a rollback returns the numbers
// and the next transaction takes them again: committed serials of a
// series-year are always exactly 1..N. The row lock lasts until that
// transaction ends, so one series has one writer at a time and its throughput
// is capped by how long the lock is held, COMMIT included. Take the number as
// the last step before COMMIT, and take k numbers at once ([NextN]) when
// issuing k invoices together.
//
// Financial years run 1 April – 31 March in India Standard Time ([gst.FY]);
// number formats are a small language ([gst.ParseFormat]) checked against CGST
// Rule 46(b) and the IRP document-number pattern, and no two series of one
// seller may render the same number in the same year ([gst.Overlap]).
package series
