package gst

import (
	"strings"
	"time"
)

// Seller is one GST registration.
type Seller struct {
	ID        int64
	GSTIN     GSTIN
	Name      string
	StateCode string
	CreatedAt time.Time
	Contact
	// Postal is the seller's address in parts, as an e-invoice's
	// SellerDtls wants it (its state is StateCode); zero when not given.
	Postal Postal
	// EInvoicing reports whether the seller's B2B invoices and notes are
	// registered at the IRP (docs/e-invoice.md).
	EInvoicing bool
}

// Postal is a seller's address in parts: all of Line1, City and PIN, or
// none (Line2 is optional).
type Postal struct {
	Line1 string // building, street
	Line2 string // area, floor; optional
	City  string // city, town or locality
	PIN   string // six digits, the first not 0
}

// Complete reports whether p has a first line, a city and a PIN: what an
// e-invoice's SellerDtls requires.
func (p Postal) Complete() bool { return p.Line1 != "" && p.City != "" && p.PIN != "" }

// OneLine returns p as one line in state: "12 MG Road, Camp, Pune 411001,
// 27-Maharashtra"; "" for the zero Postal.
func (p Postal) OneLine(state string) string {
	if p == (Postal{}) {
		return ""
	}
	var parts []string
	for _, s := range []string{p.Line1, p.Line2, strings.TrimSpace(p.City + " " + p.PIN)} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	if state != "" {
		parts = append(parts, StateLabel(state))
	}
	return strings.Join(parts, ", ")
}

// Contact is how a seller is reached, printed on its receipts (Rule 46(a)
// wants the supplier's address). Empty fields are not printed.
type Contact struct {
	Address string // one line, e.g. "12 MG Road, Pune 411001"
	Phone   string
	Email   string
}

// Series is one numbering series of a seller.
type Series struct {
	ID        int64
	SellerID  int64
	Code      string
	DocType   DocType
	Format    Format
	Shop      string
	CreatedAt time.Time
}
