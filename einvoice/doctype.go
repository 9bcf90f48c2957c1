package einvoice

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	"github.com/invoiced/invoiced/gst"
)

// DocType is a document type as the IRP names it.
type DocType string

// The document types the IRP registers.
const (
	TypeInvoice    DocType = "INV"
	TypeCreditNote DocType = "CRN"
	TypeDebitNote  DocType = "DBN"
)

// DocTypeOf returns the IRP's type for invoiced's document type t, and false
// for a type the IRP does not register: a bill of supply (exempt supplies),
// vouchers, delivery challans, self-invoices for inward supplies and
// revised invoices (which the IRP has no type for) are outside e-invoicing.
func DocTypeOf(t gst.DocType) (DocType, bool) {
	switch t {
	case gst.Invoice:
		return TypeInvoice, true
	case gst.CreditNote:
		return TypeCreditNote, true
	case gst.DebitNote:
		return TypeDebitNote, true
	}
	return "", false
}

// Valid reports whether t is INV, CRN or DBN.
func (t DocType) Valid() bool {
	return t == TypeInvoice || t == TypeCreditNote || t == TypeDebitNote
}

// DateLayout is how the IRP writes a document date: dd/mm/yyyy.
const DateLayout = "02/01/2006"

// FormatDate returns the civil date d as the IRP writes it, "31/03/2026".
func FormatDate(d time.Time) string { return d.Format(DateLayout) }

// ParseDate returns the civil date (00:00 UTC) the IRP wrote as dd/mm/yyyy.
// It fails for any other shape and for days that do not exist.
func ParseDate(s string) (time.Time, error) { return time.Parse(DateLayout, s) }

// DocKey is what the IRP keys a registration by: one IRN per supplier
// GSTIN, financial year, document type and document number. Date is the
// document date (a civil date); the year is worked out from it.
type DocKey struct {
	GSTIN  string
	Type   DocType
	Number string
	Date   time.Time
}

// KeyOf returns the key of the document p describes. It fails when p's
// date is not dd/mm/yyyy.
func KeyOf(p *Payload) (DocKey, error) {
	d, err := ParseDate(p.DocDtls.Dt)
	if err != nil {
		return DocKey{}, err
	}
	return DocKey{GSTIN: p.SellerDtls.Gstin, Type: p.DocDtls.Typ, Number: p.DocDtls.No, Date: d}, nil
}

// FY returns the financial year of k's date.
func (k DocKey) FY() gst.FY { return gst.FYOf(k.Date) }

// IRN returns the IRN of k: the SHA-256, in lower-case hex, of GSTIN +
// financial year ("2019-20") + document type + document number upper-cased
// (the IRP upper-cases numbers since 1 June 2025, so "inv/1" and "INV/1"
// are one document). For 01AAAAA9999A19N, 2019-20, INV, ABC01234 it hashes
// "01AAAAA9999A19N2019-20INVABC01234".
func (k DocKey) IRN() string {
	sum := sha256.Sum256([]byte(k.GSTIN + k.FY().String() + string(k.Type) + strings.ToUpper(k.Number)))
	return hex.EncodeToString(sum[:])
}

// String returns k as the IRP's uniqueness key reads: "GSTIN FY TYPE NUMBER".
func (k DocKey) String() string {
	return k.GSTIN + " " + k.FY().String() + " " + string(k.Type) + " " + k.Number
}
