// Package einvoice is e-invoicing as invoiced sees it, without a network or
// a database: the IRP's INV-01 payload ([Payload]) and its JSON schema
// ([Validate]), the builder that makes a payload from a stored invoice and
// the parties' addresses ([Build], [Input]), the IRN ([IRN]), the
// registration status vocabulary ([Status]), and the contract of a
// registrar — the IRP itself or a GSP in front of it — with the answer table
// that says what each answer lets a caller conclude ([Registrar], [Error],
// [Kind], [Outcome]).
//
// Package einvoice/irp speaks the IRP's own protocol and implements
// [Registrar]; package einvoice/irpsandbox is a local IRP for tests and
// demos. docs/e-invoice.md describes the whole.
//
// It imports no database package and nothing that talks to a network.
package einvoice
