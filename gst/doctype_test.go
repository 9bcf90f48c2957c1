package gst

import (
	"errors"
	"strings"
	"testing"
)

func TestDocTypes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		want          DocType
		docNum        int
		nature        string
		needsOriginal bool
	}{
		{"invoice", Invoice, 1, "Invoices for outward supply", false},
		{"bill_of_supply", BillOfSupply, 1, "Invoices for outward supply", false},
		{"inward_supply_unregistered", InwardSupplyUnregistered, 2, "Invoices for inward supply from unregistered person", false},
		{"revised_invoice", RevisedInvoice, 3, "Revised Invoice", true},
		{"debit_note", DebitNote, 4, "Debit Note", true},
		{"credit_note", CreditNote, 5, "Credit Note", true},
		{"receipt_voucher", ReceiptVoucher, 6, "Receipt voucher", false},
		{"payment_voucher", PaymentVoucher, 7, "Payment Voucher", false},
		{"refund_voucher", RefundVoucher, 8, "Refund voucher", false},
		{"delivery_challan_job_work", DeliveryChallanJobWork, 9, "Delivery Challan for job work", false},
		{"delivery_challan_approval", DeliveryChallanApproval, 10, "Delivery Challan for supply on approval", false},
		{"delivery_challan_liquid_gas", DeliveryChallanLiquidGas, 11, "Delivery Challan in case of liquid gas", false},
		{"delivery_challan", DeliveryChallan, 12, "Delivery Challan in cases other than by way of supply (excluding 9 to 11)", false},
	}
	all := DocTypes()
	if len(all) != len(tests) {
		t.Fatalf("DocTypes() has %d types, want %d", len(all), len(tests))
	}
	for i, tt := range tests {
		d, err := ParseDocType(tt.name)
		if err != nil || d != tt.want {
			t.Fatalf("ParseDocType(%q) = %q, %v; want %q", tt.name, d, err, tt.want)
		}
		if all[i] != tt.want {
			t.Fatalf("DocTypes()[%d] = %q, want %q", i, all[i], tt.want)
		}
		if !d.Valid() || d.DocNum() != tt.docNum || d.Nature() != tt.nature || d.NeedsOriginal() != tt.needsOriginal {
			t.Fatalf("%q: Valid %v, DocNum %d, Nature %q, NeedsOriginal %v; want true, %d, %q, %v",
				d, d.Valid(), d.DocNum(), d.Nature(), d.NeedsOriginal(), tt.docNum, tt.nature, tt.needsOriginal)
		}
	}
	all[0] = "changed"
	if DocTypes()[0] != Invoice {
		t.Fatalf("DocTypes returns a shared slice")
	}
}

func TestParseDocTypeRefuses(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "Invoice", "INVOICE", " invoice", "tax_invoice", "delivery-challan", "credit note"} {
		d, err := ParseDocType(s)
		if !errors.Is(err, ErrInvalidDocType) || !strings.Contains(err.Error(), "invoice, bill_of_supply") {
			t.Fatalf("ParseDocType(%q) = %q, %v; want ErrInvalidDocType listing the valid types", s, d, err)
		}
	}
	var unknown DocType = "tax_invoice"
	if unknown.Valid() || unknown.DocNum() != 0 || unknown.Nature() != "" || unknown.NeedsOriginal() {
		t.Fatalf("unknown document type reports a Table 13 row")
	}
}
