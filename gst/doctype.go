package gst

import (
	"strings"

	"github.com/invoiced/invoiced/internal/apperr"
)

// DocType is the kind of document a series numbers. Each maps to one row
// ("nature of document") of GSTR-1 Table 13.
type DocType string

// The document types, with their GSTR-1 Table 13 doc_num.
const (
	Invoice                  DocType = "invoice"                     // 1, tax invoice (Rule 46)
	BillOfSupply             DocType = "bill_of_supply"              // 1, bill of supply (Rule 49)
	InwardSupplyUnregistered DocType = "inward_supply_unregistered"  // 2, self-invoice for inward supply from an unregistered person
	RevisedInvoice           DocType = "revised_invoice"             // 3
	DebitNote                DocType = "debit_note"                  // 4
	CreditNote               DocType = "credit_note"                 // 5
	ReceiptVoucher           DocType = "receipt_voucher"             // 6
	PaymentVoucher           DocType = "payment_voucher"             // 7
	RefundVoucher            DocType = "refund_voucher"              // 8
	DeliveryChallanJobWork   DocType = "delivery_challan_job_work"   // 9
	DeliveryChallanApproval  DocType = "delivery_challan_approval"   // 10, supply on approval
	DeliveryChallanLiquidGas DocType = "delivery_challan_liquid_gas" // 11
	DeliveryChallan          DocType = "delivery_challan"            // 12, other than by way of supply
)

// docTypeRow is a document type's row of GSTR-1 Table 13.
type docTypeRow struct {
	t      DocType
	docNum int
	nature string
}

// docTypeTable lists the document types in DocTypes order.
var docTypeTable = []docTypeRow{
	{Invoice, 1, "Invoices for outward supply"},
	{BillOfSupply, 1, "Invoices for outward supply"},
	{InwardSupplyUnregistered, 2, "Invoices for inward supply from unregistered person"},
	{RevisedInvoice, 3, "Revised Invoice"},
	{DebitNote, 4, "Debit Note"},
	{CreditNote, 5, "Credit Note"},
	{ReceiptVoucher, 6, "Receipt voucher"},
	{PaymentVoucher, 7, "Payment Voucher"},
	{RefundVoucher, 8, "Refund voucher"},
	{DeliveryChallanJobWork, 9, "Delivery Challan for job work"},
	{DeliveryChallanApproval, 10, "Delivery Challan for supply on approval"},
	{DeliveryChallanLiquidGas, 11, "Delivery Challan in case of liquid gas"},
	{DeliveryChallan, 12, "Delivery Challan in cases other than by way of supply (excluding 9 to 11)"},
}

// row returns d's Table 13 row, or false when d is not a known type.
func (d DocType) row() (docTypeRow, bool) {
	for _, r := range docTypeTable {
		if r.t == d {
			return r, true
		}
	}
	return docTypeRow{}, false
}

// DocTypes returns every document type, ordered by GSTR-1 doc_num, in a new
// slice.
func DocTypes() []DocType {
	ts := make([]DocType, len(docTypeTable))
	for i, e := range docTypeTable {
		ts[i] = e.t
	}
	return ts
}

// ParseDocType returns the document type named exactly s ("credit_note").
// It fails with ErrInvalidDocType, listing the valid names, for anything else.
func ParseDocType(s string) (DocType, error) {
	if _, ok := DocType(s).row(); ok {
		return DocType(s), nil
	}
	names := make([]string, len(docTypeTable))
	for i, e := range docTypeTable {
		names[i] = string(e.t)
	}
	return "", apperr.Errorf(ErrInvalidDocType, "document type %q is not one of %s", s, strings.Join(names, ", "))
}

// Valid reports whether d is one of the document types of DocTypes.
func (d DocType) Valid() bool {
	_, ok := d.row()
	return ok
}

// DocNum returns d's doc_num in GSTR-1 Table 13 (1 to 12; invoices and bills
// of supply share 1), or 0 when d is not a known type.
func (d DocType) DocNum() int {
	r, _ := d.row()
	return r.docNum
}

// Nature returns d's "nature of document" text in GSTR-1 Table 13, or ""
// when d is not a known type.
func (d DocType) Nature() string {
	r, _ := d.row()
	return r.nature
}

// NeedsOriginal reports whether a document of type d must quote the invoice
// it corrects (Rule 53): credit notes, debit notes and revised invoices.
func (d DocType) NeedsOriginal() bool {
	return d == CreditNote || d == DebitNote || d == RevisedInvoice
}

// NatureOf returns the "nature of document" text of GSTR-1 Table 13 row
// docNum (1–12), or "" for another number.
func NatureOf(docNum int) string {
	for _, r := range docTypeTable {
		if r.docNum == docNum {
			return r.nature
		}
	}
	return ""
}
