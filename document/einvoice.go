package document

import "time"

// EInvoiceStatus is where an invoice stands with the IRP; package einvoice
// names the values (einvoice.Status is this type).
type EInvoiceStatus string

// EInvoice is an invoice's registration at the IRP as invoiced records it
// (docs/e-invoice.md): its status and, once registered, the IRP's IRN,
// acknowledgement and signed QR code, and the last error when there is
// one. The zero EInvoice has no status: the path that made the invoice did
// not read its registration.
type EInvoice struct {
	Status       EInvoiceStatus
	IRN          string
	AckNo        string
	AckDate      time.Time // zero until registered
	SignedQRCode string    // the IRP's signed JWT the receipt's QR code encodes
	Error        string    // why it failed, or what the last attempt met
}
