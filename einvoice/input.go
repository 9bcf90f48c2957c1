package einvoice

// What Build needs besides the stored invoice: the parties' registrations
// and postal addresses as INV-01 wants them. The invoice itself holds the
// buyer's GSTIN and name, the place of supply, the items and totals; the
// caller fills the rest from the seller's record and the buyer's address
// on the invoice.

// Address is a postal address as INV-01 wants it.
type Address struct {
	Line1     string // building, flat, road (Addr1): required
	Line2     string // floor, premises (Addr2): optional
	Locality  string // town or city (Loc): required
	PIN       string // six digits, the first not 0: required
	StateCode string // the GST state code, "29": required
}

// Party is the supplier: its registration and address.
type Party struct {
	GSTIN     string
	LegalName string
	TradeName string // optional
	Address   Address
	Phone     string // optional, 6 to 12 digits
	Email     string // optional
}

// Recipient is what the payload says of the buyer besides the invoice's
// buyer GSTIN and name: its address and, optionally, trade name, phone and
// e-mail.
type Recipient struct {
	TradeName string
	Address   Address
	Phone     string
	Email     string
}

// ShipTo is where the goods are delivered, when that is not the buyer's
// address. GSTIN is optional (an unregistered consignee).
type ShipTo struct {
	GSTIN     string
	LegalName string
	TradeName string
	Address   Address
}

// RoundOff says how the payload's invoice value (TotInvVal) relates to the
// invoice's total.
type RoundOff int

// The round-off policies.
const (
	// NoRoundOff: TotInvVal is the invoice's total to the paisa, RndOffAmt
	// 0. The IRP's signed value then equals the total on the receipt.
	NoRoundOff RoundOff = iota
	// RoundToRupee: TotInvVal is the total rounded to the nearest rupee
	// (half a rupee up) and RndOffAmt the difference, for a seller whose
	// invoices print a rounded total; the receipt must then show the
	// round-off line.
	RoundToRupee
)

// DefaultUnit is the unit quantity code of goods lines when the input names
// none: OTH, "others", in the IRP's list of units. invoiced's items carry
// no unit.
const DefaultUnit = "OTH"

// Input is what Build needs besides the invoice.
type Input struct {
	Seller Party
	Buyer  Recipient
	ShipTo *ShipTo // nil: delivered to the buyer's address
	// Unit is the unit quantity code written on goods lines (services
	// carry none); empty means DefaultUnit.
	Unit     string
	RoundOff RoundOff
}
