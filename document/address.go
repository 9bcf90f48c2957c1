package document

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/textcut"
	"github.com/shopspring/decimal"
)

// Addresses of the recipient and of delivery (CGST Rule 46(d), (e), (f);
// docs/receipts.md, "Buyer and delivery address"). An address has the
// parts an e-invoice's BuyerDtls and ShipDtls carry (Addr1, Addr2, Loc,
// Pin, Stcd), so that the same stored address serves the printed invoice
// and the IRP.

// Address is a postal address in India (or abroad, state 96).
// Its JSON form is how invoices store it (and the API writes it).
type Address struct {
	Line1 string `json:"line1"`           // street and number; required
	Line2 string `json:"line2,omitempty"` // optional
	City  string `json:"city"`            // city, town or locality; required
	PIN   string `json:"pin,omitempty"`   // six-digit PIN code; required unless State is 96 (another country)
	State string `json:"state"`           // two-digit GST state code, "29"
}

// ShipTo is where the goods are delivered (Rule 46(e): "the address of
// delivery, along with the name of State and its code").
type ShipTo struct {
	Name    string  `json:"name,omitempty"` // who receives them; optional
	Address Address `json:"address"`
}

// maxAddressLine is the most characters of an address part: the IRP
// takes at most 100 for Addr1, Addr2 and Loc.
const maxAddressLine = 100

// foreignState is the GST code of a place outside India, which has no PIN.
const foreignState = "96"

// B2CAddressThreshold is the taxable value from which an invoice to an
// unregistered buyer must carry the buyer's name and address and the
// address of delivery with its state (Rule 46(e)); below it they are
// printed only when the buyer asks (Rule 46(f)).
var B2CAddressThreshold = decimal.NewFromInt(50000)

// ErrParticularsMissing is returned by CheckParticulars (and Prepare) for
// an invoice that lacks a particular Rule 46 asks of it, with a message
// naming the field and the rule. Match it with errors.Is.
var ErrParticularsMissing = apperr.New(apperr.Invalid, "particulars_missing", "the invoice lacks a particular CGST Rule 46 asks for")

// checkAddress validates the address a at field ("buyer.address"): its
// parts trimmed, each free text of at most maxAddressLine characters,
// line1 and city present, a PIN of six digits not starting with 0 (none
// for state 96), and a GST state code. gstinState, the state code of the
// recipient's GSTIN ("" for none), becomes the state when none is given
// and must equal the one given. It returns the address as stored, or
// ErrInvalid naming the part.
func checkAddress(field string, a Address, gstinState string) (Address, error) {
	out := Address{Line1: strings.TrimSpace(a.Line1), Line2: strings.TrimSpace(a.Line2), City: strings.TrimSpace(a.City),
		PIN: strings.TrimSpace(a.PIN), State: strings.TrimSpace(a.State)}
	for _, p := range []struct {
		name     string
		v        string
		optional bool
	}{{"line1", out.Line1, false}, {"line2", out.Line2, true}, {"city", out.City, false}} {
		if err := CheckText(field+"."+p.name, p.v, p.optional); err != nil {
			return Address{}, err
		}
		if n := utf8.RuneCountInString(p.v); n > maxAddressLine {
			return Address{}, apperr.Errorf(ErrInvalid, "%s.%s has %d characters; at most %d are allowed", field, p.name, n, maxAddressLine)
		}
	}
	switch {
	case out.State == "" && gstinState == "":
		return Address{}, apperr.Errorf(ErrInvalid, "%s.state is required: the two-digit GST state code, such as \"27\" for Maharashtra", field)
	case out.State == "":
		out.State = gstinState
		if !validState(out.State) {
			return Address{}, apperr.Errorf(ErrInvalid, "%s.state is required: the GSTIN's code %s names no state", field, gstinState)
		}
	case !validState(out.State):
		return Address{}, apperr.Errorf(ErrInvalid, "%s.state %q is not a GST state code; valid codes: %s", field, textcut.To(out.State, textcut.Echo), stateCodes)
	case gstinState != "" && validState(gstinState) && out.State != gstinState:
		return Address{}, apperr.Errorf(ErrInvalid, "%s.state %s is not the state of the buyer's GSTIN (%s): a registration's address lies in its own state", field, out.State, gstinState)
	}
	switch {
	case out.PIN == "" && out.State == foreignState:
	case out.PIN == "":
		return Address{}, apperr.Errorf(ErrInvalid, "%s.pin is required: the six-digit PIN code", field)
	case !isDigits(out.PIN, 6, 6) || out.PIN[0] == '0':
		return Address{}, apperr.Errorf(ErrInvalid, "%s.pin %q is not a PIN code: six digits, the first not 0", field, textcut.To(out.PIN, textcut.Echo))
	}
	return out, nil
}

// OneLine returns a as one line: "12 MG Road, Ashok Nagar, Bengaluru
// 560001, 29-Karnataka"; "" for the zero Address.
func (a Address) OneLine() string {
	if a == (Address{}) {
		return ""
	}
	parts := make([]string, 0, 4)
	for _, p := range []string{a.Line1, a.Line2, strings.TrimSpace(a.City + " " + a.PIN)} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	if a.State != "" {
		parts = append(parts, gst.StateLabel(a.State))
	}
	return strings.Join(parts, ", ")
}

// CheckParticulars returns ErrParticularsMissing, naming the fields and
// the rule, when d, a draft of a document of type dt, lacks what Rule 46
// asks of its recipient: (d) a registered buyer's address, for every
// type (Rules 49 to 55 ask the same of a registered recipient); (e) for a
// tax invoice to an unregistered buyer of taxable value
// B2CAddressThreshold or more, the buyer's name and address and the
// address of delivery (ShipTo). Below that (f) they are optional. It
// returns nil when nothing is missing.
func CheckParticulars(d *Draft, dt gst.DocType) error {
	b := d.Buyer
	if b != nil && b.GSTIN != "" {
		if b.Address == nil {
			return apperr.Errorf(ErrParticularsMissing, "buyer.address is required for a registered buyer (buyer.gstin %s): CGST Rule 46(d) asks for the recipient's name, address and GSTIN; send buyer.address with line1, city and pin (its state comes from the GSTIN)", b.GSTIN)
		}
		return nil
	}
	if dt != gst.Invoice || d.Totals.Taxable.LessThan(B2CAddressThreshold) {
		return nil
	}
	var missing []string
	if b == nil || b.Name == "" {
		missing = append(missing, "buyer.name")
	}
	if b == nil || b.Address == nil {
		missing = append(missing, "buyer.address")
	}
	if d.ShipTo == nil {
		missing = append(missing, "ship_to")
	}
	if len(missing) == 0 {
		return nil
	}
	return apperr.Errorf(ErrParticularsMissing, "%s required: CGST Rule 46(e) asks an invoice of ₹50,000 or more (this one: ₹%s) to an unregistered buyer for the buyer's name and address and the address of delivery with its state (ship_to; the buyer's address again when delivered there)",
		joinFields(missing), Money(d.Totals.Taxable))
}

// joinFields returns "a is", "a and b are", "a, b and c are".
func joinFields(fields []string) string {
	switch len(fields) {
	case 1:
		return fields[0] + " is"
	default:
		return strings.Join(fields[:len(fields)-1], ", ") + " and " + fields[len(fields)-1] + " are"
	}
}

// prepareParties validates req's buyer and delivery address into d
// (PrepareContent); sellerGSTIN is the seller's. It fails with
// gst.ErrInvalidGSTIN or ErrInvalid naming the field.
func prepareParties(d *Draft, req Request, sellerGSTIN gst.GSTIN) error {
	if req.Buyer != nil {
		b := Buyer{Name: strings.TrimSpace(req.Buyer.Name)}
		if req.Buyer.GSTIN != "" {
			g, err := gst.ParseGSTIN(req.Buyer.GSTIN)
			if err != nil {
				return apperr.Errorf(gst.ErrInvalidGSTIN, "buyer.gstin: %s", apperr.MessageOf(err))
			}
			b.GSTIN = string(g)
		}
		if err := CheckText("buyer.name", b.Name, b.GSTIN != ""); err != nil {
			return err
		}
		if b.GSTIN != "" && b.GSTIN == string(sellerGSTIN) {
			return apperr.Errorf(ErrInvalid, "buyer.gstin %s is the seller's own GSTIN: a registration does not invoice itself (for a transfer to another state, use that state's GSTIN)", b.GSTIN)
		}
		if req.Buyer.Address != nil {
			gstinState := ""
			if b.GSTIN != "" {
				gstinState = b.GSTIN[:2]
			}
			a, err := checkAddress("buyer.address", *req.Buyer.Address, gstinState)
			if err != nil {
				return err
			}
			b.Address = &a
		}
		d.Buyer = &b
	}
	if req.ShipTo != nil {
		st := ShipTo{Name: strings.TrimSpace(req.ShipTo.Name)}
		if err := CheckText("ship_to.name", st.Name, true); err != nil {
			return err
		}
		if req.ShipTo.Address == (Address{}) {
			return apperr.Errorf(ErrInvalid, "ship_to.address is required: the address of delivery, with line1, city, pin and state")
		}
		a, err := checkAddress("ship_to.address", req.ShipTo.Address, "")
		if err != nil {
			return err
		}
		st.Address = a
		d.ShipTo = &st
	}
	return nil
}

// AddressesJSON returns the JSON of b's address and of st, as invoices
// store them (ParseAddresses reads them); nil for one that is absent. It
// fails only when encoding/json does.
func AddressesJSON(b *Buyer, st *ShipTo) (buyerAddress, shipTo *string, err error) {
	text := func(v any) (*string, error) {
		j, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("invoice: address: %w", err)
		}
		s := string(j)
		return &s, nil
	}
	if b != nil && b.Address != nil {
		if buyerAddress, err = text(b.Address); err != nil {
			return nil, nil, err
		}
	}
	if st != nil {
		if shipTo, err = text(st); err != nil {
			return nil, nil, err
		}
	}
	return buyerAddress, shipTo, nil
}

// ParseAddresses reads the stored JSON of a buyer's address (buyerAddress)
// into b.Address and of an address of delivery (shipTo) into *st; a nil
// text leaves its field nil. b may be nil only when buyerAddress is. It
// fails when a text is not the JSON Sealed writes.
func ParseAddresses(b *Buyer, st **ShipTo, buyerAddress, shipTo *string) error {
	if buyerAddress != nil {
		var a Address
		if err := json.Unmarshal([]byte(*buyerAddress), &a); err != nil {
			return fmt.Errorf("buyer address: %w", err)
		}
		b.Address = &a
	}
	if shipTo != nil {
		var s ShipTo
		if err := json.Unmarshal([]byte(*shipTo), &s); err != nil {
			return fmt.Errorf("address of delivery: %w", err)
		}
		*st = &s
	}
	return nil
}
