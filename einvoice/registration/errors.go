package registration

import "github.com/invoiced/invoiced/internal/apperr"

// The errors of this package, with the functions that return them. Match
// them with errors.Is; the HTTP layer maps them by kind (api/errors.go).
var (
	// ErrCancelWindowClosed: the invoice's IRN was registered more than 24
	// hours ago (einvoice.CancelWindow), so the IRP no longer cancels it,
	// and the invoice is not cancelled (Cancel). A credit note corrects it.
	ErrCancelWindowClosed = apperr.New(apperr.Conflict, "e_invoice_cancel_window_closed",
		"the invoice's IRN was registered more than 24 hours ago: the IRP no longer cancels it, so the invoice is not cancelled; issue a credit note against it instead")
	// ErrEWayBillActive: the IRP refuses to cancel the IRN while an e-way
	// bill on it is active (Cancel); cancel the e-way bill first.
	ErrEWayBillActive = apperr.New(apperr.Conflict, "e_invoice_e_way_bill_active",
		"an e-way bill generated on the invoice's IRN is active: cancel the e-way bill first, then the invoice")
	// ErrIRPUnavailable: the IRP did not answer the cancel of the IRN, or
	// refused the credentials (Cancel). The invoice is not cancelled yet;
	// the server asks the IRP again and then cancels it, and a retry of
	// the request does the same.
	ErrIRPUnavailable = apperr.New(apperr.Unavailable, "e_invoice_irp_unavailable",
		"the IRP did not answer the cancel of the invoice's IRN: the invoice is not cancelled yet; the server asks again and cancels it, or retry the request")
	// ErrNotConfigured: the invoice's IRN must be cancelled at the IRP,
	// but this server has no IRP configured (serve --irp-url) (Cancel).
	ErrNotConfigured = apperr.New(apperr.Unavailable, "e_invoicing_not_configured",
		"the invoice's IRN must be cancelled at the IRP, and this server has no IRP configured (serve --irp-url)")
	// ErrBusy: a worker is settling the invoice's registration right now
	// (Cancel); retry in a few seconds.
	ErrBusy = apperr.New(apperr.Conflict, "e_invoice_busy",
		"the invoice's registration at the IRP is being worked on right now; retry in a few seconds")
	// ErrAddressIncomplete: e-invoicing cannot be turned on for a seller
	// whose postal address lacks a first line, a city or a PIN
	// (SetEInvoicing).
	ErrAddressIncomplete = apperr.New(apperr.Invalid, "seller_address_incomplete",
		"the seller's address needs a first line, a city and a PIN before e-invoicing can be turned on")
)
