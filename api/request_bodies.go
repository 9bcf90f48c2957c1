package api

import (
	"encoding/json"
	"errors"
	"github.com/invoiced/invoiced/einvoice"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/apperr"
	"github.com/invoiced/invoiced/invoice"
)

// This file holds the JSON bodies of the issue, series and cancel requests
// and their strict decoding into what the handlers take.

// jsonDecimal is an amount, quantity or rate: it must be sent as a JSON
// string. A JSON number is remembered (not refused by the decoder) so the
// handler can name the field in its 422.
type jsonDecimal struct {
	s      string
	number bool // sent as a JSON number
}

// UnmarshalJSON accepts a string (kept as is), null (left empty) and a
// number (flagged); any other JSON value is an error.
func (d *jsonDecimal) UnmarshalJSON(b []byte) error {
	switch {
	case len(b) > 0 && b[0] == '"':
		return json.Unmarshal(b, &d.s)
	case string(b) == "null":
		return nil
	case len(b) > 0 && (b[0] == '-' || '0' <= b[0] && b[0] <= '9'):
		d.number = true
		return nil
	}
	return apperr.Errorf(document.ErrInvalid, "amounts, quantities and rates must be decimal strings such as \"10.50\"")
}

// issueBody is the JSON body of POST /v1/series/{code}/invoices.
type issueBody struct {
	InvoiceDate   *string       `json:"invoice_date"`
	Buyer         *buyerBody    `json:"buyer"`
	ShipTo        *shipToBody   `json:"ship_to"`
	PlaceOfSupply string        `json:"place_of_supply"`
	Items         []itemBody    `json:"items"`
	Original      *originalBody `json:"original"`
}

type buyerBody struct {
	GSTIN   string       `json:"gstin"`
	Name    string       `json:"name"`
	Address *addressBody `json:"address"`
}

// addressBody is an address as a request sends it (document.Address).
type addressBody struct {
	Line1 string `json:"line1"`
	Line2 string `json:"line2"`
	City  string `json:"city"`
	PIN   string `json:"pin"`
	State string `json:"state"`
}

// shipToBody is the address of delivery (document.ShipTo).
type shipToBody struct {
	Name    string       `json:"name"`
	Address *addressBody `json:"address"`
}

// address returns a as the document takes it; the zero Address for nil.
func (a *addressBody) address() document.Address {
	if a == nil {
		return document.Address{}
	}
	return document.Address{Line1: a.Line1, Line2: a.Line2, City: a.City, PIN: a.PIN, State: a.State}
}

type originalBody struct {
	Number      string `json:"number"`
	InvoiceDate string `json:"invoice_date"`
	External    bool   `json:"external"`
	Reason      string `json:"reason"`
}

type itemBody struct {
	Description string      `json:"description"`
	HSN         string      `json:"hsn"`
	Quantity    jsonDecimal `json:"quantity"`
	UnitPrice   jsonDecimal `json:"unit_price"`
	GSTRate     jsonDecimal `json:"gst_rate"`
}

// decodeIssueRequest decodes the body of an issue request strictly. It
// fails with a 400 error for malformed JSON, unknown fields or trailing
// data, and with document.ErrInvalid (422) for numbers sent as JSON numbers,
// too many items or values of the wrong type, and gst.ErrInvalidDate for
// a date not written YYYY-MM-DD.
func decodeIssueRequest(body []byte) (document.Request, error) {
	var b issueBody
	if err := decodeStrict(body, &b, document.ErrInvalid, document.MaxItems); err != nil {
		if errors.Is(err, errTooManyElements) {
			err = apperr.Errorf(document.ErrInvalid, "items holds more than %d items, the most allowed", document.MaxItems)
		}
		return document.Request{}, err
	}
	return b.request()
}

// request checks what decoding left to check (amounts sent as JSON
// numbers, dates, the item count) and returns the issue request b asks
// for; it fails like decodeIssueRequest.
func (b *issueBody) request() (document.Request, error) {
	var req document.Request
	if b.InvoiceDate != nil {
		d, err := gst.ParseDate(*b.InvoiceDate)
		if err != nil {
			return document.Request{}, apperr.Errorf(gst.ErrInvalidDate, "invoice_date: %s", apperr.MessageOf(err))
		}
		req.InvoiceDate = d
	}
	if b.Buyer != nil {
		req.Buyer = &document.Buyer{GSTIN: b.Buyer.GSTIN, Name: b.Buyer.Name}
		if b.Buyer.Address != nil {
			a := b.Buyer.Address.address()
			req.Buyer.Address = &a
		}
	}
	if b.ShipTo != nil {
		req.ShipTo = &document.ShipTo{Name: b.ShipTo.Name, Address: b.ShipTo.Address.address()}
	}
	req.PlaceOfSupply = b.PlaceOfSupply
	if b.Original != nil {
		if b.Original.External != (b.Original.Reason != "") {
			return document.Request{}, apperr.Errorf(document.ErrInvalid, "original.external and original.reason go together: an original issued outside invoiced is sent with \"external\": true and a \"reason\"")
		}
		req.Original = &document.Original{Number: b.Original.Number, ExternalReason: b.Original.Reason}
		if b.Original.InvoiceDate != "" {
			d, err := gst.ParseDate(b.Original.InvoiceDate)
			if err != nil {
				return document.Request{}, apperr.Errorf(gst.ErrInvalidDate, "original.invoice_date: %s", apperr.MessageOf(err))
			}
			req.Original.InvoiceDate = d
		}
	}
	if len(b.Items) > document.MaxItems {
		return document.Request{}, apperr.Errorf(document.ErrInvalid, "items holds %d items; at most %d are allowed", len(b.Items), document.MaxItems)
	}
	req.Items = make([]document.ItemInput, len(b.Items))
	for i, it := range b.Items {
		for _, f := range [...]struct {
			name string
			d    jsonDecimal
		}{{"quantity", it.Quantity}, {"unit_price", it.UnitPrice}, {"gst_rate", it.GSTRate}} {
			if f.d.number {
				return document.Request{}, apperr.Errorf(document.ErrInvalid, "items[%d].%s must be sent as a decimal string such as \"10.50\", not a JSON number (numbers lose paise)", i, f.name)
			}
		}
		req.Items[i] = document.ItemInput{Description: it.Description, HSN: it.HSN,
			Quantity: it.Quantity.s, UnitPrice: it.UnitPrice.s, GSTRate: it.GSTRate.s}
	}
	return req, nil
}

// seriesBody is the JSON body of POST /v1/series.
type seriesBody struct {
	Code    string       `json:"code"`
	DocType string       `json:"doc_type"`
	Format  string       `json:"format"`
	Shop    string       `json:"shop"`
	Opening *openingBody `json:"opening"`
}

// openingBody declares where the series stood before invoiced.
type openingBody struct {
	FY              string `json:"fy"`
	LastSerial      int64  `json:"last_serial"`
	LastInvoiceDate string `json:"last_invoice_date"`
	LastNumber      string `json:"last_number"`
}

func decodeSeriesRequest(body []byte) (seriesBody, error) {
	var b seriesBody
	err := decodeStrict(body, &b, gst.ErrInvalidSeries, 0)
	if errors.Is(err, errTooManyElements) {
		err = apperr.Errorf(gst.ErrInvalidSeries, "a series request holds no arrays")
	}
	return b, err
}

// opening returns the declared opening, nil when there is none. It fails
// with gst.ErrInvalidDate for a year or date not written as expected.
func (b seriesBody) opening() (*invoice.Opening, error) {
	if b.Opening == nil {
		return nil, nil
	}
	fy, err := gst.ParseFY(b.Opening.FY)
	if err != nil {
		return nil, apperr.Errorf(gst.ErrInvalidDate, "opening.fy: %s", apperr.MessageOf(err))
	}
	d, err := gst.ParseDate(b.Opening.LastInvoiceDate)
	if err != nil {
		return nil, apperr.Errorf(gst.ErrInvalidDate, "opening.last_invoice_date: %s", apperr.MessageOf(err))
	}
	return &invoice.Opening{FY: fy, LastSerial: b.Opening.LastSerial, LastInvoiceDate: d, LastNumber: b.Opening.LastNumber}, nil
}

// cancelBody is the JSON body of POST /v1/invoices/{id}/cancel.
type cancelBody struct {
	Reason string `json:"reason"`
	// EInvoiceReason is the IRP's reason for cancelling the invoice's
	// IRN, when it has one (eInvoiceReasons); empty means "other".
	EInvoiceReason string `json:"e_invoice_reason"`
}

// eInvoiceReasons are the values of cancelBody.EInvoiceReason and the
// IRP's codes for them (CnlRsn).
var eInvoiceReasons = map[string]einvoice.CancelReason{
	"duplicate": einvoice.CancelDuplicate, "data_entry_mistake": einvoice.CancelDataEntry,
	"order_cancelled": einvoice.CancelOrderCancelled, "other": einvoice.CancelOther,
}

// eInvoiceReason returns the IRP's code of b's e_invoice_reason (other
// when none), or document.ErrInvalid naming the values.
func (b cancelBody) eInvoiceReason() (einvoice.CancelReason, error) {
	if b.EInvoiceReason == "" {
		return einvoice.CancelOther, nil
	}
	if r, ok := eInvoiceReasons[b.EInvoiceReason]; ok {
		return r, nil
	}
	return 0, apperr.Errorf(document.ErrInvalid, "e_invoice_reason %q is not one of duplicate, data_entry_mistake, order_cancelled, other", clip(b.EInvoiceReason))
}

func decodeCancelRequest(body []byte) (cancelBody, error) {
	var b cancelBody
	err := decodeStrict(body, &b, document.ErrInvalid, 0)
	if errors.Is(err, errTooManyElements) {
		err = apperr.Errorf(document.ErrInvalid, "reason must be a string")
	}
	return b, err
}
