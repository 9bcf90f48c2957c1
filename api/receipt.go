package api

import (
	"bytes"
	"errors"
	"html/template"
	"net/http"
	"time"

	"github.com/invoiced/invoiced/document"
	"github.com/invoiced/invoiced/gst"
	"github.com/invoiced/invoiced/internal/inwords"
	"github.com/invoiced/invoiced/invoice"
	"github.com/invoiced/invoiced/series"
	"github.com/labstack/echo/v4"
	"github.com/shopspring/decimal"
)

const mimeHTML = "text/html; charset=utf-8"

// The printable receipt page, GET /r/{public_id}: no key needed, the
// unguessable public id is the capability. Free text is refused on input
// when it holds bidi controls (internal/freetext); each piece is also set
// in its own <bdi>, so that text stored before that rule cannot reorder
// what follows it on the page.

var receiptTmpl = template.Must(template.New("receipt").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex">
<title>{{if .Cancelled}}CANCELLED {{end}}{{.Title}} {{.Inv.Number}}</title>
<style>
*{box-sizing:border-box}
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans",sans-serif;max-width:48em;margin:1em auto;padding:0 1em;color:#111;line-height:1.35}
h1{font-size:1.4em;margin:.2em 0 .6em;letter-spacing:.02em}
.parties{display:flex;flex-wrap:wrap;gap:1em;justify-content:space-between}
.parties>div{flex:1 1 16em}
.label{color:#555;font-size:.85em;text-transform:uppercase;letter-spacing:.05em}
table{border-collapse:collapse;width:100%;margin:.6em 0}
th,td{padding:.3em .4em;border-bottom:1px solid #ccc;text-align:left;vertical-align:top}
th{font-size:.85em;color:#333;border-bottom:2px solid #333}
td.n,th.n{text-align:right;white-space:nowrap}
.totals{width:auto;margin-left:auto;min-width:18em}
.tot td{font-weight:bold;border-top:2px solid #333;border-bottom:none}
.words{font-style:italic}
.signatory{margin:1.5em 0 0 auto;width:16em;text-align:center}
.signatory .sign{display:block;height:3em;border-bottom:1px solid #333;margin-bottom:.2em}
.cancelled{border:4px double #b00;color:#b00;font-weight:bold;padding:.5em;text-align:center;font-size:1.6em;letter-spacing:.1em;margin:.5em 0}
.cancelled small{display:block;font-size:.55em;letter-spacing:0;font-weight:normal}
.meta{width:auto}.meta td{border:none;padding:.1em 1.5em .1em 0}
.paper{margin-top:1em;font-size:.85em}
.paper a{color:#036}
footer{margin-top:1.5em;color:#555;font-size:.8em}
.sub{display:none;color:#444;font-size:.85em}
{{if .Thermal}}
@page{size:80mm 297mm;margin:3mm}
{{else}}
@page{size:A4;margin:12mm}
{{end}}
@media print{
  body{margin:0;padding:0;max-width:none;font-size:10pt}
  .paper{display:none}
  .cancelled{-webkit-print-color-adjust:exact;print-color-adjust:exact}
  tr{break-inside:avoid}
}
{{if .Thermal}}
body{max-width:76mm;font-size:9pt;padding:0 1mm}
h1{font-size:1.2em;text-align:center}
.parties{display:block}
.hsn,.rate{display:none}
.sub{display:inline}
th,td{padding:.15em .2em}
.totals{width:100%;min-width:0}
.signatory{width:auto}
{{end}}
</style>
</head>
<body>
{{if .Cancelled}}<div class="cancelled" role="alert">CANCELLED<small>{{with .CancelledAt}}on {{.}}{{end}}{{with .Inv.CancelReason}}: <bdi>{{.}}</bdi>{{end}} — this document is void</small></div>{{end}}
<h1>{{.Title}}</h1>
<div class="parties">
<div><span class="label">From</span><br><strong><bdi>{{.Seller.Name}}</bdi></strong>{{with .Seller.Address}}<br><bdi>{{.}}</bdi>{{end}}<br>State: {{.SellerState}}<br>GSTIN {{.Seller.GSTIN}}{{with .Seller.Phone}}<br>Phone {{.}}{{end}}{{with .Seller.Email}}<br>{{.}}{{end}}</div>
{{with .Inv.Buyer}}<div><span class="label">Bill to</span><br><strong><bdi>{{.Name}}</bdi></strong>{{with .GSTIN}}<br>GSTIN {{.}}{{end}}</div>{{end}}
</div>
<table class="meta">
<tr><td>Number</td><td><strong>{{.Inv.Number}}</strong></td></tr>
<tr><td>Date</td><td>{{.InvoiceDate}}</td></tr>
<tr><td>Place of supply</td><td>{{.PlaceOfSupply}}</td></tr>
<tr><td>Tax payable on reverse charge</td><td>{{if .ReverseCharge}}Yes{{else}}No{{end}}</td></tr>
{{with .Inv.Original}}<tr><td>Against</td><td>{{.Number}} dated {{.InvoiceDate}}{{if .External}} (issued outside invoiced: <bdi>{{.Reason}}</bdi>){{end}}</td></tr>{{end}}
</table>
<table>
<thead><tr><th>Item</th><th class="hsn">HSN</th><th class="n">Qty</th><th class="n">Price</th><th class="n">Taxable</th>{{if .InterState}}<th class="n rate">IGST %</th><th class="n">IGST ₹</th>{{else}}<th class="n rate">CGST %</th><th class="n">CGST ₹</th><th class="n rate">SGST %</th><th class="n">SGST ₹</th>{{end}}<th class="n">Total</th></tr></thead>
<tbody>
{{range .Lines}}<tr><td><bdi>{{.Description}}</bdi><span class="sub"><br>HSN {{.HSN}} · {{if $.InterState}}IGST {{.IGSTRate}}%{{else}}CGST {{.CGSTRate}}% · SGST {{.SGSTRate}}%{{end}}</span></td><td class="hsn">{{.HSN}}</td><td class="n">{{.Quantity}}</td><td class="n">{{.UnitPrice}}</td><td class="n">{{.Taxable}}</td>{{if $.InterState}}<td class="n rate">{{.IGSTRate}}</td><td class="n">{{.IGST}}</td>{{else}}<td class="n rate">{{.CGSTRate}}</td><td class="n">{{.CGST}}</td><td class="n rate">{{.SGSTRate}}</td><td class="n">{{.SGST}}</td>{{end}}<td class="n">{{.Total}}</td></tr>
{{end}}</tbody>
</table>
<table class="totals">
<tr><td>Taxable value</td><td class="n">₹ {{.Inv.Totals.Taxable}}</td></tr>
{{if .InterState}}<tr><td>IGST</td><td class="n">₹ {{.Inv.Totals.IGST}}</td></tr>{{else}}<tr><td>CGST</td><td class="n">₹ {{.Inv.Totals.CGST}}</td></tr>
<tr><td>SGST</td><td class="n">₹ {{.Inv.Totals.SGST}}</td></tr>{{end}}
<tr class="tot"><td>Total</td><td class="n">₹ {{.Inv.Totals.Total}}</td></tr>
</table>
<p class="words">{{.InWords}}</p>
<div class="signatory">For <bdi>{{.Seller.Name}}</bdi><span class="sign"></span>Authorised signatory</div>
<footer>Issued {{.IssuedAt}}</footer>
<nav class="paper">Print on: <a href="?paper=a4">A4</a> · <a href="?paper=80mm">80 mm roll</a></nav>
</body>
</html>
`))

var receiptErrorTmpl = template.Must(template.New("receipt-error").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="robots" content="noindex"><title>{{.Title}}</title></head>
<body><h1>{{.Title}}</h1><p>{{.Message}}</p></body></html>
`))

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
	InterState    bool   // IGST rather than CGST + SGST
	InWords       string // the total
	Cancelled     bool
	CancelledAt   string // IST, as IssuedAt; "" unless cancelled
	Thermal       bool   // laid out for 80 mm roll paper
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
	seller, err := series.SellerByID(ctx, s.pool, inv.SellerID)
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
	if inv.CancelledAt != nil {
		v.CancelledAt = istTime(*inv.CancelledAt)
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
