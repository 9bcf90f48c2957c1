package api

import (
	"bytes"
	"embed"
	"errors"
	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/einvoice"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/inwords"
	"github.com/invoiced/invoiced/internal/qrsvg"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/sellers"
	"github.com/labstack/echo/v4"
	"github.com/shopspring/decimal"
	"html/template"
	"net/http"
	"time"
)

const mimeHTML = "text/html; charset=utf-8"

// The printable receipt page, GET /r/{public_id}: no key needed, the
// unguessable public id is the capability. Free text is refused on input
// when it holds bidi controls (internal/freetext); each piece is also set
// in its own <bdi>, so that text stored before that rule cannot reorder
// what follows it on the page.

// templateFS holds the receipt page and its error page.
//
//go:embed templates/*.html
var templateFS embed.FS

var receiptTmpl = template.Must(template.ParseFS(templateFS, "templates/receipt.html"))

var receiptErrorTmpl = template.Must(template.ParseFS(templateFS, "templates/receipt_error.html"))

type receiptView struct {
	Title         string
	Seller        gst.Seller
	SellerState   string // "27-Maharashtra"
	Inv           invoiceJSON
	Lines         []receiptLine
	ReverseCharge bool   // Rule 46(p); invoiced issues no reverse-charge invoices, so always false
	InvoiceDate   string // "29 Nov 2026"
	IssuedAt      string // "29 Nov 2026, 10:00 IST"
	PlaceOfSupply string // "29-Karnataka"
	BuyerState    string // of the buyer's address, "29-Karnataka"; "" without one
	ShipToState   string // of the address of delivery; "" without one
	InterState    bool   // IGST rather than CGST + SGST
	InWords       string // the total
	Cancelled     bool
	CancelledAt   string // IST, as IssuedAt; "" unless cancelled
	Thermal       bool   // laid out for 80 mm roll paper
	EInvoice      *receiptEInvoice
}

// receiptEInvoice is what a receipt prints of the invoice's registration
// at the IRP (Rule 48(4)): the IRN, Ack No. and date and the signed QR
// code drawn, or a note while there is none.
type receiptEInvoice struct {
	IRN, AckNo, AckDate string
	QR                  template.HTML // the signed QR code as an inline <svg>
	Cancelled           bool
	Note                string
}

// receiptEInvoiceOf returns what the receipt of inv prints of its
// registration, nil for an invoice that needs none. It fails only when the
// IRP's signed QR code cannot be drawn.
func receiptEInvoiceOf(e document.EInvoice) (*receiptEInvoice, error) {
	out := &receiptEInvoice{IRN: e.IRN, AckNo: e.AckNo, Cancelled: e.Status == einvoice.StatusCancelled}
	if !e.AckDate.IsZero() {
		out.AckDate = istTime(e.AckDate)
	}
	switch {
	case e.Status == einvoice.StatusNotApplicable || e.Status == "":
		return nil, nil
	case e.IRN != "" && e.SignedQRCode != "":
		svg, err := qrsvg.SVG(e.SignedQRCode, "the IRP's signed QR code of IRN "+e.IRN)
		if err != nil {
			return nil, err
		}
		out.QR = template.HTML(svg) // drawn by qrsvg: no text of the caller's
	case e.IRN != "":
		// Recovered from the IRP's duplicate answer without its signed QR.
	case e.Status == einvoice.StatusPending:
		out.Note = "IRN pending: registration at the IRP is in progress; this is not yet a valid tax invoice (Rule 48(4))"
	case e.Status == einvoice.StatusFailed:
		out.Note = "not registered at the IRP: " + e.Error
	default:
		return nil, nil
	}
	return out, nil
}

// receiptLine is one item as the receipt prints it: each tax head with
// its own rate and amount (Rule 46(k)/(l)). Within a state the GST rate is
// split evenly between CGST and SGST (5 % is 2.5 % + 2.5 %).
type receiptLine struct {
	itemJSON
	CGSTRate, SGSTRate, IGSTRate string
}

// receiptLines returns inv's items as receipt lines, the rates split for an
// intra-state supply and whole for an inter-state one.
func receiptLines(items []itemJSON, inv document.Invoice, interState bool) []receiptLine {
	out := make([]receiptLine, len(items))
	for i, it := range items {
		out[i].itemJSON = it
		rate := inv.Items[i].GSTRate
		if interState {
			out[i].IGSTRate = rate.String()
		} else {
			half := rate.Div(decimal.NewFromInt(2)).String()
			out[i].CGSTRate, out[i].SGSTRate = half, half
		}
	}
	return out
}

// istTime returns t as a receipt writes an instant: "29 Nov 2026, 10:00 IST".
func istTime(t time.Time) string { return t.In(gst.IST).Format("2 Jan 2006, 15:04") + " IST" }

// titles names each document type on its receipt.
var titles = map[gst.DocType]string{
	gst.Invoice:        "Tax Invoice",
	gst.BillOfSupply:   "Bill of Supply",
	gst.CreditNote:     "Credit Note",
	gst.DebitNote:      "Debit Note",
	gst.RevisedInvoice: "Revised Invoice",
	gst.ReceiptVoucher: "Receipt Voucher",
	gst.PaymentVoucher: "Payment Voucher",
	gst.RefundVoucher:  "Refund Voucher",
}

// receipt serves GET /r/{public_id}[?paper=a4|80mm]: the printable receipt
// (Rule 46's particulars; laid out for A4, or for 80 mm thermal roll paper
// with paper=80mm), or an HTML error page (404 for an unknown id).
func (s *Server) receipt(c echo.Context) error {
	h := c.Response().Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Robots-Tag", "noindex")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
	id := c.Param("public_id")
	if _, ok := document.ParsePublicID(id); !ok {
		return s.receiptError(c, invoice.ErrNotFound)
	}
	ctx := c.Request().Context()
	peer := peerAddr(c.Request())
	if !s.failures.allow(peer, s.now()) {
		return s.receiptError(c, errRateLimited)
	}
	inv, err := invoice.GetByPublicID(ctx, s.pool, id)
	if errors.Is(err, invoice.ErrNotFound) {
		s.failures.charge(peer, s.now())
	}
	if err != nil {
		return s.receiptError(c, err)
	}
	seller, err := sellers.ByID(ctx, s.pool, inv.SellerID)
	if err != nil {
		return s.receiptError(c, err)
	}
	title := titles[inv.DocType]
	if title == "" {
		title = inv.DocType.Nature()
	}
	var buf bytes.Buffer
	v := receiptView{Title: title, Seller: seller, SellerState: gst.StateLabel(seller.StateCode), Inv: renderInvoice(inv, ""),
		InvoiceDate: inv.InvoiceDate.Format("2 Jan 2006"), IssuedAt: istTime(inv.IssuedAt),
		PlaceOfSupply: gst.StateLabel(inv.PlaceOfSupply), InterState: inv.PlaceOfSupply != seller.StateCode,
		InWords: inwords.Rupees(inv.Totals.Total), Cancelled: inv.Status == document.StatusCancelled,
		Thermal: c.QueryParam("paper") == "80mm"}
	v.Lines = receiptLines(v.Inv.Items, inv, v.InterState)
	if inv.Buyer != nil && inv.Buyer.Address != nil {
		v.BuyerState = gst.StateLabel(inv.Buyer.Address.State)
	}
	if inv.ShipTo != nil {
		v.ShipToState = gst.StateLabel(inv.ShipTo.Address.State)
	}
	if inv.CancelledAt != nil {
		v.CancelledAt = istTime(*inv.CancelledAt)
	}
	if v.EInvoice, err = receiptEInvoiceOf(inv.EInvoice); err != nil {
		return err
	}
	if err := receiptTmpl.Execute(&buf, v); err != nil {
		return err
	}
	return c.Blob(http.StatusOK, mimeHTML, buf.Bytes())
}

// receiptError answers err as an HTML page, with the status classify gives
// it; internal errors are logged through handleError's rules.
func (s *Server) receiptError(c echo.Context, err error) error {
	p, internal := classify(err)
	if internal {
		return err // JSON 500, logged
	}
	title := "Receipt not found"
	msg := "There is no receipt at this address."
	if p.status != http.StatusNotFound {
		title, msg = "Receipt unavailable", p.message
	}
	switch p.status {
	case http.StatusServiceUnavailable:
		c.Response().Header().Set("Retry-After", retryAfterSeconds)
	case http.StatusTooManyRequests:
		c.Response().Header().Set("Retry-After", retryAfterTooManySeconds)
	}
	var buf bytes.Buffer
	if err := receiptErrorTmpl.Execute(&buf, struct{ Title, Message string }{title, msg}); err != nil {
		return err
	}
	return c.Blob(p.status, mimeHTML, buf.Bytes())
}
