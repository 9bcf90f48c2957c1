package einvoice

// The IRP's e-invoice schema INV-01, version 1.1, as Go types: each field is
// named and tagged as the schema names it, so a reader can hold the one
// against the other. Only the parts invoiced fills are here (the schema,
// inv01.schema.json, has the rest: dispatch, payment, export, e-way bill
// details, batches, cess); optional parts are pointers or omitempty and
// are left out of the JSON when empty, as the IRP asks ("omit empty
// optionals rather than sending blank").

// SchemaVersion is the INV-01 version the payloads declare.
const SchemaVersion = "1.1"

// Payload is one document as the IRP's Generate IRN call takes it.
type Payload struct {
	Version    string     `json:"Version"`
	TranDtls   TranDtls   `json:"TranDtls"`
	DocDtls    DocDtls    `json:"DocDtls"`
	SellerDtls SellerDtls `json:"SellerDtls"`
	BuyerDtls  BuyerDtls  `json:"BuyerDtls"`
	ShipDtls   *ShipDtls  `json:"ShipDtls,omitempty"`
	ItemList   []Item     `json:"ItemList"`
	ValDtls    ValDtls    `json:"ValDtls"`
	RefDtls    *RefDtls   `json:"RefDtls,omitempty"`
}

// TranDtls are the transaction's details.
type TranDtls struct {
	TaxSch      string `json:"TaxSch"`                // "GST"
	SupTyp      string `json:"SupTyp"`                // "B2B" for invoiced
	RegRev      string `json:"RegRev,omitempty"`      // reverse charge: "Y" or "N"
	EcmGstin    string `json:"EcmGstin,omitempty"`    // e-commerce operator
	IgstOnIntra string `json:"IgstOnIntra,omitempty"` // IGST on an intra-state supply: "Y" or "N"
}

// DocDtls name the document: its type, number and date.
type DocDtls struct {
	Typ DocType `json:"Typ"`
	No  string  `json:"No"`
	Dt  string  `json:"Dt"` // dd/mm/yyyy
}

// Location is the postal address every party block of INV-01 shares:
// building and street (Addr1), premises (Addr2), town (Loc), PIN and state
// code. Embedded, its fields stand in the party's JSON object itself.
type Location struct {
	Addr1 string `json:"Addr1"`
	Addr2 string `json:"Addr2,omitempty"`
	Loc   string `json:"Loc"`
	Pin   int    `json:"Pin"`
	Stcd  string `json:"Stcd"`
}

// SellerDtls are the supplier's details.
type SellerDtls struct {
	Gstin string `json:"Gstin"`
	LglNm string `json:"LglNm"`
	TrdNm string `json:"TrdNm,omitempty"`
	Location
	Ph string `json:"Ph,omitempty"`
	Em string `json:"Em,omitempty"`
}

// BuyerDtls are the recipient's details; Pos is the place of supply (a
// state code).
type BuyerDtls struct {
	Gstin string `json:"Gstin"`
	LglNm string `json:"LglNm"`
	TrdNm string `json:"TrdNm,omitempty"`
	Pos   string `json:"Pos"`
	Location
	Ph string `json:"Ph,omitempty"`
	Em string `json:"Em,omitempty"`
}

// ShipDtls are where the goods go, when that is not the buyer's address.
type ShipDtls struct {
	Gstin string `json:"Gstin,omitempty"`
	LglNm string `json:"LglNm"`
	TrdNm string `json:"TrdNm,omitempty"`
	Location
}

// Item is one line of ItemList. TotAmt is Qty × UnitPrice (gross), AssAmt
// the taxable value (TotAmt less Discount), TotItemVal AssAmt with its
// taxes.
type Item struct {
	SlNo       string `json:"SlNo"`
	PrdDesc    string `json:"PrdDesc,omitempty"`
	IsServc    string `json:"IsServc"` // "Y" or "N"
	HsnCd      string `json:"HsnCd"`
	Qty        Number `json:"Qty"`
	Unit       string `json:"Unit,omitempty"`
	UnitPrice  Number `json:"UnitPrice"`
	TotAmt     Number `json:"TotAmt"`
	Discount   Number `json:"Discount"`
	AssAmt     Number `json:"AssAmt"`
	GstRt      Number `json:"GstRt"`
	IgstAmt    Number `json:"IgstAmt"`
	CgstAmt    Number `json:"CgstAmt"`
	SgstAmt    Number `json:"SgstAmt"`
	TotItemVal Number `json:"TotItemVal"`
}

// ValDtls are the document's totals. TotInvVal is AssVal plus the taxes,
// less Discount, plus RndOffAmt.
type ValDtls struct {
	AssVal    Number `json:"AssVal"`
	CgstVal   Number `json:"CgstVal"`
	SgstVal   Number `json:"SgstVal"`
	IgstVal   Number `json:"IgstVal"`
	Discount  Number `json:"Discount"`
	RndOffAmt Number `json:"RndOffAmt"`
	TotInvVal Number `json:"TotInvVal"`
}

// RefDtls refer to other documents: for a note, the invoice it corrects.
type RefDtls struct {
	PrecDocDtls []PrecDocDtls `json:"PrecDocDtls,omitempty"`
}

// PrecDocDtls name a preceding document: number and date (dd/mm/yyyy).
type PrecDocDtls struct {
	InvNo string `json:"InvNo"`
	InvDt string `json:"InvDt"`
}
