package api

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/einvoice"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/series"
	"github.com/labstack/echo/v4"
	"github.com/shopspring/decimal"
)

// JSON shapes of answers. Rendering is deterministic: the same invoice
// always gives the same bytes (an idempotent replay relies on it).

type invoiceJSON struct {
	ID            string        `json:"id"`
	Number        string        `json:"number"`
	Serial        int64         `json:"serial"`
	FY            string        `json:"fy"`
	Series        string        `json:"series"`
	DocType       string        `json:"doc_type"`
	InvoiceDate   string        `json:"invoice_date"`
	IssuedAt      string        `json:"issued_at"`
	Status        string        `json:"status"`
	PublicID      string        `json:"public_id"`
	ReceiptURL    string        `json:"receipt_url"`
	Buyer         *buyerJSON    `json:"buyer,omitempty"`
	ShipTo        *shipToJSON   `json:"ship_to,omitempty"`
	PlaceOfSupply string        `json:"place_of_supply"`
	Original      *originalJSON `json:"original,omitempty"`
	Totals        totalsJSON    `json:"totals"`
	Items         []itemJSON    `json:"items"`
	CancelledAt   string        `json:"cancelled_at,omitempty"`
	CancelReason  string        `json:"cancel_reason,omitempty"`
	EInvoice      *eInvoiceJSON `json:"e_invoice,omitempty"`
}

// eInvoiceJSON is an invoice's registration at the IRP
// (docs/e-invoice.md): in every answer that carries an invoice.
type eInvoiceJSON struct {
	Status       string `json:"status"`
	IRN          string `json:"irn,omitempty"`
	AckNo        string `json:"ack_no,omitempty"`
	AckDate      string `json:"ack_date,omitempty"`
	SignedQRCode string `json:"signed_qr_code,omitempty"`
	Error        string `json:"error,omitempty"`
}

// cancelledJSON is what a cancel answers a key without the read scope.
type cancelledJSON struct {
	ID          string `json:"id"`
	Number      string `json:"number"`
	Status      string `json:"status"`
	CancelledAt string `json:"cancelled_at"`
}

type buyerJSON struct {
	GSTIN   string       `json:"gstin,omitempty"`
	Name    string       `json:"name,omitempty"`
	Address *addressJSON `json:"address,omitempty"`
}

// addressJSON is an address as answers write it: line2 and pin only when
// there are, the state always (a registered buyer's from its GSTIN).
type addressJSON struct {
	Line1 string `json:"line1"`
	Line2 string `json:"line2,omitempty"`
	City  string `json:"city"`
	PIN   string `json:"pin,omitempty"`
	State string `json:"state"`
}

type shipToJSON struct {
	Name    string      `json:"name,omitempty"`
	Address addressJSON `json:"address"`
}

func renderAddress(a document.Address) addressJSON {
	return addressJSON{Line1: a.Line1, Line2: a.Line2, City: a.City, PIN: a.PIN, State: a.State}
}

type originalJSON struct {
	Number      string `json:"number"`
	InvoiceDate string `json:"invoice_date"`
	External    bool   `json:"external,omitempty"`
	Reason      string `json:"reason,omitempty"`
}

type totalsJSON struct {
	Taxable string `json:"taxable"`
	CGST    string `json:"cgst"`
	SGST    string `json:"sgst"`
	IGST    string `json:"igst"`
	Total   string `json:"total"`
}

type itemJSON struct {
	Description string `json:"description"`
	HSN         string `json:"hsn"`
	Quantity    string `json:"quantity"`
	UnitPrice   string `json:"unit_price"`
	GSTRate     string `json:"gst_rate"`
	Taxable     string `json:"taxable"`
	CGST        string `json:"cgst"`
	SGST        string `json:"sgst"`
	IGST        string `json:"igst"`
	Total       string `json:"total"`
}

// invoiceListJSON is a list of invoices: GET /v1/invoices, and the pages
// of GET /v1/series/{code}/invoices (which pages.go writes item by item).
type invoiceListJSON struct {
	Invoices   []invoiceJSON `json:"invoices"`
	NextCursor *string       `json:"next_cursor"`
}

// eventListJSON is a page of GET /v1/events, as pages.go writes it.
type eventListJSON struct {
	Events    []eventJSON `json:"events"`
	NextAfter *string     `json:"next_after"`
}

type seriesJSON struct {
	Code      string     `json:"code"`
	DocType   string     `json:"doc_type"`
	Format    string     `json:"format"`
	Shop      string     `json:"shop"`
	Capacity  int64      `json:"capacity"`
	CreatedAt string     `json:"created_at"`
	Years     []yearJSON `json:"years"`
}

type yearJSON struct {
	FY              string `json:"fy"`
	LastSerial      int64  `json:"last_serial"`
	LastNumber      string `json:"last_number"`
	LastInvoiceDate string `json:"last_invoice_date"`
}

type seriesListJSON struct {
	Series []seriesJSON `json:"series"`
}

// price renders a unit price with at least two decimals and no trailing
// zeros beyond them: "10.00", "10.125".
func price(d decimal.Decimal) string {
	s := d.String()
	if i := strings.IndexByte(s, '.'); i >= 0 && len(s)-i-1 > 2 {
		return s
	}
	return document.Money(d)
}

func date(t time.Time) string { return t.Format(time.DateOnly) }

// invoiceKey is an invoice's id in the API: its series code, financial
// year and serial, "CH1-2026-7". It is unique per seller, says nothing a
// seller does not know from the number itself, and nothing about other
// sellers (the database's own ids are global, so they told each seller
// how many invoices everyone else had issued in between).
func invoiceKey(inv document.Invoice) string {
	return document.Key(inv.SeriesCode, inv.FY, inv.Serial)
}

// renderInvoice returns inv as the API shows it; its receipt_url is
// absolute under publicURL, or a path when publicURL is "".
func renderInvoice(inv document.Invoice, publicURL string) invoiceJSON {
	out := invoiceJSON{
		ID:            invoiceKey(inv),
		Number:        inv.Number,
		Serial:        inv.Serial,
		FY:            inv.FY.String(),
		Series:        inv.SeriesCode,
		DocType:       string(inv.DocType),
		InvoiceDate:   date(inv.InvoiceDate),
		IssuedAt:      document.Timestamp(inv.IssuedAt),
		Status:        inv.Status,
		PublicID:      inv.PublicID,
		ReceiptURL:    publicURL + "/r/" + inv.PublicID,
		PlaceOfSupply: inv.PlaceOfSupply,
		Totals: totalsJSON{
			Taxable: document.Money(inv.Totals.Taxable), CGST: document.Money(inv.Totals.CGST), SGST: document.Money(inv.Totals.SGST),
			IGST: document.Money(inv.Totals.IGST), Total: document.Money(inv.Totals.Total),
		},
		Items:        make([]itemJSON, len(inv.Items)),
		CancelReason: inv.CancelReason,
	}
	if inv.Buyer != nil {
		out.Buyer = &buyerJSON{GSTIN: inv.Buyer.GSTIN, Name: inv.Buyer.Name}
		if a := inv.Buyer.Address; a != nil {
			ra := renderAddress(*a)
			out.Buyer.Address = &ra
		}
	}
	if st := inv.ShipTo; st != nil {
		out.ShipTo = &shipToJSON{Name: st.Name, Address: renderAddress(st.Address)}
	}
	if inv.Original != nil {
		out.Original = &originalJSON{Number: inv.Original.Number, InvoiceDate: date(inv.Original.InvoiceDate),
			External: inv.Original.ExternalReason != "", Reason: inv.Original.ExternalReason}
	}
	if inv.CancelledAt != nil {
		out.CancelledAt = document.Timestamp(*inv.CancelledAt)
	}
	if e := inv.EInvoice; e.Status != "" {
		out.EInvoice = &eInvoiceJSON{Status: string(e.Status), IRN: e.IRN, AckNo: e.AckNo, SignedQRCode: e.SignedQRCode, Error: e.Error}
		if !e.AckDate.IsZero() {
			out.EInvoice.AckDate = document.Timestamp(e.AckDate)
		}
	}
	for i, it := range inv.Items {
		out.Items[i] = itemJSON{
			Description: it.Description, HSN: it.HSN,
			Quantity: it.Quantity.String(), UnitPrice: price(it.UnitPrice), GSTRate: it.GSTRate.String(),
			Taxable: document.Money(it.Taxable), CGST: document.Money(it.CGST), SGST: document.Money(it.SGST), IGST: document.Money(it.IGST), Total: document.Money(it.Total),
		}
	}
	return out
}

// asIssued returns inv as it was when issued: status issued, no
// cancellation, its registration at the IRP pending (or not applicable,
// when it needs none). A replay of the issue request answers with it.
func asIssued(inv document.Invoice) document.Invoice {
	inv.Status, inv.CancelledAt, inv.CancelReason = document.StatusIssued, nil, ""
	if inv.EInvoice.Status != einvoice.StatusNotApplicable {
		inv.EInvoice = document.EInvoice{Status: einvoice.StatusPending}
	}
	return inv
}

// fresh returns inv, just issued by seller, with the registration status
// it starts with: pending when the seller e-invoices and inv needs an IRN
// (as the seller was read with the API key, at most Config.KeyCacheTTL
// ago; GET reads it from the database), else not_applicable.
func fresh(seller gst.Seller, inv document.Invoice) document.Invoice {
	inv.EInvoice = document.EInvoice{Status: einvoice.InitialStatus(seller.EInvoicing, inv)}
	return inv
}

func renderSeries(s gst.Series, years []series.Usage) seriesJSON {
	out := seriesJSON{
		Code: s.Code, DocType: string(s.DocType), Format: s.Format.String(), Shop: s.Shop,
		Capacity: s.Format.Capacity(), CreatedAt: document.Timestamp(s.CreatedAt),
		Years: make([]yearJSON, len(years)),
	}
	for i, y := range years {
		out.Years[i] = yearJSON{FY: y.FY.String(), LastSerial: y.LastSerial, LastNumber: y.LastNumber, LastInvoiceDate: date(y.LastInvoiceDate)}
	}
	return out
}

// writeJSON writes v as the JSON body with status. encoding/json writes
// struct fields in declaration order, so equal values give equal bytes.
func writeJSON(c echo.Context, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeJSONBytes(c, status, b)
}

// writeJSONBytes writes b, a JSON document, as the body with status. Its
// bytes count against the byte budget until the request ends; the work it
// answers is done, so it is never refused (budget.go).
func writeJSONBytes(c echo.Context, status int, b []byte) error {
	ledgerOf(c.Request().Context()).hold(int64(cap(b)))
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.Blob(status, echo.MIMEApplicationJSON, b)
}
