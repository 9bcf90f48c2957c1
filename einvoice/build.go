package einvoice

import (
	"strconv"
	"strings"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/shopspring/decimal"
)

// The builder: a stored invoice and its parties as an INV-01 payload.
// Every amount is the stored one — the payload says what the receipt says —
// except the unit price, which INV-01 takes to three places where invoiced
// keeps four: TotAmt (Qty × UnitPrice) is the stored taxable value all the
// same, within a rupee of Qty × the rounded price up to 2,000 units (the
// IRP's tolerance, docs/e-invoice.md; above that the IRP judges).

// Build returns the INV-01 payload of inv with the parties in, checked
// against the schema. It fails with ErrNotApplicable when inv needs no IRN
// (cancelled, not an invoice, credit or debit note, or a buyer without a
// GSTIN), and with ErrInvalidPayload naming the field when a party's
// details are missing or wrong (a GSTIN whose state is not its address's,
// a PIN that is not six digits) or the payload breaks the schema.
func Build(inv document.Invoice, in Input) (*Payload, error) {
	typ, ok := DocTypeOf(inv.DocType)
	switch {
	case inv.Status != document.StatusIssued:
		return nil, apperr.Errorf(ErrNotApplicable, "invoice %s is %s: only an issued invoice is registered", inv.Number, inv.Status)
	case !ok:
		return nil, apperr.Errorf(ErrNotApplicable, "a %s needs no IRN: the IRP registers invoices, credit notes and debit notes", inv.DocType)
	case inv.Buyer == nil || inv.Buyer.GSTIN == "":
		return nil, apperr.Errorf(ErrNotApplicable, "invoice %s has no buyer GSTIN: a B2C invoice needs no IRN", inv.Number)
	case inv.PlaceOfSupply == "96" || inv.PlaceOfSupply == "97":
		return nil, apperr.Errorf(ErrInvalidPayload, "place of supply %s is an export or other territory: invoiced builds B2B payloads only", inv.PlaceOfSupply)
	}
	seller, err := sellerDtls(in.Seller)
	if err != nil {
		return nil, err
	}
	buyer, err := buyerDtls(*inv.Buyer, inv.PlaceOfSupply, in.Buyer)
	if err != nil {
		return nil, err
	}
	p := &Payload{
		Version:    SchemaVersion,
		TranDtls:   TranDtls{TaxSch: "GST", SupTyp: "B2B", RegRev: "N", IgstOnIntra: "N"},
		DocDtls:    DocDtls{Typ: typ, No: strings.ToUpper(inv.Number), Dt: FormatDate(inv.InvoiceDate)},
		SellerDtls: seller,
		BuyerDtls:  buyer,
	}
	if in.ShipTo != nil {
		if p.ShipDtls, err = shipDtls(*in.ShipTo); err != nil {
			return nil, err
		}
	}
	unit := in.Unit
	if unit == "" {
		unit = DefaultUnit
	}
	p.ItemList = make([]Item, len(inv.Items))
	for i, it := range inv.Items {
		p.ItemList[i] = itemOf(i, it, unit)
	}
	if p.ValDtls, err = valDtls(inv.Totals, in.RoundOff); err != nil {
		return nil, err
	}
	if o := inv.Original; o != nil && typ != TypeInvoice {
		p.RefDtls = &RefDtls{PrecDocDtls: []PrecDocDtls{{InvNo: o.Number, InvDt: FormatDate(o.InvoiceDate)}}}
	}
	if _, err := Marshal(p); err != nil {
		return nil, err
	}
	return p, nil
}

// itemOf returns the i-th line it as an INV-01 item, goods measured in unit.
func itemOf(i int, it document.Item, unit string) Item {
	out := Item{
		SlNo:       strconv.Itoa(i + 1),
		PrdDesc:    it.Description,
		IsServc:    "N",
		HsnCd:      it.HSN,
		Qty:        Num(it.Quantity),
		Unit:       unit,
		UnitPrice:  Num(it.UnitPrice.Round(3)),
		TotAmt:     Num(it.Taxable),
		Discount:   Num(decimal.Zero),
		AssAmt:     Num(it.Taxable),
		GstRt:      Num(it.GSTRate),
		IgstAmt:    Num(it.IGST),
		CgstAmt:    Num(it.CGST),
		SgstAmt:    Num(it.SGST),
		TotItemVal: Num(it.Total),
	}
	if IsService(it.HSN) {
		out.IsServc, out.Unit = "Y", ""
	}
	return out
}

// IsService reports whether hsn is a services accounting code: chapter 99
// of the HSN.
func IsService(hsn string) bool { return strings.HasPrefix(hsn, "99") }

// maxRoundOff bounds RndOffAmt in INV-01.
var maxRoundOff = decimal.RequireFromString("99.99")

// valDtls returns the payload's totals for the invoice's totals t under
// round-off policy r.
func valDtls(t document.Totals, r RoundOff) (ValDtls, error) {
	v := ValDtls{
		AssVal: Num(t.Taxable), CgstVal: Num(t.CGST), SgstVal: Num(t.SGST), IgstVal: Num(t.IGST),
		Discount: Num(decimal.Zero), RndOffAmt: Num(decimal.Zero), TotInvVal: Num(t.Total),
	}
	switch r {
	case NoRoundOff:
	case RoundToRupee:
		rounded := t.Total.Round(0)
		v.RndOffAmt, v.TotInvVal = Num(rounded.Sub(t.Total)), Num(rounded)
	default:
		return ValDtls{}, apperr.Errorf(ErrInvalidPayload, "round-off policy %d is not one of NoRoundOff, RoundToRupee", int(r))
	}
	if v.RndOffAmt.Decimal().Abs().GreaterThan(maxRoundOff) {
		return ValDtls{}, apperr.Errorf(ErrInvalidPayload, "round-off %s exceeds ±%s", v.RndOffAmt, maxRoundOff)
	}
	return v, nil
}

// sellerDtls returns the supplier p as INV-01 writes it. It fails when p's
// GSTIN is not valid or its state is not its address's (IRP error 2258).
func sellerDtls(p Party) (SellerDtls, error) {
	g, err := gst.ParseGSTIN(p.GSTIN)
	if err != nil {
		return SellerDtls{}, apperr.Errorf(ErrInvalidPayload, "seller.gstin: %s", apperr.MessageOf(err))
	}
	loc, err := location("seller.address", p.Address)
	if err != nil {
		return SellerDtls{}, err
	}
	if loc.Stcd != g.StateCode() {
		return SellerDtls{}, apperr.Errorf(ErrInvalidPayload, "seller.address.state_code %s is not the state of GSTIN %s (%s)", loc.Stcd, g, g.StateCode())
	}
	return SellerDtls{Gstin: string(g), LglNm: strings.TrimSpace(p.LegalName), TrdNm: strings.TrimSpace(p.TradeName),
		Location: loc, Ph: strings.TrimSpace(p.Phone), Em: strings.TrimSpace(p.Email)}, nil
}

// buyerDtls returns the invoice's buyer b, with place of supply pos and the
// recipient details r, as INV-01 writes it. It fails when r's address is
// incomplete or not in the state of b's GSTIN (IRP error 2265).
func buyerDtls(b document.Buyer, pos string, r Recipient) (BuyerDtls, error) {
	loc, err := location("buyer.address", r.Address)
	if err != nil {
		return BuyerDtls{}, err
	}
	if state := gst.GSTIN(b.GSTIN).StateCode(); loc.Stcd != state {
		return BuyerDtls{}, apperr.Errorf(ErrInvalidPayload, "buyer.address.state_code %s is not the state of buyer GSTIN %s (%s)", loc.Stcd, b.GSTIN, state)
	}
	return BuyerDtls{Gstin: b.GSTIN, LglNm: b.Name, TrdNm: strings.TrimSpace(r.TradeName), Pos: pos,
		Location: loc, Ph: strings.TrimSpace(r.Phone), Em: strings.TrimSpace(r.Email)}, nil
}

// shipDtls returns the delivery address s as INV-01 writes it.
func shipDtls(s ShipTo) (*ShipDtls, error) {
	loc, err := location("ship_to.address", s.Address)
	if err != nil {
		return nil, err
	}
	out := &ShipDtls{LglNm: strings.TrimSpace(s.LegalName), TrdNm: strings.TrimSpace(s.TradeName), Location: loc}
	if s.GSTIN != "" {
		g, err := gst.ParseGSTIN(s.GSTIN)
		if err != nil {
			return nil, apperr.Errorf(ErrInvalidPayload, "ship_to.gstin: %s", apperr.MessageOf(err))
		}
		out.Gstin = string(g)
	}
	return out, nil
}

// location returns a, trimmed, as INV-01 writes an address. It fails,
// naming field, when a required part is missing, the PIN is not six digits
// with a first digit from 1, or the state code names no state.
func location(field string, a Address) (Location, error) {
	loc := Location{Addr1: strings.TrimSpace(a.Line1), Addr2: strings.TrimSpace(a.Line2),
		Loc: strings.TrimSpace(a.Locality), Stcd: strings.TrimSpace(a.StateCode)}
	pin := strings.TrimSpace(a.PIN)
	switch {
	case loc.Addr1 == "":
		return Location{}, apperr.Errorf(ErrInvalidPayload, "%s.line1 is required", field)
	case loc.Loc == "":
		return Location{}, apperr.Errorf(ErrInvalidPayload, "%s.locality is required", field)
	case len(pin) != 6 || !isDigits(pin) || pin[0] == '0':
		return Location{}, apperr.Errorf(ErrInvalidPayload, "%s.pin %q must be six digits, the first not 0", field, pin)
	case gst.StateName(loc.Stcd) == "":
		return Location{}, apperr.Errorf(ErrInvalidPayload, "%s.state_code %q is not a GST state code", field, loc.Stcd)
	}
	loc.Pin, _ = strconv.Atoi(pin)
	return loc, nil
}
