package gst

import "time"

// Seller is one GST registration.
type Seller struct {
	ID        int64
	GSTIN     GSTIN
	Name      string
	StateCode string
	CreatedAt time.Time
	Contact
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
