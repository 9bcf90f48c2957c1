// Package registration is the server side of e-invoicing
// (docs/e-invoice.md): the per-seller switch, the queue of registrations,
// the workers that register each B2B invoice and note of an e-invoicing
// seller at the IRP exactly once, and the cancel of a registered invoice's
// IRN.
//
// A seller that e-invoices is subscribed to its own events: a row of kind
// irp in webhooks (SetEInvoicing). Every transaction that issues or cancels
// an invoice records the event and a delivery to that subscriber in its own
// statements (invoice/events_store.go), so issuing never waits on the IRP
// and a registration job exists if and only if its invoice committed. The
// Worker takes those deliveries into e_invoices (one row per invoice:
// status, the IRP's answer, the work left) and settles each row with the
// IRP through an einvoice.Registrar, the answer table deciding each step:
// a registration request is recorded as sent before it leaves, a lost
// answer is asked again through einvoice.RegisterOnce (a duplicate then
// recovers the first registration), and a cancelled invoice whose
// registration may exist is registered-once and its IRN cancelled. Cancel
// is the API's cancel of an invoice whose IRN is registered.
//
// SQL lives in the *_store.go files; the decisions in settle.go.
package registration
