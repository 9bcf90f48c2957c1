package document

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/internal/freetext"
	"github.com/invoiced/invoiced/internal/textcut"
	"github.com/shopspring/decimal"
)

// Limits on what one invoice may hold.
const (
	MaxItems          = 250
	MaxTextLen        = 300 // bytes, for descriptions, names and reasons
	maxQuantityDigits = 3
	maxPriceDigits    = 4
)

// Status of an invoice.
const (
	StatusIssued    = "issued"
	StatusCancelled = "cancelled"
)

// ValidRates are the GST rates an item may carry, in percent.
var ValidRates = []string{"0", "0.1", "0.25", "1", "1.5", "3", "5", "6", "7.5", "12", "18", "28", "40"}

// validRates holds ValidRates parsed, and validRatesList them as a message
// names them, both worked out once rather than for every item (the cost is
// in docs/bench.md, "The batch route's CPU per invoice").
var (
	validRates = func() []decimal.Decimal {
		out := make([]decimal.Decimal, len(ValidRates))
		for i, v := range ValidRates {
			out[i] = decimal.RequireFromString(v)
		}
		return out
	}()
	validRatesList = strings.Join(ValidRates, ", ")
	rateRule       = "one of " + validRatesList
)

// ItemInput is one line as the client sends it; numbers are decimal strings.
type ItemInput struct {
	Description string
	HSN         string
	Quantity    string
	UnitPrice   string
	GSTRate     string
}

// Buyer is the recipient; nil for an unregistered (B2C) buyer who gives
// nothing.
type Buyer struct {
	GSTIN string // empty for an unregistered buyer with a name
	Name  string
	// Address is the recipient's address (Rule 46(d), (e)); nil when
	// none was given. Its State is the GSTIN's when the request gave none.
	Address *Address
}

// Original is the invoice a credit or debit note corrects.
type Original struct {
	Number      string
	InvoiceDate time.Time
	// ExternalReason is set when the original was not issued by invoiced
	// (issued by other software, or before the seller moved here) and says
	// so; invoice.CheckOriginal then does not look for it. Empty otherwise.
	ExternalReason string
}

// Request is an invoice as asked for.
type Request struct {
	InvoiceDate   time.Time // civil date (00:00 UTC); zero means today in IST
	Buyer         *Buyer
	ShipTo        *ShipTo // the address of delivery; nil when none was given
	PlaceOfSupply string  // state code; empty means the seller's state
	Items         []ItemInput
	Original      *Original
}

// Item is a validated line with its server-side amounts.
type Item struct {
	Description string          `json:"description"`
	HSN         string          `json:"hsn"`
	Quantity    decimal.Decimal `json:"quantity"`
	UnitPrice   decimal.Decimal `json:"unit_price"`
	GSTRate     decimal.Decimal `json:"gst_rate"`
	Taxable     decimal.Decimal `json:"taxable"`
	CGST        decimal.Decimal `json:"cgst"`
	SGST        decimal.Decimal `json:"sgst"`
	IGST        decimal.Decimal `json:"igst"`
	Total       decimal.Decimal `json:"total"`
}

// Totals are the sums over an invoice's items.
type Totals struct {
	Taxable, CGST, SGST, IGST, Total decimal.Decimal
}

// Draft is a validated request with computed amounts, ready to be numbered.
// Drafts are made by Prepare; invoice.IssueTx numbers them. After Prepare, change
// only IdempotencyKey and RequestHash: Prepare also works out what the
// issuer needs from the content (items' JSON, chain record content), so
// that the batch transaction does not have to.
type Draft struct {
	InvoiceDate   time.Time
	Buyer         *Buyer
	ShipTo        *ShipTo
	PlaceOfSupply string
	Items         []Item
	Totals        Totals
	Original      *Original

	// IdempotencyKey, when set, is recorded with the invoice in the same
	// transaction; RequestHash identifies the request it answered.
	IdempotencyKey string
	RequestHash    []byte

	// sealed holds what the issuer needs from the draft that does not
	// depend on its number, worked out by Prepare in the caller's
	// goroutine so that the batch transaction does not: the items' JSON,
	// the totals as text and the content part of the chain record.
	sealed *Sealed
}

// Sealed is what the issuer stores of a draft besides its fields: the
// items' JSON, the addresses' JSON, the totals as text (Money) and the
// content part of its chain record.
type Sealed struct {
	ItemsJSON string
	// BuyerAddress and ShipTo are the JSON of the buyer's address and of
	// the address of delivery, as stored; nil when there is none.
	BuyerAddress, ShipTo *string
	Money                [5]string // taxable, cgst, sgst, igst, total
	Content              string
}

// Seal returns d's sealed data, computing it when Prepare did not. It
// fails only when the items or addresses cannot be written as JSON.
func (d *Draft) Seal() (*Sealed, error) {
	if d.sealed != nil {
		return d.sealed, nil
	}
	items, err := itemsJSON(d.Items)
	if err != nil {
		return nil, fmt.Errorf("invoice: items: %w", err)
	}
	sl := &Sealed{ItemsJSON: items, Money: MoneyOf(d.Totals)}
	if sl.BuyerAddress, sl.ShipTo, err = AddressesJSON(d.Buyer, d.ShipTo); err != nil {
		return nil, err
	}
	sl.Content = contentOf(d, sl.Money)
	return sl, nil
}

// Invoice is an issued (possibly later cancelled) document.
type Invoice struct {
	ID            int64
	PublicID      string
	SellerID      int64
	SeriesID      int64
	SeriesCode    string
	DocType       gst.DocType
	FY            gst.FY
	Serial        int64
	Number        string
	InvoiceDate   time.Time
	IssuedAt      time.Time
	Status        string
	Buyer         *Buyer
	ShipTo        *ShipTo
	PlaceOfSupply string
	Original      *Original
	Items         []Item
	Totals        Totals
	CancelledAt   *time.Time
	CancelReason  string
	// EInvoice is its registration at the IRP, as read with it.
	EInvoice EInvoice
}

// Policy says which invoice dates are acceptable.
type Policy struct {
	// BackdateDays is how many days before today (IST) an invoice date may
	// lie; 0 allows only today.
	BackdateDays int
}

var (
	numberRE  = regexp.MustCompile(`^[A-Z1-9][A-Z0-9/-]{0,15}$`)
	hundred   = decimal.NewFromInt(100)
	two       = decimal.NewFromInt(2)
	maxAmount = decimal.New(1, 13) // ₹10 lakh crore per line: far beyond any real invoice
)

// validState reports whether code is a GST state or territory code a place
// of supply may name: 01–38, 96 (other country) or 97 (other territory).
func validState(code string) bool {
	if !isDigits(code, 2, 2) {
		return false
	}
	n := int(code[0]-'0')*10 + int(code[1]-'0')
	return (n >= 1 && n <= 38) || n == 96 || n == 97
}

// stateCodes lists the place-of-supply codes validState accepts, for
// messages.
var stateCodes = func() string {
	var b strings.Builder
	for n := 1; n <= 97; n++ {
		if c := fmt.Sprintf("%02d", n); validState(c) {
			if b.Len() > 0 {
				b.WriteString(", ")
			}
			b.WriteString(c)
		}
	}
	return b.String() + " (96 other country, 97 other territory)"
}()

// Check returns gst.ErrInvalidDate when date (a civil date) lies outside
// p's window on the day now (IST): in the future, or more than
// BackdateDays before today; nil otherwise.
func (p Policy) Check(date, now time.Time) error {
	today := gst.DateIST(now)
	if date.After(today) {
		return apperr.Errorf(gst.ErrInvalidDate, "invoice_date %s is in the future (today in IST is %s)", date.Format(time.DateOnly), today.Format(time.DateOnly))
	}
	if earliest := today.AddDate(0, 0, -p.BackdateDays); date.Before(earliest) {
		return apperr.Errorf(gst.ErrInvalidDate, "invoice_date %s is more than %d days before today (%s): this server accepts dates from %s, %d days back, a window its operator sets (serve --backdate-days)",
			date.Format(time.DateOnly), p.BackdateDays, today.Format(time.DateOnly), earliest.Format(time.DateOnly), p.BackdateDays)
	}
	return nil
}

// Prepare validates req for seller's series s on the day now (IST) and
// computes its amounts. It returns ErrInvalid, gst.ErrInvalidGSTIN or
// gst.ErrInvalidDate with a message naming the offending field (a
// buyer GSTIN equal to the seller's is ErrInvalid), and
// ErrParticularsMissing for a recipient without what Rule 46 asks
// (CheckParticulars); it touches no database and consumes no number. A
// note's original is checked against the database by
// invoice.CheckOriginal.
func Prepare(req Request, seller gst.Seller, s gst.Series, now time.Time, p Policy) (Draft, error) {
	d, err := PrepareContent(req, seller, s, now)
	if err != nil {
		return Draft{}, err
	}
	if err := CheckParticulars(&d, s.DocType); err != nil {
		return Draft{}, err
	}
	if err := p.Check(d.InvoiceDate, now); err != nil {
		return Draft{}, err
	}
	return d, nil
}

// PrepareContent is Prepare without the invoice-date window (Policy) and
// without CheckParticulars: an invoice date of zero still becomes today
// (IST) at now. It is for a caller that has the window judged when the
// invoice is numbered (Config.DateWindow), so that a refusal for the date,
// which depends on the time it is judged, is given only once the request's
// idempotency key is claimed: never while an earlier attempt with the same
// key may still commit; and for one that judges the particulars itself
// (the API may accept an incomplete invoice with a warning, and the server
// stores an offline invoice already printed).
func PrepareContent(req Request, seller gst.Seller, s gst.Series, now time.Time) (Draft, error) {
	today := gst.DateIST(now)
	d := Draft{InvoiceDate: req.InvoiceDate}
	if d.InvoiceDate.IsZero() {
		d.InvoiceDate = today
	}
	if !gst.FYOf(d.InvoiceDate).Valid() {
		return Draft{}, apperr.Errorf(gst.ErrInvalidDate, "invoice_date %s is outside the supported financial years %s to %s", d.InvoiceDate.Format(time.DateOnly), gst.FY(gst.MinFY), gst.FY(gst.MaxFY))
	}
	if err := prepareParties(&d, req, seller.GSTIN); err != nil {
		return Draft{}, err
	}
	d.PlaceOfSupply = req.PlaceOfSupply
	if d.PlaceOfSupply == "" {
		d.PlaceOfSupply = seller.StateCode
	}
	if !validState(d.PlaceOfSupply) {
		return Draft{}, apperr.Errorf(ErrInvalid, "place_of_supply %q is not a GST state code; valid codes: %s", textcut.To(d.PlaceOfSupply, textcut.Echo), stateCodes)
	}
	interState := d.PlaceOfSupply != seller.StateCode
	if s.DocType.NeedsOriginal() {
		if req.Original == nil {
			return Draft{}, apperr.Errorf(ErrInvalid, "a %s must name the original invoice (original.number and original.invoice_date)", s.DocType)
		}
		o := Original{Number: strings.ToUpper(req.Original.Number), InvoiceDate: req.Original.InvoiceDate,
			ExternalReason: strings.TrimSpace(req.Original.ExternalReason)}
		if req.Original.ExternalReason != "" {
			if err := CheckText("original.reason", o.ExternalReason, false); err != nil {
				return Draft{}, err
			}
		}
		if !numberRE.MatchString(o.Number) {
			return Draft{}, apperr.Errorf(ErrInvalid, "original.number %q is not a valid document number", req.Original.Number)
		}
		if o.InvoiceDate.IsZero() || o.InvoiceDate.After(d.InvoiceDate) {
			return Draft{}, apperr.Errorf(ErrInvalid, "original.invoice_date must be given and not after the note's date")
		}
		d.Original = &o
	} else if req.Original != nil {
		return Draft{}, apperr.Errorf(ErrInvalid, "original is only for credit notes, debit notes and revised invoices, not a %s", s.DocType)
	}
	if len(req.Items) == 0 {
		return Draft{}, apperr.Errorf(ErrInvalid, "items must hold at least one item")
	}
	if len(req.Items) > MaxItems {
		return Draft{}, apperr.Errorf(ErrInvalid, "items holds %d items; at most %d are allowed", len(req.Items), MaxItems)
	}
	d.Items = make([]Item, 0, len(req.Items))
	var sums paise
	exact := true // every line's amounts were worked out in paise
	for i, in := range req.Items {
		it, a, ok, err := prepareItem(in, interState)
		if err != nil {
			return Draft{}, apperr.Errorf(ErrInvalid, "items[%d].%s", i, apperr.MessageOf(err))
		}
		d.Items = append(d.Items, it)
		exact = exact && ok
		sums = paise{taxable: sums.taxable + a.taxable, cgst: sums.cgst + a.cgst, sgst: sums.sgst + a.sgst,
			igst: sums.igst + a.igst, total: sums.total + a.total}
	}
	if exact {
		d.Totals = totalsOf(sums, interState)
	} else {
		d.Totals = Totals{Taxable: decimal.Zero, CGST: decimal.Zero, SGST: decimal.Zero, IGST: decimal.Zero, Total: decimal.Zero}
		for _, it := range d.Items {
			d.Totals.Taxable = d.Totals.Taxable.Add(it.Taxable)
			d.Totals.CGST = d.Totals.CGST.Add(it.CGST)
			d.Totals.SGST = d.Totals.SGST.Add(it.SGST)
			d.Totals.IGST = d.Totals.IGST.Add(it.IGST)
			d.Totals.Total = d.Totals.Total.Add(it.Total)
		}
	}
	var err error
	if d.sealed, err = d.Seal(); err != nil {
		return Draft{}, err
	}
	return d, nil
}

// CheckText returns ErrInvalid naming field when the free text v is empty
// (unless optional), longer than MaxTextLen bytes, or holds control, bidi
// or invisible characters (freetext.Problem).
func CheckText(field, v string, optional bool) error {
	switch {
	case v == "" && !optional:
		return apperr.Errorf(ErrInvalid, "%s must not be empty", field)
	case len(v) > MaxTextLen:
		return apperr.Errorf(ErrInvalid, "%s is longer than %d bytes", field, MaxTextLen)
	}
	if p := freetext.Problem(v); p != "" {
		return apperr.Errorf(ErrInvalid, "%s holds %s; control, bidi and invisible characters are refused", field, p)
	}
	return nil
}

// prepareItem validates one line and computes it; errors name the field
// relative to the item ("quantity …"). When its amounts were worked out
// in paise (linePaise), it returns them too, with ok set; otherwise they
// were worked out with decimals.
func prepareItem(in ItemInput, interState bool) (it Item, a paise, ok bool, err error) {
	desc := strings.TrimSpace(in.Description)
	if err := CheckText("description", desc, false); err != nil {
		return Item{}, paise{}, false, err
	}
	if !isDigits(in.HSN, 4, 8) {
		return Item{}, paise{}, false, apperr.Errorf(ErrInvalid, "hsn %q must be 4 to 8 digits", in.HSN)
	}
	qty, err := parseAmount("quantity", in.Quantity, maxQuantityDigits, "greater than zero")
	if err != nil {
		return Item{}, paise{}, false, err
	}
	if !qty.IsPositive() {
		return Item{}, paise{}, false, apperr.Errorf(ErrInvalid, "quantity must be greater than zero")
	}
	price, err := parseAmount("unit_price", in.UnitPrice, maxPriceDigits, "zero or more")
	if err != nil {
		return Item{}, paise{}, false, err
	}
	rate, err := parseAmount("gst_rate", in.GSTRate, 2, rateRule)
	if err != nil {
		return Item{}, paise{}, false, err
	}
	it = Item{Description: desc, HSN: in.HSN, Quantity: qty, UnitPrice: price, GSTRate: rate}
	if a, ok := linePaise(in.Quantity, in.UnitPrice, in.GSTRate, interState); ok {
		it.setAmounts(a, interState)
		return it, a, true, nil
	}
	if !validRate(rate) {
		return Item{}, paise{}, false, apperr.Errorf(ErrInvalid, "gst_rate %s is not a GST rate (one of %s)", in.GSTRate, validRatesList)
	}
	if err := it.decimalAmounts(interState); err != nil {
		return Item{}, paise{}, false, err
	}
	return it, paise{}, false, nil
}

// decimalAmounts works out it's amounts from its quantity, price and rate
// with decimals. It fails when the taxable value exceeds maxAmount.
func (it *Item) decimalAmounts(interState bool) error {
	it.Taxable = it.Quantity.Mul(it.UnitPrice).Round(2)
	if it.Taxable.GreaterThan(maxAmount) {
		return apperr.Errorf(ErrInvalid, "quantity × unit_price exceeds %s", maxAmount)
	}
	zero := decimal.Zero
	if interState {
		it.IGST = it.Taxable.Mul(it.GSTRate).Div(hundred).Round(2)
		it.CGST, it.SGST = zero, zero
	} else {
		half := it.Taxable.Mul(it.GSTRate).Div(hundred).Div(two).Round(2)
		it.CGST, it.SGST, it.IGST = half, half, zero
	}
	it.Total = it.Taxable.Add(it.CGST).Add(it.SGST).Add(it.IGST)
	return nil
}

// parseAmount accepts a plain non-negative decimal string ("12", "0.50"),
// with at most places decimals: no sign, exponent, spaces or separators.
// A negative number is refused with the field's rule ("must be rule").
func parseAmount(field, s string, places int, rule string) (decimal.Decimal, error) {
	if strings.HasPrefix(s, "-") && isAmount(s[1:]) {
		return decimal.Decimal{}, apperr.Errorf(ErrInvalid, "%s %q must be %s", field, textcut.To(s, textcut.Echo), rule)
	}
	if !isAmount(s) {
		return decimal.Decimal{}, apperr.Errorf(ErrInvalid, "%s %q must be a decimal string such as \"10.50\"", field, textcut.To(s, textcut.Echo))
	}
	if i := strings.IndexByte(s, '.'); i >= 0 && len(s)-i-1 > places {
		return decimal.Decimal{}, apperr.Errorf(ErrInvalid, "%s %q has more than %d decimal places", field, textcut.To(s, textcut.Echo), places)
	}
	d, err := decimal.NewFromString(s)
	if err != nil {
		return decimal.Decimal{}, apperr.Errorf(ErrInvalid, "%s %q is not a decimal number", field, textcut.To(s, textcut.Echo))
	}
	return d, nil
}

func validRate(r decimal.Decimal) bool {
	for _, v := range validRates {
		if v.Equal(r) {
			return true
		}
	}
	return false
}

// String returns the number, for logs.
func (inv Invoice) String() string { return fmt.Sprintf("%s (%s)", inv.Number, inv.FY) }
