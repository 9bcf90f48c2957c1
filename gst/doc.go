// Package gst holds the vocabulary of GST invoicing that every other part
// shares, from the server to a till that numbers offline: financial years
// and India Standard Time dates ([FY], [DateIST], [ParseDate]), GSTINs and
// state codes ([ParseGSTIN], [StateLabel]), document types ([DocType]),
// number formats checked against CGST Rule 46(b) and the IRP pattern
// ([ParseFormat], [Format.Render], [Overlap]), and the seller and series a
// document is numbered in ([Seller], [Series]).
//
// It is pure: it imports no database package, so a program that only
// computes invoices (client/offline) links it without pgx. Package
// document builds the invoice on these types; package series stores
// sellers and series and keeps their counters.
package gst
