package einvoice

import "github.com/invoiced/invoiced/document"

// Status is where an invoice stands with the IRP, as invoiced records it
// and the API shows it (e_invoice.status). It is document's type, so that
// an invoice carries it (document.Invoice.EInvoice) without importing this
// package.
type Status = document.EInvoiceStatus

// The statuses. An invoice of a seller that e-invoices starts pending when
// it needs an IRN and not_applicable when it does not (a B2C invoice, a
// bill of supply); pending ends registered, failed or, through a cancel,
// cancelled.
const (
	// StatusPending: registration is queued or in flight. The IRP may
	// already hold an IRN for it (an answer was lost): pending never means
	// "not registered".
	StatusPending Status = "pending"
	// StatusRegistered: the IRP registered it; its IRN, Ack No., Ack date and
	// signed QR code are stored.
	StatusRegistered Status = "registered"
	// StatusFailed: the IRP refused it (KindRejected) and no IRN exists for
	// it; the error says why. Sending it again as it is would be refused
	// again.
	StatusFailed Status = "failed"
	// StatusCancelled: the invoice is cancelled and no live IRN exists for
	// it (its IRN, if it had one, is cancelled at the IRP).
	StatusCancelled Status = "cancelled"
	// StatusNotApplicable: the document needs no IRN.
	StatusNotApplicable Status = "not_applicable"
)

// Statuses returns every status, in the order above.
func Statuses() []Status {
	return []Status{StatusPending, StatusRegistered, StatusFailed, StatusCancelled, StatusNotApplicable}
}

// ValidStatus reports whether s is one of Statuses.
func ValidStatus(s Status) bool {
	switch s {
	case StatusPending, StatusRegistered, StatusFailed, StatusCancelled, StatusNotApplicable:
		return true
	}
	return false
}

// Applicable reports whether inv, issued, needs an IRN from a seller that
// e-invoices: an invoice, credit note or debit note to a buyer with a
// GSTIN. Build refuses the others with ErrNotApplicable.
func Applicable(inv document.Invoice) bool {
	_, ok := DocTypeOf(inv.DocType)
	return ok && inv.Buyer != nil && inv.Buyer.GSTIN != ""
}

// InitialStatus returns the status of inv just issued by a seller:
// pending when the seller e-invoices and inv is Applicable, else
// not_applicable.
func InitialStatus(eInvoicing bool, inv document.Invoice) Status {
	if eInvoicing && Applicable(inv) {
		return StatusPending
	}
	return StatusNotApplicable
}

// IRNStatus is an IRN's state at the IRP: ACT (active) or CNL (cancelled).
type IRNStatus string

// The IRN states the IRP reports.
const (
	IRNActive    IRNStatus = "ACT"
	IRNCancelled IRNStatus = "CNL"
)
